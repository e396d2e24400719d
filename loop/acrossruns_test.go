package loop

import (
	"context"
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
	runThenClean(t, repo, s, logDir)

	// The work list says so beforehand, task by task: the tree is
	// followed through each replay across runs.
	checkPlannedAcross(t, repo, s)

	out := replayedWithoutCalls(t, repo, s, logDir, map[string]string{"1": "step 1", "2": "step 2", "3": "step 3"})
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	for _, id := range []string{"1", "2", "3"} {
		if r := rows[id]; r.Source != "replayed" {
			t.Errorf("task %s: source %q, want replayed (across runs)", id, r.Source)
		}
	}
	checkJournal(t, repo)
}

// TestAcrossRunsPlanStopsAtAGate: a task replayed across runs whose gate
// runs live may leave another tree than the other run's (a gate can
// write), so the plan stops predicting there: the next task is planned
// live, the cautious side (the run may still replay it across runs).
func TestAcrossRunsPlanStopsAtAGate(t *testing.T) {
	plan := "# Plan\n\n### Task 1: One\n\nDo one.\n\n```verify\ntest -f out-1.txt\n```\n\n### Task 2: Two\n\nDo two.\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, _ := fakeAgent(t, `echo "step $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"`)
	s := settingsFor(agentPath)
	if out := runIn(t, repo, s); out.Verdict != "DONE" {
		t.Fatalf("first run: %s", out.Verdict)
	}
	git(t, repo, "clean", "-fdq")
	dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, DryRun: true})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if len(dry.Plan) != 2 || dry.Plan[0].Action != ActionAcross || dry.Plan[1].Action != ActionLive {
		t.Fatalf("plan %+v, want task 1 across (its gate live), task 2 live", dry.Plan)
	}
	if !strings.Contains(strings.Join(dry.Plan[0].Reasons, "; "), "its gate runs live") {
		t.Errorf("task 1's reasons %v do not say its gate runs live", dry.Plan[0].Reasons)
	}
}

// TestAcrossRunsJobs: with --jobs, a plan another run did from the same
// tree replays across runs as a serial run does: the wave's tasks are not
// called ahead, and each replays at its turn. A plan of independent [P]
// tasks, run a second time after its work was cleaned away: zero calls.
func TestAcrossRunsJobs(t *testing.T) {
	plan := "# Plan\n\n- [ ] T001 [P] One\n- [ ] T002 [P] Two\n- [ ] T003 [P] Three\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, logDir := fakeAgent(t, `echo "$IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"; echo call >> "$LOG/calls"`)
	s := settingsFor(agentPath)
	s.Jobs = 3
	runThenClean(t, repo, s, logDir)
	checkPlannedAcross(t, repo, s)
	replayedWithoutCalls(t, repo, s, logDir, map[string]string{"T001": "T001", "T002": "T002", "T003": "T003"})
}

// runThenClean runs the plan to DONE, then cleans its work out of the tree
// and forgets the agent's calls ($LOG/calls), for a second run to replay.
func runThenClean(t *testing.T, repo string, s Settings, logDir string) {
	t.Helper()
	if out := runIn(t, repo, s); out.Verdict != "DONE" {
		t.Fatalf("first run: %s", out.Verdict)
	}
	git(t, repo, "clean", "-fdq")
	if err := os.Remove(filepath.Join(logDir, "calls")); err != nil {
		t.Fatal(err)
	}
}

// checkPlannedAcross requires a dry run to plan every task across runs,
// from a named run.
func checkPlannedAcross(t *testing.T, repo string, s Settings) {
	t.Helper()
	dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, DryRun: true})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	for _, p := range dry.Plan {
		if p.Action != ActionAcross || p.From == "" {
			t.Errorf("dry run: task %s planned %s from %q (%v), want across", p.Task, p.Action, p.From, p.Reasons)
		}
	}
}

// replayedWithoutCalls runs the plan again, requires DONE with no agent
// call and each task's out-ID.txt as want says, and returns the outcome.
func replayedWithoutCalls(t *testing.T, repo string, s Settings, logDir string, want map[string]string) *Outcome {
	t.Helper()
	out := runIn(t, repo, s)
	if out.Verdict != "DONE" {
		t.Fatalf("second run: %s", out.Verdict)
	}
	if _, err := os.Stat(filepath.Join(logDir, "calls")); err == nil {
		t.Errorf("the second run called the agent: %s", readFile(t, filepath.Join(logDir, "calls")))
	}
	for id, content := range want {
		if got := strings.TrimSpace(readFile(t, filepath.Join(repo, "out-"+id+".txt"))); got != content {
			t.Errorf("out-%s.txt = %q after the replay across runs, want %q", id, got, content)
		}
	}
	return out
}
