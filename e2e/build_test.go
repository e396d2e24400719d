//go:build e2e || browser

package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/implloop/implloop/internal/scripted"
)

// buildImplloop builds ./cmd/implloop into a temp dir, for the tests that
// run the real binary (make e2e and make browser).
func buildImplloop(t *testing.T) string {
	t.Helper()
	root, err := scripted.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "implloop")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/implloop")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/implloop: %v\n%s", err, out)
	}
	return bin
}
