package fakeopenai

import (
	"testing"

	"github.com/implloop/implloop/internal/scripted"
)

// Model is the model the e2e tests ask codex for: one in codex 0.169's
// bundled model list, so that it does not warn about missing model
// metadata and offers its usual tools (exec_command, apply_patch).
const Model = "gpt-5.5"

// CLI returns the path of the real codex command, installing the pinned
// version with scripts/install-codex.sh when it is not there yet (the
// script is idempotent and prints the path). IMPLLOOP_E2E_CODEX, when set,
// names a binary to use instead. It fails the test when there is none.
func CLI(t testing.TB) string {
	t.Helper()
	p, err := scripted.InstalledCLI("install-codex.sh", "IMPLLOOP_E2E_CODEX")
	if err != nil {
		t.Fatalf("fakeopenai: the Codex CLI: %v", err)
	}
	return p
}
