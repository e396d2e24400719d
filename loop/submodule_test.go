package loop

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/guard"
	"github.com/implloop/implloop/internal/gittest"
)

// newSubmoduleRepo is a repository with plan.md (n plain tasks) and a
// submodule at sub (lib.txt, one commit), all committed.
func newSubmoduleRepo(t *testing.T, n int) string {
	t.Helper()
	lib := gittest.New(t)
	lib.Write("lib.txt", "lib v1\n")
	lib.Git("add", "-A")
	lib.Git("commit", "-q", "-m", "lib")
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(n)})
	git(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib.Dir, "sub")
	git(t, repo, "commit", "-q", "-m", "add sub")
	return repo
}

// concernsOf is every concern journaled on run's tasks, one per line.
func concernsOf(t *testing.T, repo, run string) string {
	t.Helper()
	var all []string
	for _, r := range taskRows(t, openJournal(t, repo), run) {
		all = append(all, r.Concerns...)
	}
	return strings.Join(all, "\n")
}

// TestSubmoduleDiscardBlocks: task 1 leaves uncommitted work inside a
// submodule (an edit, a new file); task 2 throws it away with git -C sub
// reset --hard and clean -fdx. The outer tree records only the
// submodule's commit, which did not change; the submodule's own
// boundaries (committed in it) keep the work, so task 2 blocks,
// BLOCKED.md names the submodule, and restore writes the work back.
func TestSubmoduleDiscardBlocks(t *testing.T) {
	t.Parallel()
	repo := newSubmoduleRepo(t, 2)
	agentPath, _ := fakeAgent(t, `
case "$IMPLLOOP_TASK_ID" in
1) echo work > sub/lib.txt; echo new > sub/new.txt ;;
2) git -C sub reset -q --hard && git -C sub clean -fdxq ;;
esac`)
	out := runIn(t, repo, settingsFor(agentPath))
	if !out.Blocked {
		t.Fatalf("verdict %s: task 2 discarded the submodule's work, want a block", out.Verdict)
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	if got := strings.Join(rows["2"].LostPaths, " "); got != "sub/lib.txt sub/new.txt" {
		t.Errorf("task 2 lost %q, want sub/lib.txt sub/new.txt", got)
	}
	if c := strings.Join(rows["1"].Concerns, "\n"); strings.Contains(c, "sub") {
		t.Errorf("task 1 concerns %q: its work in the submodule is new, nothing was lost", c)
	}
	blocked := readFile(t, filepath.Join(repo, BlockedFile))
	if !strings.Contains(blocked, "- `sub/new.txt` (uncommitted work in the submodule `sub`") {
		t.Errorf("BLOCKED.md does not name the submodule:\n%s", blocked)
	}
	lost, err := lostContent(openJournal(t, repo), out.RunID, "2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := boundary.Restore(context.Background(), repo, lost, false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(repo, "sub", "lib.txt")); got != "work\n" {
		t.Errorf("sub/lib.txt restored as %q", got)
	}
	if got := readFile(t, filepath.Join(repo, "sub", "new.txt")); got != "new\n" {
		t.Errorf("sub/new.txt restored as %q", got)
	}
}

// TestSubmoduleCommitIsNoConcern: the ordinary things done to a dirty
// submodule raise nothing: a task that commits the work in it, and the
// user committing in it between runs.
func TestSubmoduleCommitIsNoConcern(t *testing.T) {
	t.Parallel()
	repo := newSubmoduleRepo(t, 3)
	agentPath, _ := fakeAgent(t, `
case "$IMPLLOOP_TASK_ID" in
1) echo work > sub/lib.txt; echo new > sub/new.txt ;;
2) git -C sub add -A && `+gitAgent+` -C sub commit -qm "task 2"; echo more > sub/more.txt ;;
3) echo three > three.txt ;;
esac`)
	s := settingsFor(agentPath)
	s.TaskRange = "1:2"
	out := runIn(t, repo, s)
	if out.Verdict != "DONE" {
		t.Fatalf("run: %s", out.Verdict)
	}
	if c := concernsOf(t, repo, out.RunID); strings.Contains(c, "sub") {
		t.Errorf("concerns after committing in the submodule:\n%s", c)
	}
	// The user commits the rest between the runs.
	git(t, filepath.Join(repo, "sub"), "add", "-A")
	git(t, filepath.Join(repo, "sub"), "commit", "-q", "-m", "the user's")
	s.TaskRange = ""
	res, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: out.RunID})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	if res.Verdict != "DONE" {
		t.Fatalf("resume: %s", res.Verdict)
	}
	if c := concernsOf(t, repo, res.RunID); strings.Contains(c, "sub") {
		t.Errorf("concerns after the user committed in the submodule:\n%s", c)
	}
}

// TestSubmoduleCommitLostRestore: task 1 commits in the submodule (its
// commit is the outer tree's uncommitted work); task 2 checks the old
// commit out again. That blocks, and restore, which does not check out
// submodules, says which commit to check out where.
func TestSubmoduleCommitLostRestore(t *testing.T) {
	t.Parallel()
	repo := newSubmoduleRepo(t, 2)
	agentPath, _ := fakeAgent(t, `
case "$IMPLLOOP_TASK_ID" in
1) echo v2 > sub/lib.txt; `+gitAgent+` -C sub commit -qam v2; git -C sub rev-parse HEAD > "$LOG/v2" ;;
2) git -C sub checkout -q HEAD~1 ;;
esac`)
	out := runIn(t, repo, settingsFor(agentPath))
	if !out.Blocked {
		t.Fatalf("verdict %s: task 2 undid task 1's submodule commit, want a block", out.Verdict)
	}
	bs, err := openJournal(t, repo).Boundaries(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var lost []boundary.LostContent
	for _, b := range bs {
		var v guard.Verdict
		if json.Unmarshal(b.Verdict, &v) == nil {
			lost = append(lost, v.Lost...)
		}
	}
	if len(lost) != 1 || lost[0].Path != "sub" {
		t.Fatalf("lost %+v, want sub", lost)
	}
	res, err := boundary.Restore(context.Background(), repo, lost, false)
	if err == nil || len(res) != 1 {
		t.Fatalf("restore: %+v %v, want it to say what to do", res, err)
	}
	v2 := lost[0].Lost.Hash
	if want := "git -C sub checkout " + v2; res[0].Action != boundary.RestoreFailed || !strings.Contains(res[0].Reason, want) {
		t.Errorf("restore of sub: %s %q, want the command %q", res[0].Action, res[0].Reason, want)
	}
	// Done by hand, the restore finds it in place.
	git(t, filepath.Join(repo, "sub"), "checkout", "-q", v2)
	res, err = boundary.Restore(context.Background(), repo, lost, false)
	if err != nil || res[0].Action != boundary.RestoreUnchanged {
		t.Errorf("restore after the checkout: %+v %v, want unchanged", res, err)
	}
}
