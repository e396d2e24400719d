package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKill9DuringBoundaries kills implloop with SIGKILL again and again at
// moments spread over a run whose tasks are quick, so that most kills land
// in a boundary (git add into the private index, write-tree, commit-tree,
// the ref update, the journal row). After every kill: git fsck finds the
// repository sound, every run's ref names a commit, and the journal's
// invariants hold. Then resumes finish the run DONE with every task's file
// in place and nothing blocked.
func TestKill9DuringBoundaries(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a dozen runs")
	}
	const n = 24
	repo := newRepo(t, map[string]string{"plan.md": fileTaskPlan(n)})
	agentPath, _ := fakeAgent(t, fileTaskAgent)
	s := settingsFor(agentPath)
	parent := ""
	for k := 0; k < 10; k++ {
		child, output := startChild(t, Options{Settings: s, RepoRoot: repo, Parent: parent})
		time.Sleep(time.Duration(40+k*53) * time.Millisecond)
		_ = child.Process.Signal(syscall.SIGKILL)
		_ = child.Wait()
		if out := output.String(); strings.Contains(out, "child:") {
			t.Fatalf("kill %d: the run failed before it was killed:\n%s", k, out)
		}
		git(t, repo, "fsck", "--no-dangling", "--strict")
		for _, ref := range strings.Fields(git(t, repo, "for-each-ref", "--format=%(refname)", "refs/implloop/")) {
			git(t, repo, "rev-parse", "--verify", ref+"^{commit}")
		}
		checkJournal(t, repo)
		j := openJournal(t, repo)
		runs, err := j.ListRuns()
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 0 {
			parent = runs[0].ID
		}
		if _, err := os.Stat(filepath.Join(repo, BlockedFile)); err == nil {
			t.Fatalf("kill %d: BLOCKED.md:\n%s", k, readFile(t, filepath.Join(repo, BlockedFile)))
		}
	}
	for tries := 0; ; tries++ {
		out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: parent})
		if err != nil {
			t.Fatal(err)
		}
		checkJournal(t, repo)
		if out.Verdict == "DONE" {
			break
		}
		if tries > 2 {
			t.Fatalf("resume after the kills: %s", out.Verdict)
		}
		parent = out.RunID
	}
	for i := 1; i <= n; i++ {
		if got := readFile(t, filepath.Join(repo, "out", fmt.Sprintf("f%d.txt", i))); got != fmt.Sprintf("task %d\n", i) {
			t.Errorf("out/f%d.txt = %q", i, got)
		}
	}
}
