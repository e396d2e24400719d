package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
)

// `resume --reverify` re-runs the gates of replayed tasks; a task with no
// gate has nothing to re-run, and the plan must not say its gate runs
// (it used to: "--reverify: its gate runs live"), while the task with a
// gate says so, and the run does what the plan said.
func TestReverifyPlansNoGateForATaskWithout(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	plan := "# Plan\n\nShared context.\n\n" +
		"### Task 1: gated\n\n```text path=out/a.txt\na\n```\n\n```verify\ntest -f out/a.txt\n```\n\n" +
		"### Task 2: no gate\n\n```text path=out/b.txt\nb\n```\n"
	repo, parent := rsBase(t, plan, s)
	out, rec := rsRun(t, repo, s, parent, func(o *Options) { o.Reverify = true })
	if out.Verdict != "DONE" {
		t.Fatalf("--reverify resume: %s", out.Verdict)
	}
	if p := plannedOf(t, out.Plan, "1"); p.Action != ActionReplay || strings.Join(p.Reasons, "; ") != "--reverify: its gate runs live" {
		t.Errorf("task 1 planned %s %q, want replay with its gate live", p.Action, p.Reasons)
	}
	if p := plannedOf(t, out.Plan, "2"); p.Action != ActionReplay || len(p.Reasons) != 0 {
		t.Errorf("task 2 (no gate) planned %s %q, want a plain replay", p.Action, p.Reasons)
	}
	if got := rec.tasksWith(EvGate, ""); strings.Join(got, ",") != "1" {
		t.Errorf("gates of %v ran, want task 1's only", got)
	}
	if got := rec.tasksWith(EvUnitStarted, ""); len(got) != 0 {
		t.Errorf("--reverify dispatched %v", got)
	}
}

// A task the guard blocked (its gate passed; it discarded earlier work)
// whose text the user then edits is a task whose inputs changed: the
// resume runs it, as it runs any such task. Its gate, re-run first,
// would pass again and mark it done with the old text's work (it did).
// Unedited, the resume still re-runs its gate first, with no agent call.
func TestGuardBlockedTaskEditedRunsAgain(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\nShared context.\n\n" +
		"### Task 1: one\n\nWrite one.txt.\n\n" +
		"### Task 2: two\n\nWrite two.txt.\n\n```verify\ntest -f two.txt\n```\n"
	agentPath, logDir := fakeAgent(t, `
touch "$LOG/called-$IMPLLOOP_TASK_ID-$IMPLLOOP_RUN_ID"
case "$IMPLLOOP_TASK_ID" in
1) echo one > one.txt ;;
2) if grep -q 'keep one.txt' "$IMPLLOOP_PROMPT_FILE"; then echo kept > two.txt; else rm -f one.txt; echo two > two.txt; fi ;;
esac`)
	s := settingsFor(agentPath)
	setup := func(t *testing.T) (repo, run string) {
		repo = newRepo(t, map[string]string{"plan.md": plan})
		out := runIn(t, repo, s)
		if !out.Blocked || taskRows(t, openJournal(t, repo), out.RunID)["2"].Status != cache.TaskBlocked {
			t.Fatalf("first run: %s, want task 2 blocked by the guard", out.Verdict)
		}
		writeFile(t, filepath.Join(repo, "one.txt"), "one\n") // the user's repair
		if err := os.Remove(filepath.Join(repo, BlockedFile)); err != nil {
			t.Fatal(err)
		}
		return repo, out.RunID
	}
	called := func(t *testing.T, run string) bool {
		_, err := os.Stat(filepath.Join(logDir, "called-2-"+run))
		return err == nil
	}

	t.Run("edited", func(t *testing.T) {
		repo, first := setup(t)
		writeFile(t, filepath.Join(repo, "plan.md"), strings.Replace(plan, "Write two.txt.", "Write two.txt; keep one.txt.", 1))
		dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: first, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		p := plannedOf(t, dry.Plan, "2")
		why := strings.Join(p.Reasons, "; ")
		if p.Action != ActionLive || !strings.Contains(why, "blocked by the guard, and the task changed since") || !strings.Contains(why, "task text changed") {
			t.Errorf("dry run: task 2 planned %s %q, want live: its text changed", p.Action, why)
		}
		res, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: first})
		if err != nil {
			t.Fatal(err)
		}
		checkJournal(t, repo)
		if res.Verdict != "DONE" || !called(t, res.RunID) {
			t.Fatalf("resume: %s, agent called for task 2: %v; want DONE with task 2 run again", res.Verdict, called(t, res.RunID))
		}
		if got := plannedOf(t, res.Plan, "2"); got.Action != p.Action || strings.Join(got.Reasons, "; ") != why {
			t.Errorf("the run planned %s %q, the dry run %s %q", got.Action, got.Reasons, p.Action, why)
		}
		if readFile(t, filepath.Join(repo, "two.txt")) != "kept\n" {
			t.Error("two.txt is not the edited task's work")
		}
		if us, _ := openJournal(t, repo).Units(res.RunID); len(us) != 2 || us[1].TaskID != "2" || us[1].Attempt != 1 || us[1].Replayed() {
			t.Errorf("units %+v, want task 1 replayed and task 2 live from attempt 1", us)
		}
	})
	t.Run("unedited", func(t *testing.T) {
		repo, first := setup(t)
		res, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: first})
		if err != nil {
			t.Fatal(err)
		}
		checkJournal(t, repo)
		if p := plannedOf(t, res.Plan, "2"); p.Action != ActionGate {
			t.Errorf("task 2 planned %s %q, want its gate first", p.Action, p.Reasons)
		}
		if res.Verdict != "DONE" || called(t, res.RunID) {
			t.Errorf("resume: %s, agent called for task 2: %v; want DONE by its gate, no agent call", res.Verdict, called(t, res.RunID))
		}
	})
}
