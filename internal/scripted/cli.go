package scripted

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CostEqual reports whether two dollar figures agree to a millionth of a
// cent (sums of floats computed in another order differ in the last bits).
func CostEqual(a, b float64) bool { return math.Abs(a-b) < 1e-8 }

// InstalledCLI returns the path of a real CLI that an install script under
// scripts/ puts in place (the script is idempotent and prints the path on
// its last line of stdout). When the environment variable override is
// set, it names a binary to use instead.
func InstalledCLI(script, override string) (string, error) {
	if p := os.Getenv(override); p != "" {
		return exec.LookPath(p)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", script))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/%s: %w\n%s", script, err, errb.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	p := strings.TrimSpace(lines[len(lines)-1])
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return "", fmt.Errorf("scripts/%s printed %q, not a binary", script, p)
	}
	return p, nil
}

// ModuleRoot is the directory of the go.mod above the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
