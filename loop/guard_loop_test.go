package loop

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
)

// restoreRun does what `implloop restore --run run [--task task]` does:
// every Lost entry of the run's journaled verdicts, written back.
func restoreRun(t *testing.T, repo, run, task string) []string {
	t.Helper()
	lost, err := lostContent(openJournal(t, repo), run, task, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, l := range lost {
		paths = append(paths, l.Path)
	}
	if len(lost) == 0 {
		t.Fatalf("run %s (task %q) lost nothing: nothing to restore", run, task)
	}
	if res, err := boundary.Restore(context.Background(), repo, lost, false); err != nil {
		t.Fatalf("restore: %v %+v", err, res)
	}
	slices.Sort(paths)
	return paths
}

// gitAgent is the identity the fake agents commit with.
const gitAgent = `git -c user.name=agent -c user.email=agent@example.com`

// TestGuardResetHardThroughRun: task 1 commits a new file and sweeps the
// user's uncommitted edit into the commit; task 2 rewinds HEAD with
// reset --hard. The committed work is in no branch any more: task 2
// blocks, the run's boundaries keep the dropped commit, and restore brings both files back
// byte for byte.
func TestGuardResetHardThroughRun(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	writeFile(t, filepath.Join(repo, "README"), "the user's edit\n")
	agentPath, _ := fakeAgent(t, `
case "$IMPLLOOP_TASK_ID" in
1) echo keep > keep.txt; git add -A; `+gitAgent+` commit -qm x ;;
2) git reset -q --hard HEAD~1 ;;
esac`)
	out, err := Run(context.Background(), Options{Settings: settingsFor(agentPath), RepoRoot: repo})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	if out.Verdict == "DONE" || !out.Blocked {
		t.Fatalf("verdict %s blocked %v, want a block", out.Verdict, out.Blocked)
	}
	j := openJournal(t, repo)
	rows := taskRows(t, j, out.RunID)
	if rows["1"].Status != cache.TaskDone || rows["2"].Status != cache.TaskBlocked {
		t.Errorf("statuses %s %s, want done blocked", rows["1"].Status, rows["2"].Status)
	}
	if got := strings.Join(rows["2"].LostPaths, ","); got != "README,keep.txt" {
		t.Errorf("lost %q, want README,keep.txt", got)
	}
	md := readFile(t, filepath.Join(repo, BlockedFile))
	if !strings.Contains(md, "implloop restore --run "+out.RunID+" --task 2") || !strings.Contains(md, "`keep.txt`") {
		t.Errorf("BLOCKED.md:\n%s", md)
	}
	// The run's boundary chain holds the dropped commit: the boundary
	// before task 2 has it as a parent.
	bs, err := j.Boundaries(out.RunID)
	if err != nil || len(bs) != 3 {
		t.Fatalf("boundaries %+v %v", bs, err)
	}
	dropped := bs[1].Head
	if got := git(t, repo, "rev-parse", "refs/implloop/runs/"+out.RunID+"^1^2"); got != dropped {
		t.Errorf("the boundary before task 2 has parents ending in %s, want the dropped commit %s", got, dropped)
	}
	git(t, repo, "reflog", "expire", "--expire=now", "--all")
	git(t, repo, "gc", "-q", "--prune=now")
	if got := restoreRun(t, repo, out.RunID, "2"); strings.Join(got, ",") != "README,keep.txt" {
		t.Errorf("restored %v", got)
	}
	if got := readFile(t, filepath.Join(repo, "keep.txt")); got != "keep\n" {
		t.Errorf("keep.txt %q", got)
	}
	if got := readFile(t, filepath.Join(repo, "README")); got != "the user's edit\n" {
		t.Errorf("README %q", got)
	}
}

// lostContent reads what a run lost from its journaled verdicts: per
// task, per path, and a path asked for that was not lost is an error
// that names it.
func TestLostContent(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2), "a.txt": "a\n", "b.txt": "b\n"})
	writeFile(t, filepath.Join(repo, "a.txt"), "the user's a\n")
	writeFile(t, filepath.Join(repo, "b.txt"), "the user's b\n")
	agentPath, _ := fakeAgent(t, `[ "$IMPLLOOP_TASK_ID" = 2 ] && git checkout -q -- a.txt b.txt; true`)
	out, err := Run(context.Background(), Options{Settings: settingsFor(agentPath), RepoRoot: repo})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	j := openJournal(t, repo)
	paths := func(lost []boundary.LostContent) string {
		var ps []string
		for _, l := range lost {
			ps = append(ps, l.Path)
		}
		slices.Sort(ps)
		return strings.Join(ps, ",")
	}
	for _, tt := range []struct {
		task  string
		paths []string
		want  string
	}{
		{want: "a.txt,b.txt"},
		{task: "2", want: "a.txt,b.txt"},
		{task: "1", want: ""},
		{paths: []string{"b.txt"}, want: "b.txt"},
	} {
		lost, err := lostContent(j, out.RunID, tt.task, tt.paths)
		if err != nil || paths(lost) != tt.want {
			t.Errorf("task %q paths %q: lost %q, %v; want %q", tt.task, tt.paths, paths(lost), err, tt.want)
		}
	}
	var notLost *NotLostError
	if _, err := lostContent(j, out.RunID, "1", []string{"a.txt"}); !errors.As(err, &notLost) || notLost.Path != "a.txt" {
		t.Errorf("a path task 1 did not lose: %v, want a *NotLostError for a.txt", err)
	}
}

// TestGuardCommittedRenameThroughRun: a file left uncommitted by task 1
// and renamed and committed by task 2 is moved, not lost.
func TestGuardCommittedRenameThroughRun(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, _ := fakeAgent(t, `
case "$IMPLLOOP_TASK_ID" in
1) echo keep > keep.txt ;;
2) mv keep.txt kept.txt; git add -A; `+gitAgent+` commit -qm mv ;;
esac`)
	out := runIn(t, repo, settingsFor(agentPath))
	if out.Verdict != "DONE" || out.Blocked {
		t.Fatalf("verdict %s blocked %v, want DONE", out.Verdict, out.Blocked)
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	if !slices.ContainsFunc(rows["2"].Concerns, func(c string) bool { return strings.Contains(c, "keep.txt moved to kept.txt") }) {
		t.Errorf("task 2 concerns %q", rows["2"].Concerns)
	}
}

// discardingAgent: task 1 writes out1.txt (left uncommitted); task 2's
// first call deletes it and hangs, its later calls write out2.txt.
func discardingAgent(t *testing.T) (string, string) {
	return fakeAgent(t, `
echo "$IMPLLOOP_TASK_ID" >> "$LOG/calls"
case "$IMPLLOOP_TASK_ID" in
1) echo one > out1.txt ;;
2) if [ -e "$LOG/marker" ]; then echo two > out2.txt; exit 0; fi
   rm -f out1.txt
   echo $$ > "$LOG/agent.pid"
   touch "$LOG/marker"
   exec sleep 300 ;;
esac`)
}

// TestGuardOnInterrupt: Ctrl-C while task 2's agent runs, after it threw
// away task 1's uncommitted file. The guard runs at the interrupt: task 2
// stays interrupted (exit 130) with the lost path on its row, BLOCKED.md
// names it and the restore command, and after the restore a resume ends
// DONE with the file there.
func TestGuardOnInterrupt(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, logDir := discardingAgent(t)
	child, output, _ := startAgentChild(t, Options{Settings: settingsFor(agentPath), RepoRoot: repo}, logDir)
	if err := child.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := child.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("child: %v, want exit 130\n%s", err, output)
	}
	checkJournal(t, repo)
	var o Outcome
	if err := json.Unmarshal([]byte(strings.TrimSpace(output.String())), &o); err != nil {
		t.Fatalf("outcome: %v\n%s", err, output)
	}
	if !o.Interrupted || !o.Blocked {
		t.Errorf("interrupted %v blocked %v, want both", o.Interrupted, o.Blocked)
	}
	j := openJournal(t, repo)
	rows := taskRows(t, j, o.RunID)
	if rows["2"].Status != cache.TaskInterrupted || strings.Join(rows["2"].LostPaths, ",") != "out1.txt" {
		t.Errorf("task 2: %s lost %q, want interrupted, out1.txt", rows["2"].Status, rows["2"].LostPaths)
	}
	md := readFile(t, filepath.Join(repo, BlockedFile))
	if !strings.Contains(md, "`out1.txt`") || !strings.Contains(md, "implloop restore --run "+o.RunID+" --task 2") ||
		!strings.Contains(md, "interrupted") {
		t.Errorf("BLOCKED.md:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(repo, "out1.txt")); err == nil {
		t.Fatal("out1.txt exists before the restore")
	}
	restoreRun(t, repo, o.RunID, "2")
	if got := readFile(t, filepath.Join(repo, "out1.txt")); got != "one\n" {
		t.Errorf("out1.txt %q", got)
	}
	resumeDone(t, repo, agentPath, o.RunID, "resume")
}

// resumeDone removes BLOCKED.md and resumes parent, which must end DONE;
// what names the resume in the failure.
func resumeDone(t *testing.T, repo, agentPath, parent, what string) {
	t.Helper()
	os.Remove(filepath.Join(repo, BlockedFile))
	out, err := Run(context.Background(), Options{Settings: settingsFor(agentPath), RepoRoot: repo, Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	if out.Verdict != "DONE" || out.Blocked {
		t.Errorf("%s: %s blocked %v, want DONE", what, out.Verdict, out.Blocked)
	}
}

// TestGuardAfterKill9: implloop is SIGKILLed while task 2's agent runs,
// after it threw away task 1's uncommitted file. No code ran to guard the
// task, so the resume's first comparison does: it blocks before any agent
// call, journals the loss on its own first boundary (restore --run finds
// it), and the resume after the repair ends DONE.
func TestGuardAfterKill9(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, logDir := discardingAgent(t)
	child, output, agentPID := startAgentChild(t, Options{Settings: settingsFor(agentPath), RepoRoot: repo}, logDir)
	kill9(t, child, agentPID)
	checkJournal(t, repo)
	j := openJournal(t, repo)
	runs, err := j.ListRuns()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v\n%s", runs, err, output)
	}
	parent := runs[0].ID

	calls := readFile(t, filepath.Join(logDir, "calls"))
	out, err := Run(context.Background(), Options{Settings: settingsFor(agentPath), RepoRoot: repo, Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	if out.Verdict != "BLOCKED" || !out.Blocked || out.NoOp {
		t.Errorf("resume: verdict %s blocked %v noop %v, want BLOCKED", out.Verdict, out.Blocked, out.NoOp)
	}
	if got := readFile(t, filepath.Join(logDir, "calls")); got != calls {
		t.Errorf("the blocked resume called the agent: %q -> %q", calls, got)
	}
	md := readFile(t, filepath.Join(repo, BlockedFile))
	if !strings.Contains(md, "`out1.txt`") || !strings.Contains(md, "implloop restore --run "+out.RunID+"`") ||
		!strings.Contains(md, parent) {
		t.Errorf("BLOCKED.md:\n%s", md)
	}
	if got := restoreRun(t, repo, out.RunID, ""); strings.Join(got, ",") != "out1.txt" {
		t.Errorf("restored %v", got)
	}
	if got := readFile(t, filepath.Join(repo, "out1.txt")); got != "one\n" {
		t.Errorf("out1.txt %q", got)
	}
	resumeDone(t, repo, agentPath, out.RunID, "second resume")
	if got := readFile(t, filepath.Join(repo, "out1.txt")); got != "one\n" {
		t.Errorf("out1.txt after the second resume %q", got)
	}
}

// TestResumeAfterFinishedRunDiscardIsInformation: when the parent finished
// normally, a file removed between the runs is the user's business.
func TestResumeAfterFinishedRunDiscardIsInformation(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, _ := fakeAgent(t, `echo x > "out-$IMPLLOOP_TASK_ID.txt"`)
	first := runIn(t, repo, settingsFor(agentPath))
	os.Remove(filepath.Join(repo, "out-1.txt"))
	out, err := Run(context.Background(), Options{Settings: settingsFor(agentPath), RepoRoot: repo, Parent: first.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if out.Blocked || out.Verdict != "DONE" {
		t.Errorf("resume: %s blocked %v, want DONE, not blocked", out.Verdict, out.Blocked)
	}
}
