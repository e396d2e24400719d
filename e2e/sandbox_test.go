//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/fakeclaude"
	"github.com/implloop/implloop/internal/fakeopenai"
)

// TestRunPlanClaudeSandboxed is TestRunPlanClaude with --sandbox: the real
// Claude Code CLI runs each task inside bubblewrap, reaches the scripted
// API server on loopback (the network stays on), keeps its state in
// ~/.claude, and writes the task's files with its own Write tool. The
// report says every call ran sandboxed.
func TestRunPlanClaudeSandboxed(t *testing.T) {
	implloop := buildImplloop(t)
	bin := fakeclaude.CLI(t)
	repo := newPlanRepo(t, e2ePlan)
	home := t.TempDir()
	rec, h := newRecorder(fakeclaude.WriteTask)
	srv := fakeclaude.New(t, h)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := groupCommand(ctx, implloop, "run", "plan.md", "--agent", "claude", "--model", fakeclaude.Model, "--sandbox")
	cmd.Dir, cmd.Env = repo, runEnv(srv.Environ(home), onPath(t, "claude", bin))
	stdout, stderr := runLogged(t, cmd, "", srv.Summary)
	if !strings.Contains(string(stdout), "DONE 3/3") || !strings.Contains(string(stderr), "runs sandboxed (bubblewrap)") {
		t.Errorf("the output does not say DONE 3/3, sandboxed")
	}
	checkWrites(t, rec.all(), map[string]string{
		filepath.Join(repo, "out", "f1.txt"): "hello\n",
		filepath.Join(repo, "out", "f2.txt"): "second file\nline two\n",
		filepath.Join(repo, "README.md"):     "# demo, updated by task 3\n",
	})
	if n := len(sessionsInOrder(srv.Calls())); n != 3 {
		t.Errorf("Claude Code ran %d sessions, want 3", n)
	}
	_, raw := readReport(t, repo)
	var rep struct {
		Sandbox string `json:"sandbox"`
		Tasks   []struct {
			Sandboxed bool `json:"sandboxed"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Sandbox != "bubblewrap" || len(rep.Tasks) != 3 || !rep.Tasks[0].Sandboxed || !rep.Tasks[2].Sandboxed {
		t.Errorf("report.json does not say the calls ran sandboxed:\n%s", raw)
	}
	// Claude Code kept its state where it may.
	if entries, err := os.ReadDir(filepath.Join(home, ".claude")); err != nil || len(entries) == 0 {
		t.Errorf("~/.claude: %v, %d entries", err, len(entries))
	}
}

// TestRunPlanCodexSandboxed is TestRunPlanCodex with --sandbox: the real
// codex CLI, whose own sandbox (workspace-write, bubblewrap nested in
// implloop's) runs its shell commands; its files are written, its state
// kept in ~/.codex.
func TestRunPlanCodexSandboxed(t *testing.T) {
	implloop := buildImplloop(t)
	bin := fakeopenai.CLI(t)
	repo := newPlanRepo(t, codexPlan)
	home := homeOutsideTmp(t)
	srv := fakeopenai.New(t, fakeopenai.WriteTask)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := groupCommand(ctx, implloop, "run", "plan.md", "--agent", "codex", "--model", fakeopenai.Model, "--sandbox")
	cmd.Dir, cmd.Env = repo, runEnv(srv.Environ(home), onPath(t, "codex", bin))
	stdout, _ := runLogged(t, cmd, "", srv.Summary)
	if !strings.Contains(string(stdout), "DONE 2/2") || !strings.Contains(string(stdout), "sandbox: bubblewrap") {
		t.Errorf("the report does not say DONE 2/2, sandboxed")
	}
	checkFiles(t, map[string]string{
		filepath.Join(repo, "out", "f1.txt"): "hello\n",
		filepath.Join(repo, "out", "f2.txt"): "second file\nit's quoted\n",
	})
	if entries, err := os.ReadDir(filepath.Join(home, ".codex")); err != nil || len(entries) == 0 {
		t.Errorf("~/.codex: %v, %d entries", err, len(entries))
	}
}

// homeOutsideTmp is a home directory outside /tmp, as a real one is: codex
// refuses to make the helpers its own sandbox runs under the temporary
// directory, and in implloop's sandbox that is /tmp.
func homeOutsideTmp(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("/var/tmp", "implloop-e2e-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	return home
}
