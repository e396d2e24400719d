package loop

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/sandbox"
)

// --sandbox-allow paths: "~/" from home, relative ones from the
// repository root, resolved; a missing path, or one inside implloop's
// state, is refused as a setting.
func TestSandboxAllow(t *testing.T) {
	t.Parallel()
	root, home := resolvedDir(t), resolvedDir(t)
	for _, d := range []string{filepath.Join(root, "fixtures"), filepath.Join(home, ".gradle"), filepath.Join(root, ".git", "implloop", "runs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dirs := cache.Dirs{Root: root, State: filepath.Join(root, ".git", "implloop"), Lock: filepath.Join(root, ".git", "implloop")}
	got, err := sandboxAllow([]string{"fixtures", "~/.gradle", home}, root, home, dirs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(root, "fixtures"), filepath.Join(home, ".gradle"), home}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"missing", ".git/implloop/runs", ".git/implloop"} {
		var se *SettingError
		if _, err := sandboxAllow([]string{bad}, root, home, dirs); !errors.As(err, &se) || se.Flag != "sandbox-allow" || se.Hint == "" {
			t.Errorf("%s: %v, want a --sandbox-allow SettingError", bad, err)
		}
	}
}

func resolvedDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// requireSandbox fails the test where bubblewrap is not installed (make
// test installs it) and skips it, saying why, where the system does not
// let it make namespaces.
func requireSandbox(t *testing.T) {
	t.Helper()
	s, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatalf("%v (scripts/install-bwrap.sh installs it; make test runs it)", err)
	}
	if err := s.Probe(t.Context()); err != nil {
		t.Skipf("no sandbox on this system (user namespaces off?): %v", err)
	}
}

// Under --jobs, the calls made at once each get their sandbox in their
// own worktree (readied concurrently: the race detector watches), and
// their work merges into the main tree as without one.
func TestParallelSandboxed(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), parPlan("1[P]", "2[P]", "3[P]"))
	agentPath := filepath.Join(t.TempDir(), "agent.sh")
	writeFile(t, agentPath, "#!/bin/sh\ncat >/dev/null\necho \"$IMPLLOOP_TASK_ID\" > \"f$IMPLLOOP_TASK_ID.txt\"\n")
	if err := os.Chmod(agentPath, 0o755); err != nil {
		t.Fatal(err)
	}
	s := settingsFor(agentPath)
	s.Jobs, s.Sandbox = 3, true
	out := runIn(t, repo, s)
	if out.Verdict != "DONE" || out.Report.Sandbox != "bubblewrap" {
		t.Fatalf("verdict %s, sandbox %q; want DONE in bubblewrap", out.Verdict, out.Report.Sandbox)
	}
	for _, id := range []string{"1", "2", "3"} {
		if got := readFile(t, filepath.Join(repo, "f"+id+".txt")); got != id+"\n" {
			t.Errorf("f%s.txt = %q", id, got)
		}
	}
	for _, tk := range out.Report.Tasks {
		if !tk.Sandboxed {
			t.Errorf("task %s: not sandboxed", tk.ID)
		}
	}
}
