package loop

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/cache"
)

// plannedOf is the planned line of task id.
func plannedOf(t *testing.T, plan []PlannedTask, id string) PlannedTask {
	t.Helper()
	for _, p := range plan {
		if p.Task == id {
			return p
		}
	}
	t.Fatalf("task %s not in the plan %+v", id, plan)
	return PlannedTask{}
}

// A task fixed outside the loop replays as fixed only while it is the task
// that was fixed: once its text changes, the resume plan says so and the
// task runs live (it used to replay "fixed outside the loop" forever).
func TestResumeFixedOutsideThenEdited(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	s.MaxAttempts = 1
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), "# Plan\n\nShared context.\n\n"+
		"### Task 1: a\n\n```text path=out/a.txt\na\n```\n\n"+
		"### Task 2: b\n\n```text path=b.tx\nB\n```\n\n```verify\ntest -f b.txt\n```\n")
	first, _ := rsRun(t, repo, s, "")
	if !first.Blocked {
		t.Fatalf("first run: %s, want task 2 blocked", first.Verdict)
	}
	writeFile(t, filepath.Join(repo, "b.txt"), "B\n")
	if err := os.Remove(filepath.Join(repo, BlockedFile)); err != nil {
		t.Fatal(err)
	}
	fixed, rec := rsRun(t, repo, s, first.RunID)
	if fixed.Verdict != "DONE" || len(rec.tasksWith(EvUnitStarted, "")) != 0 {
		t.Fatalf("the resume after the fix: %s, live %v; want DONE with no agent call", fixed.Verdict, rec.tasksWith(EvUnitStarted, ""))
	}
	j := openJournal(t, repo)
	if gs, _ := j.Gates(fixed.RunID, "2"); len(gs) != 1 || !gs[0].Passed || gs[0].StandsFor == "" {
		t.Fatalf("task 2's recheck %+v: want one passing gate with the identity it stands for", gs)
	}

	// Nothing changed: the fix replays (planned in full, to see how).
	same, rec := rsRun(t, repo, s, fixed.RunID, func(o *Options) { o.Full = true })
	if !same.NoOp || len(rec.tasksWith(EvUnitStarted, "")) != 0 {
		t.Errorf("unchanged resume: NoOp=%v live %v", same.NoOp, rec.tasksWith(EvUnitStarted, ""))
	}
	if p := plannedOf(t, same.Plan, "2"); p.Action != ActionReplay || !strings.Contains(strings.Join(p.Reasons, "; "), "fixed outside the loop before") {
		t.Errorf("task 2 planned %s %q, want the fix replayed", p.Action, p.Reasons)
	}

	// A journal of an older implloop has no identity on the recheck: the
	// gate runs again (no agent call) and this time journals it.
	db, err := sql.Open("sqlite", filepath.Join(repo, ".git", "implloop", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	// (Nor did it journal a run's inputs digest.)
	if _, err := db.Exec(`UPDATE gates SET stands_for = ''; UPDATE runs SET inputs = ''`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	legacy, rec := rsRun(t, repo, s, same.RunID)
	if p := plannedOf(t, legacy.Plan, "2"); p.Action != ActionGate || len(rec.tasksWith(EvUnitStarted, "")) != 0 {
		t.Errorf("older journal: task 2 planned %s %q, live %v; want its gate first, no agent call", p.Action, p.Reasons, rec.tasksWith(EvUnitStarted, ""))
	}
	if gs, _ := j.Gates(legacy.RunID, "2"); len(gs) != 1 || !gs[0].Passed || gs[0].Replayed || gs[0].StandsFor == "" {
		t.Errorf("older journal: task 2's gates %+v, want one live pass with its identity", gs)
	}
	same = legacy

	// The task's text changes: a second file to write.
	rsEditPlan(t, repo, func(p string) string {
		return strings.Replace(p, "```verify\n", "```text path=d.txt\nD\n```\n\n```verify\n", 1)
	})
	dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: same.RunID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	p := plannedOf(t, dry.Plan, "2")
	why := strings.Join(p.Reasons, "; ")
	if p.Action != ActionLive || !strings.Contains(why, "task text changed") || !strings.Contains(why, "fixed outside the loop before") {
		t.Errorf("dry run: task 2 planned %s %q, want live because its text changed", p.Action, why)
	}
	if p := plannedOf(t, dry.Plan, "1"); p.Action != ActionReplay {
		t.Errorf("dry run: task 1 planned %s %q, want replay", p.Action, p.Reasons)
	}
	edited, rec := rsRun(t, repo, s, same.RunID)
	if edited.NoOp || edited.Verdict != "DONE" {
		t.Fatalf("the resume after the edit: NoOp=%v %s, want DONE with task 2 live", edited.NoOp, edited.Verdict)
	}
	if live := rec.tasksWith(EvUnitStarted, "live"); strings.Join(live, ",") != "2" {
		t.Errorf("live %v, want 2", live)
	}
	if got := plannedOf(t, edited.Plan, "2"); got.Action != p.Action || strings.Join(got.Reasons, "; ") != why {
		t.Errorf("the run planned %s %q, the dry run %s %q", got.Action, got.Reasons, p.Action, why)
	}
	if readFile(t, filepath.Join(repo, "d.txt")) != "D\n" {
		t.Error("d.txt not written")
	}

	// And that live run replays next time.
	again, rec := rsRun(t, repo, s, edited.RunID)
	if !again.NoOp || len(rec.tasksWith(EvUnitStarted, "")) != 0 {
		t.Errorf("the resume after: NoOp=%v live %v, want a no-op", again.NoOp, rec.tasksWith(EvUnitStarted, ""))
	}
}

// depPlan: task 1 (two steps, so ticking both checks it), task 2 depends
// on 1, task 3 on 2.
func depPlan() string {
	return "# Plan\n\nShared context.\n\n" +
		"### Task 1: one\n\n- [ ] write it\n- [ ] check it\n\n```text path=out/f1.txt\n1\n```\n\n" +
		"### Task 2: two\n\nDepends on: 1\n\n```text path=out/f2.txt\n2\n```\n\n" +
		"### Task 3: three\n\nDepends on: 2\n\n```text path=out/f3.txt\n3\n```\n"
}

// A dependency that does not run (ticked in the plan, or out of
// --task-range) keeps the artifact the lineage gave it: its dependents
// replay instead of re-running for "dependency artifacts changed".
func TestDependencyNotRunKeepsArtifact(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo, base := rsBase(t, depPlan(), s)

	for _, r := range []string{"2:", "3"} {
		rs := s
		rs.TaskRange = r
		out, rec := rsRun(t, repo, rs, base)
		if live := rec.tasksWith(EvUnitStarted, ""); len(live) != 0 || !out.NoOp {
			t.Errorf("--task-range %s: live %v NoOp=%v, want nothing live", r, live, out.NoOp)
		}
	}

	rsEditPlan(t, repo, func(p string) string {
		return strings.Replace(p, "- [ ] write it\n- [ ] check it", "- [x] write it\n- [x] check it", 1)
	})
	ticked, rec := rsRun(t, repo, s, base)
	if live := rec.tasksWith(EvUnitStarted, ""); len(live) != 0 {
		t.Errorf("task 1 ticked: live %v, want nothing live", live)
	}
	for _, p := range ticked.Plan {
		if want := map[string]string{"1": ActionSkip, "2": ActionReplay, "3": ActionReplay}[p.Task]; p.Action != want {
			t.Errorf("task %s planned %s %q, want %s", p.Task, p.Action, p.Reasons, want)
		}
	}
	if rows := taskRows(t, openJournal(t, repo), ticked.RunID); rows["1"].Status != cache.TaskSkipped {
		t.Errorf("task 1: %s, want skipped", rows["1"].Status)
	}
	// The parent skipped it too: the artifact comes from further up.
	again, rec := rsRun(t, repo, s, ticked.RunID)
	if live := rec.tasksWith(EvUnitStarted, ""); len(live) != 0 || !again.NoOp {
		t.Errorf("again with task 1 ticked: live %v NoOp=%v, want a no-op", live, again.NoOp)
	}

	// A dependency that runs and changes still re-runs its dependents.
	rsEditPlan(t, repo, func(p string) string {
		return strings.Replace(strings.Replace(p, "- [x] write it\n- [x] check it", "- [ ] write it\n- [ ] check it", 1), "\n1\n```", "\none\n```", 1)
	})
	changed, rec := rsRun(t, repo, s, again.RunID)
	if live := rec.tasksWith(EvUnitStarted, "live"); strings.Join(live, ",") != "1,2,3" {
		t.Errorf("task 1 edited: live %v, want 1,2,3", live)
	}
	if p := plannedOf(t, changed.Plan, "2"); p.Action != ActionLive {
		t.Errorf("task 2 planned %s %q, want live", p.Action, p.Reasons)
	}
}

// cancelAfter is an agent whose call finishes, after which the run is
// interrupted: Ctrl-C arriving between the agent's exit and the engine's
// look at the context.
type cancelAfter struct {
	agent.Agent
	cancel context.CancelFunc
}

func (c cancelAfter) Run(ctx context.Context, req agent.Request) (agent.Result, error) {
	res, err := c.Agent.Run(ctx, req)
	c.cancel()
	return res, err
}

// An interrupt that comes once the agent has exited keeps its result: the
// unit is journaled completed (and replays on resume), and the run stops.
func TestInterruptAfterAgentExited(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), rsPlan(2, "Shared context."))
	inner, err := agent.New("builtin", agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := Run(ctx, Options{Settings: s, RepoRoot: repo, Agent: cancelAfter{inner, cancel}})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	if !out.Interrupted {
		t.Fatalf("outcome %+v, want interrupted", out)
	}
	j := openJournal(t, repo)
	us, err := j.Units(out.RunID)
	if err != nil || len(us) != 1 || us[0].Status != cache.UnitCompleted || us[0].Result == "" {
		t.Fatalf("units %+v %v, want task 1's, completed with its result", us, err)
	}
	rows := taskRows(t, j, out.RunID)
	if rows["1"].Status != cache.TaskInterrupted || rows["2"].Status != cache.TaskPending {
		t.Errorf("tasks %s %s, want interrupted pending", rows["1"].Status, rows["2"].Status)
	}

	res, rec := rsRun(t, repo, s, out.RunID)
	if res.Verdict != "DONE" {
		t.Fatalf("resume: %s", res.Verdict)
	}
	if got := rec.tasksWith(EvUnitReplayed, ""); strings.Join(got, ",") != "1" {
		t.Errorf("replayed %v, want task 1's completed call", got)
	}
	if got := rec.tasksWith(EvUnitStarted, "live"); strings.Join(got, ",") != "2" {
		t.Errorf("live %v, want only 2", got)
	}
}

// BLOCKED.md says what the resume does with a task that has no gate: a
// guard block replays its attempt (nothing re-checks it), and the resume
// does exactly that.
func TestBlockedNoGateSaysWhatResumeDoes(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
	agentPath, logDir := fakeAgent(t, `
touch "$LOG/called-$IMPLLOOP_TASK_ID-$IMPLLOOP_RUN_ID"
case "$IMPLLOOP_TASK_ID" in
1) echo one > one.txt ;;
2) rm -f one.txt; echo two > two.txt ;;
3) echo three > three.txt ;;
esac`)
	s := settingsFor(agentPath)
	out := runIn(t, repo, s)
	if !out.Blocked {
		t.Fatalf("verdict %s, want task 2 blocked", out.Verdict)
	}
	b := readFile(t, filepath.Join(repo, BlockedFile))
	if strings.Contains(b, "runs its gate first") || !strings.Contains(b, "task 2 has no gate to re-run: its journaled attempt replays") {
		t.Errorf("BLOCKED.md does not say what the resume does:\n%s", b)
	}
	writeFile(t, filepath.Join(repo, "one.txt"), "one\n")
	if err := os.Remove(filepath.Join(repo, BlockedFile)); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: out.RunID})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	if p := plannedOf(t, res.Plan, "2"); p.Action != ActionReplay {
		t.Errorf("task 2 planned %s %q, want replay", p.Action, p.Reasons)
	}
	if _, err := os.Stat(filepath.Join(logDir, "called-2-"+res.RunID)); err == nil {
		t.Error("the resume called the agent for task 2")
	}
	if rows := taskRows(t, openJournal(t, repo), res.RunID); rows["2"].Status != cache.TaskDone {
		t.Errorf("task 2: %s, want done", rows["2"].Status)
	}

	// With a gate, and after an agent failure with none, it says so.
	gated := onResume([]blockInfo{{TaskID: "4"}, {TaskID: "5", NoGate: true, AgentFailure: "exit 7"}})
	if !strings.Contains(gated, "task 4 runs its gate first") || !strings.Contains(gated, "task 5 has no gate: it goes on with a new agent call") {
		t.Errorf("onResume: %q", gated)
	}
}
