package loop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAcrossRunsWholePlan: a fresh run of a plan another run already did
// from the same tree (here: the same repository, its work cleaned away
// since) replays every task across runs, not only the first: each
// replayed task's work is in the tree the next task is matched against.
// No agent call, every file back, and gates need not be there to force
// the boundaries.
func TestAcrossRunsWholePlan(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
	agentPath, logDir := fakeAgent(t, `echo "step $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"; echo call >> "$LOG/calls"`)
	s := settingsFor(agentPath)
	if out := runIn(t, repo, s); out.Verdict != "DONE" {
		t.Fatalf("first run: %s", out.Verdict)
	}
	git(t, repo, "clean", "-fdq")
	if err := os.Remove(filepath.Join(logDir, "calls")); err != nil {
		t.Fatal(err)
	}

	out := runIn(t, repo, s)
	if out.Verdict != "DONE" {
		t.Fatalf("second run: %s", out.Verdict)
	}
	if _, err := os.Stat(filepath.Join(logDir, "calls")); err == nil {
		t.Errorf("the second run called the agent: %s", readFile(t, filepath.Join(logDir, "calls")))
	}
	for _, id := range []string{"1", "2", "3"} {
		if got := strings.TrimSpace(readFile(t, filepath.Join(repo, "out-"+id+".txt"))); got != "step "+id {
			t.Errorf("out-%s.txt = %q after the replay across runs", id, got)
		}
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	for _, id := range []string{"1", "2", "3"} {
		if r := rows[id]; r.Source != "replayed" {
			t.Errorf("task %s: source %q, want replayed (across runs)", id, r.Source)
		}
	}
	checkJournal(t, repo)
}
