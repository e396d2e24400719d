package fakeclaude

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Model is the model the e2e tests ask Claude Code for: one whose list
// price Claude Code knows, so the total_cost_usd it prints can be checked
// against PriceSonnet45.
const Model = "claude-sonnet-4-5"

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input, Output, CacheWrite, CacheRead float64
}

// PriceSonnet45 is Claude Sonnet 4.5's list price (cache writes at the
// 5-minute rate), the figures Claude Code 2.1.328 computes total_cost_usd
// from.
var PriceSonnet45 = Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30}

// CostUSD is what u costs at price p.
func (u Usage) CostUSD(p Price) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheCreationInputTokens)*p.CacheWrite + float64(u.CacheReadInputTokens)*p.CacheRead) / 1e6
}

// CostEqual reports whether two dollar figures agree to a millionth of a
// cent (sums of floats computed in another order differ in the last bits).
func CostEqual(a, b float64) bool { return math.Abs(a-b) < 1e-8 }

// CLI returns the path of the real Claude Code binary, installing the
// pinned version with scripts/install-claude.sh when it is not there yet
// (the script is idempotent and prints the path). IMPLLOOP_E2E_CLAUDE,
// when set, names a binary to use instead. It fails the test when there is
// none.
func CLI(t testing.TB) string {
	t.Helper()
	p, err := findCLI()
	if err != nil {
		t.Fatalf("fakeclaude: the Claude Code CLI: %v", err)
	}
	return p
}

func findCLI() (string, error) {
	if p := os.Getenv("IMPLLOOP_E2E_CLAUDE"); p != "" {
		return exec.LookPath(p)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "install-claude.sh"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/install-claude.sh: %w\n%s", err, errb.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	p := strings.TrimSpace(lines[len(lines)-1])
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return "", fmt.Errorf("scripts/install-claude.sh printed %q, not a binary", p)
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
