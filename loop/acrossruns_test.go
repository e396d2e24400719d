package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
)

// TestAcrossRunsWholePlan: a fresh run of a plan another run already did
// from the same tree (here: the same repository, its work cleaned away
// since) replays every task across runs, not only the first: each
// replayed task's work is in the tree the next task is matched against.
// No agent call, every file back, and gates need not be there to force
// the boundaries.
func TestAcrossRunsWholePlan(t *testing.T) {
	t.Parallel()
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

// TestAcrossRunsPlanThroughAGate: a task replayed across runs whose gate
// runs live is taken to leave the tree as it did in the other run (whose
// boundary after the task was taken after it), so the plan goes on predicting after it, as the run then
// replays: the next task is planned across runs too, saying what that
// rests on, and the run replays it, no agent call. Planning it live (as
// the plan did before) said "never ran" of a task another run did and
// this one replays, and made a --jobs wave call it ahead, paying for it.
func TestAcrossRunsPlanThroughAGate(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n### Task 1: One\n\nDo one.\n\n```verify\ntest -f out-1.txt\n```\n\n### Task 2: Two\n\nDo two.\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, logDir := fakeAgent(t, `echo "step $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"; echo call >> "$LOG/calls"`)
	s := settingsFor(agentPath)
	runThenClean(t, repo, s, logDir)
	dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, DryRun: true})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if len(dry.Plan) != 2 || dry.Plan[0].Action != ActionAcross || dry.Plan[1].Action != ActionAcross {
		t.Fatalf("plan %+v, want task 1 across (its gate live), task 2 across", dry.Plan)
	}
	if !strings.Contains(strings.Join(dry.Plan[0].Reasons, "; "), "its gate runs live") {
		t.Errorf("task 1's reasons %v do not say its gate runs live", dry.Plan[0].Reasons)
	}
	if !strings.Contains(strings.Join(dry.Plan[1].Reasons, "; "), "if the gate of task 1 leaves the tree as it did in that run") {
		t.Errorf("task 2's reasons %v do not say what the plan rests on", dry.Plan[1].Reasons)
	}
	replayedWithoutCalls(t, repo, s, logDir, map[string]string{"1": "step 1", "2": "step 2"})
	checkJournal(t, repo)
}

// TestAcrossRunsGateWritesEachTime: a gate that writes something new at
// each run (a timestamp into an unignored file) leaves another tree than
// the other run's, so the tasks planned across runs after it (the plan
// takes the gate to do what it did there) run live at their turn, serial
// or --jobs, and the run still ends DONE with the first task replayed.
func TestAcrossRunsGateWritesEachTime(t *testing.T) {
	t.Parallel()
	for _, jobs := range []int{1, 3} {
		t.Run(fmt.Sprintf("jobs %d", jobs), func(t *testing.T) {
			plan := "# Plan\n\n- [ ] T001 [P] One\n- [ ] T002 [P] Two\n- [ ] T003 [P] Three\n"
			repo := newRepo(t, map[string]string{"plan.md": plan})
			agentPath, logDir := fakeAgent(t, `echo "step $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"; echo call >> "$LOG/calls"`)
			s := settingsFor(agentPath)
			s.Jobs, s.Verify = jobs, "test -f out-$IMPLLOOP_TASK_ID.txt && date +%s%N > stamp-$IMPLLOOP_TASK_ID.txt"
			runThenClean(t, repo, s, logDir)
			checkPlannedAcross(t, repo, s)
			out := runIn(t, repo, s)
			rows := taskRows(t, openJournal(t, repo), out.RunID)
			if out.Verdict != "DONE" || rows["T001"].Source != "replayed" || rows["T002"].Source != "live" || rows["T003"].Source != "live" {
				t.Errorf("run %s, sources %s %s %s: want DONE, T001 replayed across runs, T002 and T003 live",
					out.Verdict, rows["T001"].Source, rows["T002"].Source, rows["T003"].Source)
			}
			checkJournal(t, repo)
		})
	}
}

// TestAcrossRunsJobs: with --jobs, a plan another run did from the same
// tree replays across runs as a serial run does: the wave's tasks are not
// called ahead, and each replays at its turn. A plan of independent [P]
// tasks, run a second time after its work was cleaned away: zero calls.
func TestAcrossRunsJobs(t *testing.T) {
	t.Parallel()
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

// attemptsAgent is an agent whose work is right only at its second
// attempt ("attempt N" into out-ID.txt), with a usage to account; each
// call is logged to $LOG/calls. The gate checkGate fails the first
// attempt, and says why: its feedback makes the second's identity.
const attemptsAgent = `echo "attempt $IMPLLOOP_ATTEMPT" > "out-$IMPLLOOP_TASK_ID.txt"; echo call >> "$LOG/calls"
echo '{"result":"ok","usage":{"input_tokens":100,"output_tokens":10},"total_cost_usd":0.5}'`

// checkGate is the gate of attemptsAgent's task id.
func checkGate(id string) string {
	return "grep -H attempt out-" + id + ".txt && grep -q 'attempt 2' out-" + id + ".txt"
}

// TestAcrossRunsSeveralAttempts: a task another run needed two attempts
// for (its gate failed, the agent fixed it) replays across runs whole:
// both attempts' units, the failed gate carried as journaled, the work
// written from the other run's boundaries, the final gate live. No agent
// call, nothing paid, and the dry run, the report and explain say so.
func TestAcrossRunsSeveralAttempts(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n### Task 1: One\n\nDo one.\n\n### Task 2: Two\n\nDo two.\n\n```verify\n" + checkGate("2") + "\n```\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, logDir := fakeAgent(t, attemptsAgent)
	s := settingsFor(agentPath)
	first := runIn(t, repo, s)
	if first.Verdict != "DONE" {
		t.Fatalf("first run: %s", first.Verdict)
	}
	if n := strings.Count(readFile(t, filepath.Join(logDir, "calls")), "call"); n != 3 {
		t.Fatalf("first run: %d calls, want 3 (task 2 took two attempts)", n)
	}
	git(t, repo, "clean", "-fdq")
	if err := os.Remove(filepath.Join(logDir, "calls")); err != nil {
		t.Fatal(err)
	}

	checkPlannedAcross(t, repo, s)
	dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if why := strings.Join(dry.Plan[1].Reasons, "; "); !strings.Contains(why, "in 2 attempts") || !strings.Contains(why, "its gate runs live") {
		t.Errorf("task 2's reasons %q do not say its 2 attempts replay and its gate runs live", why)
	}

	out := replayedWithoutCalls(t, repo, s, logDir, map[string]string{"1": "attempt 1", "2": "attempt 2"})
	j := openJournal(t, repo)
	row := taskRows(t, j, out.RunID)["2"]
	if row.Source != "replayed" || row.Attempts != 2 {
		t.Errorf("task 2: source %q, %d attempts; want replayed, 2", row.Source, row.Attempts)
	}
	gates, err := j.Gates(out.RunID, "2")
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 2 || gates[0].Passed || !gates[0].Replayed || !gates[1].Passed || gates[1].Replayed {
		t.Errorf("task 2's gates %+v, want attempt 1 failed and carried, attempt 2 passed live", gates)
	}
	tot := out.Report.Totals
	if tot.Live.Units != 0 || tot.Live.TokensIn != 0 || tot.Live.CostUSD != 0 || tot.Saved.Units != 3 || tot.Saved.TokensIn != 300 {
		t.Errorf("totals: live %+v saved %+v; want nothing live, 3 units and 300 tokens in saved", tot.Live, tot.Saved)
	}
	if tot.GatesLive != 1 || tot.GatesReplayed != 1 {
		t.Errorf("gates: %d live, %d replayed; want 1 and 1", tot.GatesLive, tot.GatesReplayed)
	}
	x := explainOf(t, j, out.RunID, "2")
	if len(x.Units) != 2 {
		t.Fatalf("explain: %d units of task 2, want 2", len(x.Units))
	}
	origin, err := j.GetRun(first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if units, err := j.Units(out.RunID); err != nil || !strings.Contains(string(units[len(units)-1].Preimage), `"gate_feedback":"out-2.txt:attempt 1`) {
		t.Errorf("attempt 2 of task 2 was not made from the carried gate's feedback (%v)", err)
	}
	for i, u := range x.Units {
		if !u.AcrossRuns || u.ReplayedOn != origin.Host || !strings.HasPrefix(u.ReplayedFrom, first.RunID+":") || u.Attempt != i+1 {
			t.Errorf("explain: %+v, want attempt %d replayed across runs from %s on %q", u, i+1, first.RunID, origin.Host)
		}
	}
	checkJournal(t, repo)
}

// TestAcrossRunsSeveralAttemptsJobs: the same with --jobs, a wave of [P]
// tasks whose last took two attempts: no task of the wave is called
// ahead, and each replays at its turn, the last one's two attempts too.
func TestAcrossRunsSeveralAttemptsJobs(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n### Task 1: [P] One\n\nDo one.\n\n### Task 2: [P] Two\n\nDo two.\n\n" +
		"### Task 3: [P] Three\n\nDo three.\n\n```verify\n" + checkGate("3") + "\n```\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, logDir := fakeAgent(t, attemptsAgent)
	s := settingsFor(agentPath)
	s.Jobs = 3
	runThenClean(t, repo, s, logDir)
	checkPlannedAcross(t, repo, s)
	out := replayedWithoutCalls(t, repo, s, logDir, map[string]string{"1": "attempt 1", "2": "attempt 1", "3": "attempt 2"})
	if row := taskRows(t, openJournal(t, repo), out.RunID)["3"]; row.Source != "replayed" || row.Attempts != 2 {
		t.Errorf("task 3: source %q, %d attempts; want replayed, 2", row.Source, row.Attempts)
	}
}

// TestAcrossRunsFailedCall: a task whose first call failed in the other
// run (a 429, say) and whose second did the work replays across runs,
// the failure included, as a resume replays such a chain from its
// lineage: no agent call.
func TestAcrossRunsFailedCall(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, logDir := fakeAgent(t, `echo call >> "$LOG/calls"
if [ "$IMPLLOOP_ATTEMPT" = 1 ]; then echo "429 Too Many Requests" >&2; exit 1; fi
echo "done" > "out-$IMPLLOOP_TASK_ID.txt"`)
	s := settingsFor(agentPath)
	runThenClean(t, repo, s, logDir)
	checkPlannedAcross(t, repo, s)
	out := replayedWithoutCalls(t, repo, s, logDir, map[string]string{"1": "done"})
	units, err := openJournal(t, repo).Units(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 2 || units[0].Status != "failed" || !units[0].Replayed() || units[1].Status != "completed" || !units[1].Replayed() {
		for _, u := range units {
			t.Logf("unit %s: %s, replayed from %q", u.UnitID, u.Status, u.ReplayedFromRun)
		}
		t.Errorf("want attempt 1 failed and attempt 2 completed, both replayed")
	}
}

// TestAcrossRunsGateChanged: the other run's attempt 2 followed from its
// gate's feedback; a run whose gate is another (here --verify, which no
// identity holds) cannot know what its feedback would have been, so the
// chain is refused whole, before anything is written: the task runs live
// from attempt 1, as planned, with none of the other run's work in the
// tree and nothing of it replayed.
func TestAcrossRunsGateChanged(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, logDir := fakeAgent(t, attemptsAgent)
	s := settingsFor(agentPath)
	s.Verify = checkGate("1")
	runThenClean(t, repo, s, logDir)

	s.Verify = "grep -qx 'attempt 2' out-1.txt"
	dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Plan) != 1 || dry.Plan[0].Action != ActionLive {
		t.Fatalf("dry run: %+v, want task 1 live", dry.Plan)
	}
	out := runIn(t, repo, s)
	if out.Verdict != "DONE" {
		t.Fatalf("second run: %s", out.Verdict)
	}
	if n := strings.Count(readFile(t, filepath.Join(logDir, "calls")), "call"); n != 2 {
		t.Errorf("%d calls, want 2: both attempts live", n)
	}
	j := openJournal(t, repo)
	units, err := j.Units(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if u.Replayed() {
			t.Errorf("unit %s replayed from %s: the chain was refused, nothing replays", u.UnitID, u.ReplayedFromRun)
		}
	}
	if row := taskRows(t, j, out.RunID)["1"]; row.Source != "live" || len(row.Concerns) != 0 {
		t.Errorf("task 1: source %q, concerns %q; want live, none", row.Source, row.Concerns)
	}
	if gs, err := j.Gates(out.RunID, "1"); err != nil || len(gs) != 2 || gs[0].Replayed {
		t.Errorf("gates %+v (%v), want two live", gs, err)
	}
}

// TestAcrossRunsResumeChain: a resume whose lineage never reached a task
// that a teammate's run did in two attempts from the tree the resume is
// at replays it across runs, chain and all, after replaying its own
// tasks from its lineage; not with --reverify.
func TestAcrossRunsResumeChain(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n### Task 1: One\n\nDo one.\n\n### Task 2: Two\n\nDo two.\n\n```verify\n" + checkGate("2") + "\n```\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, logDir := fakeAgent(t, attemptsAgent)
	s := settingsFor(agentPath)
	s.TaskRange = "1"
	mine := runIn(t, repo, s) // stops before task 2
	if mine.Verdict != "DONE" {
		t.Fatalf("first run: %s", mine.Verdict)
	}
	s.TaskRange = ""
	theirs := runIn(t, repo, s) // the teammate's: task 1 across from mine, task 2 in two attempts
	if theirs.Verdict != "DONE" {
		t.Fatalf("their run: %s", theirs.Verdict)
	}
	if err := os.Remove(filepath.Join(repo, "out-2.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(logDir, "calls")); err != nil {
		t.Fatal(err)
	}

	dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: mine.RunID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Plan) != 2 || dry.Plan[0].Action != ActionReplay || dry.Plan[1].Action != ActionAcross || dry.Plan[1].From != theirs.RunID {
		t.Fatalf("resume plan %+v, want task 1 replay, task 2 across from %s", dry.Plan, theirs.RunID)
	}
	// --reverify asks every gate again: attempt 1's of their chain would
	// have to judge a tree nobody has, so the chain is refused.
	dry, err = Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: mine.RunID, DryRun: true, Reverify: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Plan[1].Action != ActionLive {
		t.Errorf("--reverify: task 2 planned %s (%v), want live", dry.Plan[1].Action, dry.Plan[1].Reasons)
	}

	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: mine.RunID})
	if err != nil || out.Verdict != "DONE" {
		t.Fatalf("resume: %v %+v", err, out)
	}
	checkJournal(t, repo)
	if _, err := os.Stat(filepath.Join(logDir, "calls")); err == nil {
		t.Errorf("the resume called the agent: %s", readFile(t, filepath.Join(logDir, "calls")))
	}
	if got := readFile(t, filepath.Join(repo, "out-2.txt")); got != "attempt 2\n" {
		t.Errorf("out-2.txt = %q, want their second attempt's", got)
	}
	units, err := openJournal(t, repo).Units(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	from := map[string]string{}
	for _, u := range units {
		from[u.UnitID] = u.ReplayedFromRun
	}
	if from["1/implement~a1"] != mine.RunID || from["2/implement~a1"] != theirs.RunID || from["2/implement~a2"] != theirs.RunID {
		t.Errorf("replayed from %v, want task 1 from %s (lineage), task 2's two attempts from %s", from, mine.RunID, theirs.RunID)
	}
}

// TestAcrossRunsSaysWhyNot: a fresh run's task that another run did, but
// that does not replay across runs, says why instead of "never ran": the
// tree is another (a file committed since), or the result is not in the
// blob store. The plan says it beforehand, explain after.
func TestAcrossRunsSaysWhyNot(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, logDir := fakeAgent(t, `echo "step $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"; echo call >> "$LOG/calls"`)
	s := settingsFor(agentPath)
	runThenClean(t, repo, s, logDir)
	first, err := openJournal(t, repo).ListRuns()
	if err != nil || len(first) != 1 {
		t.Fatalf("runs %v, %v", first, err)
	}
	check := func(wants ...string) string {
		t.Helper()
		dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if len(dry.Plan) != 1 || dry.Plan[0].Action != ActionLive || !strings.Contains(strings.Join(dry.Plan[0].Reasons, "; "), want) {
				t.Errorf("plan %+v, want live: %s", dry.Plan, want)
			}
		}
		out := runIn(t, repo, s)
		j := openJournal(t, repo)
		x := explainOf(t, j, out.RunID, "")
		for _, want := range wants {
			if len(x.Units) != 1 || x.Units[0].Source != "live" || !strings.Contains(x.Units[0].Reason, want) {
				t.Errorf("explain %+v, want live: %s", x.Units, want)
			}
		}
		git(t, repo, "clean", "-fdq")
		return out.RunID
	}
	// Another tree: a file committed since.
	writeFile(t, filepath.Join(repo, "notes.txt"), "notes\n")
	git(t, repo, "add", "notes.txt")
	git(t, repo, "commit", "-q", "-m", "notes")
	second := check("run "+first[0].ID+" on ", "did it, from another tree")
	// The same tree as the second run, whose blobs are gone.
	dirs, err := cache.StateDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dirs.State, "objects")); err != nil {
		t.Fatal(err)
	}
	check("run "+second+" on ", "did it from this tree, but its result is not in the blob store")
}

// TestAcrossRunsSaysACallMadeAhead: with --jobs, a wave's task after one
// that runs live is called ahead (the tree it will start from is not known
// then), and keeps that call at its turn even when the tree then is the
// one another run did it from. Its reason says so: "not in this chain of
// attempts" would be untrue of a run whose chain stands.
func TestAcrossRunsSaysACallMadeAhead(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n- [ ] T001 [P] One\n- [ ] T002 [P] Two\n- [ ] T003 [P] Three\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, logDir := fakeAgent(t, `echo "$IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"; echo "did $IMPLLOOP_TASK_ID"; echo call >> "$LOG/calls"`)
	s := settingsFor(agentPath)
	runThenClean(t, repo, s, logDir)
	// T001's result gone: it runs live, and T002 and T003 are called
	// ahead with it; the agent leaves the tree as it did the first time.
	j := openJournal(t, repo)
	runs, err := j.ListRuns()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	units, err := j.Units(runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if u.TaskID == "T001" {
			p, err := j.Blobs().Path(u.Result)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Jobs = 3
	out := runIn(t, repo, s)
	j = openJournal(t, repo)
	x := explainOf(t, j, out.RunID, "")
	for _, u := range x.Units {
		if u.Task == "T001" || u.Source != "live" {
			continue
		}
		if strings.Contains(u.Reason, "not in this chain of attempts") || !strings.Contains(u.Reason, "ahead") {
			t.Errorf("task %s: live because %q, want it said called ahead", u.Task, u.Reason)
		}
	}
}

// explainOf is Explain of run runID (only task's units when task is not "").
func explainOf(t *testing.T, j *cache.Journal, runID, task string) *Explanation {
	t.Helper()
	run, err := j.GetRun(runID)
	if err != nil {
		t.Fatal(err)
	}
	x, err := explainRun(j, run, task)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
