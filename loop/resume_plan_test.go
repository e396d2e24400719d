package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
)

// chainPlan: three builtin tasks, 2 depends on 1, 3 on 2, and task 4 on
// none. No verify blocks: the gate is --verify when given.
func chainPlan() string {
	return "# Plan\n\nShared context.\n\n" +
		"### Task 1: one\n\n```text path=out/f1.txt\n1\n```\n\n" +
		"### Task 2: two\n\nDepends on: 1\n\n```text path=out/f2.txt\n2\n```\n\n" +
		"### Task 3: three\n\nDepends on: 2\n\n```text path=out/f3.txt\n3\n```\n\n" +
		"### Task 4: four\n\n```text path=out/f4.txt\n4\n```\n"
}

// editTask replaces task n's file content (chainPlan) with text.
func editTask(n int, text string) func(*testing.T, string, *Settings) {
	return func(t *testing.T, repo string, _ *Settings) {
		rsEditPlan(t, repo, func(p string) string {
			return strings.Replace(p, fmt.Sprintf("\n%d\n```", n), "\n"+text+"\n```", 1)
		})
	}
}

// The resume plan (a dry run) and the resume it announces agree, task by
// task, on replay or live, whatever was edited in between; in particular
// a dependency that runs live re-runs its dependents in the plan too (it
// used to say "replay" for a dependent the run then re-ran live).
func TestPlanAgreesWithRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		baseRange string // --task-range of the base run
		edit      func(t *testing.T, repo string, s *Settings)
		reverify  bool
		// want: per task the planned action; "" = not checked.
		want map[string]string
		// reason: task -> a substring one of its planned reasons has.
		reason map[string]string
	}{
		{name: "nothing changed", want: map[string]string{"1": ActionReplay, "2": ActionReplay, "3": ActionReplay, "4": ActionReplay}},
		{name: "dependency never ran", baseRange: "2", edit: func(_ *testing.T, _ string, s *Settings) { s.TaskRange = "1:" },
			want:   map[string]string{"1": ActionLive, "2": ActionLive, "3": ActionLive, "4": ActionLive},
			reason: map[string]string{"1": "never ran", "2": "dependency 1 runs live"}},
		{name: "task 1 edited", edit: editTask(1, "one"),
			want:   map[string]string{"1": ActionLive, "2": ActionLive, "3": ActionLive, "4": ActionReplay},
			reason: map[string]string{"2": "dependency 1 runs live", "3": "dependency 2 runs live"}},
		{name: "task 2 edited", edit: editTask(2, "two"),
			want:   map[string]string{"1": ActionReplay, "2": ActionLive, "3": ActionLive, "4": ActionReplay},
			reason: map[string]string{"3": "dependency 2 runs live"}},
		{name: "task 3 edited", edit: editTask(3, "three"),
			want: map[string]string{"1": ActionReplay, "2": ActionReplay, "3": ActionLive, "4": ActionReplay}},
		{name: "model changed", edit: func(_ *testing.T, _ string, s *Settings) { s.Model = "b" },
			want: map[string]string{"1": ActionLive, "2": ActionLive, "3": ActionLive, "4": ActionLive}},
		{name: "narrower range", edit: func(_ *testing.T, _ string, s *Settings) { s.TaskRange = "2:" },
			want: map[string]string{"2": ActionReplay, "3": ActionReplay, "4": ActionReplay}},
		{name: "reverify", reverify: true,
			want:   map[string]string{"1": ActionReplay, "2": ActionReplay, "3": ActionReplay, "4": ActionReplay},
			reason: map[string]string{"2": "may re-run: the gate of dependency 1 runs live", "3": "may re-run: the gate of dependency 2 runs live"}},
		// The prompt names the gate command: another one is another
		// identity, and every task runs live, saying so.
		{name: "gate command changed, still passes", edit: func(_ *testing.T, _ string, s *Settings) { s.Verify = "test -d out" },
			want:   map[string]string{"1": ActionLive, "2": ActionLive, "3": ActionLive, "4": ActionLive},
			reason: map[string]string{"1": "gate command changed", "2": "gate command changed", "4": "gate command changed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := rsBuiltin()
			s.Verify = "true"
			s.TaskRange = tc.baseRange
			repo := newRepo(t, nil)
			writeFile(t, filepath.Join(repo, "plan.md"), chainPlan())
			base, _ := rsRun(t, repo, s, "")
			if base.Verdict != "DONE" {
				t.Fatalf("base run: %s", base.Verdict)
			}
			rs := s
			if tc.edit != nil {
				tc.edit(t, repo, &rs)
			}
			dry, err := Run(context.Background(), Options{Settings: rs, RepoRoot: repo, Parent: base.RunID, DryRun: true, Reverify: tc.reverify})
			if err != nil {
				t.Fatal(err)
			}
			out, _ := rsRun(t, repo, rs, base.RunID, func(o *Options) { o.Reverify, o.Full = tc.reverify, true })
			rows := taskRows(t, openJournal(t, repo), out.RunID)
			for _, p := range dry.Plan {
				if w := tc.want[p.Task]; w != "" && p.Action != w {
					t.Errorf("task %s planned %s %q, want %s", p.Task, p.Action, p.Reasons, w)
				}
				if r := tc.reason[p.Task]; r != "" && !strings.Contains(strings.Join(p.Reasons, "; "), r) {
					t.Errorf("task %s planned %s %q, want a reason with %q", p.Task, p.Action, p.Reasons, r)
				}
				row := rows[p.Task]
				var ok bool
				switch p.Action {
				case ActionLive:
					ok = row.Source == cache.SourceLive || row.Source == cache.SourceMixed
				case ActionReplay:
					ok = row.Source == cache.SourceReplayed || row.Source == cache.SourceNone
				case ActionSkip:
					ok = row.Status == cache.TaskSkipped
				default:
					ok = true
				}
				if !ok {
					t.Errorf("task %s: the dry run planned %s %q, the resume did it %s (%s)", p.Task, p.Action, p.Reasons, row.Source, row.Status)
				}
			}
			// The run's own resume plan is the dry run's.
			if len(out.Plan) != len(dry.Plan) {
				t.Fatalf("resume plan %+v, dry run %+v", out.Plan, dry.Plan)
			}
			for i := range out.Plan {
				if out.Plan[i].Action != dry.Plan[i].Action || strings.Join(out.Plan[i].Reasons, ";") != strings.Join(dry.Plan[i].Reasons, ";") {
					t.Errorf("task %s: resume plan %+v, dry run %+v", out.Plan[i].Task, out.Plan[i], dry.Plan[i])
				}
			}
		})
	}
}

// The unit_started reasons of a live dependent name its dependency.
func TestLiveReasonNamesDependency(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo, base := rsBase(t, chainPlan(), s)
	rsEditPlan(t, repo, func(p string) string { return strings.Replace(p, "\n1\n```", "\none\n```", 1) })
	_, rec := rsRun(t, repo, s, base)
	got := map[string]string{}
	for _, e := range rec.ev {
		if e.Type == EvUnitStarted {
			got[e.Task] = strings.Join(e.Reasons, ", ")
		}
	}
	if got["2"] != "dependency 1 ran live" || got["3"] != "dependency 2 ran live" {
		t.Errorf("live reasons %q, want task 2: dependency 1 ran live, task 3: dependency 2 ran live", got)
	}
}

// A resume after the documented repair of a discard block (the task had no
// gate: its journaled attempt replays) turns BLOCKED into DONE with
// nothing live: that is a change, not a no-op. The resume after it is one.
func TestRepairedDiscardIsNotNoOp(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, _ := fakeAgent(t, `
case "$IMPLLOOP_TASK_ID" in
1) echo one > one.txt ;;
2) rm -f one.txt; echo two > two.txt ;;
esac`)
	s := settingsFor(agentPath)
	first := runIn(t, repo, s)
	if !first.Blocked || first.Verdict != "PARTIAL" {
		t.Fatalf("first run: %s blocked=%v, want PARTIAL with task 2 blocked", first.Verdict, first.Blocked)
	}
	writeFile(t, filepath.Join(repo, "one.txt"), "one\n")
	if err := os.Remove(filepath.Join(repo, BlockedFile)); err != nil {
		t.Fatal(err)
	}
	fixed, rec := rsRun(t, repo, s, first.RunID)
	if live := rec.tasksWith(EvUnitStarted, ""); len(live) != 0 {
		t.Fatalf("the repaired resume ran %v live", live)
	}
	if fixed.Verdict != "DONE" || fixed.NoOp {
		t.Errorf("repaired resume: %s NoOp=%v, want DONE and not a no-op", fixed.Verdict, fixed.NoOp)
	}
	again, _ := rsRun(t, repo, s, fixed.RunID)
	if again.Verdict != "DONE" || !again.NoOp || again.ParentVerdict != "DONE" {
		t.Errorf("unchanged resume: %s NoOp=%v parent %s, want a DONE no-op", again.Verdict, again.NoOp, again.ParentVerdict)
	}
}

// With --on-blocked continue a task whose dependency ended blocked (or was
// itself held) is not dispatched: it stays pending with why. The next
// resume, after the repair, runs it as usual.
func TestBlockedDependencyHoldsDependents(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	s.OnBlocked = "continue"
	s.MaxAttempts = 1
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), "# Plan\n\nShared context.\n\n"+
		"### Task 1: one\n\n```text path=out/f1.txt\n1\n```\n\n```verify\ntest -f out/fixed.txt\n```\n\n"+
		"### Task 2: two\n\nDepends on: 1\n\n```text path=out/f2.txt\n2\n```\n\n"+
		"### Task 3: three\n\nDepends on: 2\n\n```text path=out/f3.txt\n3\n```\n\n"+
		"### Task 4: four\n\n```text path=out/f4.txt\n4\n```\n")
	first, rec := rsRun(t, repo, s, "")
	if first.Verdict != "PARTIAL" {
		t.Fatalf("verdict %s, want PARTIAL", first.Verdict)
	}
	if live := strings.Join(rec.tasksWith(EvUnitStarted, ""), ","); live != "1,4" {
		t.Errorf("dispatched %s, want 1,4 (2 and 3 held by their dependencies)", live)
	}
	rows := taskRows(t, openJournal(t, repo), first.RunID)
	for id, want := range map[string]string{"2": "not run: dependency 1 is blocked", "3": "not run: dependency 2 is pending"} {
		if r := rows[id]; r.Status != cache.TaskPending || strings.Join(r.Concerns, ";") != want {
			t.Errorf("task %s: %s %q, want pending with %q", id, r.Status, r.Concerns, want)
		}
	}
	if rows["4"].Status != cache.TaskDone {
		t.Errorf("task 4: %s, want done", rows["4"].Status)
	}
	concerns := rec.tasksWith(EvConcern, "")
	if strings.Join(concerns, ",") != "2,3" {
		t.Errorf("concern events for %v, want 2,3", concerns)
	}
	if first.Report == nil || len(first.Report.Tasks) != 4 || len(first.Report.Tasks[1].Concerns) != 1 {
		t.Errorf("the report does not show why task 2 did not run: %+v", first.Report)
	}
	if !strings.Contains(readFile(t, first.ReportPath), "not run: dependency 1 is blocked") {
		t.Errorf("report.md does not say why task 2 did not run")
	}

	// The repair: the gate passes now.
	writeFile(t, filepath.Join(repo, "out", "fixed.txt"), "ok\n")
	if err := os.Remove(filepath.Join(repo, BlockedFile)); err != nil {
		t.Fatal(err)
	}
	res, rec := rsRun(t, repo, s, first.RunID)
	if res.Verdict != "DONE" || res.NoOp {
		t.Fatalf("after the repair: %s NoOp=%v, want DONE", res.Verdict, res.NoOp)
	}
	for id, want := range map[string]string{"1": ActionGate, "2": ActionLive, "3": ActionLive, "4": ActionReplay} {
		if p := plannedOf(t, res.Plan, id); p.Action != want {
			t.Errorf("task %s planned %s %q, want %s", id, p.Action, p.Reasons, want)
		}
	}
	if live := strings.Join(rec.tasksWith(EvUnitStarted, ""), ","); live != "2,3" {
		t.Errorf("after the repair dispatched %s, want 2,3", live)
	}
}

// An --env entry that is not a variable name is refused before a run is
// journaled, on a run and on a resume (inherited from an older journal).
func TestBadEnvNameRefusedBeforeRun(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), rsPlan(1, "Shared."))
	bad := s
	bad.Env = []string{"1BAD"}
	var envErr *SettingError
	if _, err := Run(context.Background(), Options{Settings: bad, RepoRoot: repo}); !errors.As(err, &envErr) || envErr.Flag != "env" || !strings.Contains(envErr.Msg, "1BAD") {
		t.Fatalf("run with --env 1BAD: %v, want a SettingError for --env", err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "implloop")); err == nil {
		t.Fatal("a refused run wrote .git/implloop")
	}
	base, _ := rsRun(t, repo, s, "")
	if _, err := Run(context.Background(), Options{Settings: bad, RepoRoot: repo, Parent: base.RunID}); !errors.As(err, &envErr) {
		t.Fatalf("resume with --env 1BAD: %v, want a SettingError", err)
	}
	runs, err := openJournal(t, repo).ListRuns()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs after the refused resume: %d (%v), want 1", len(runs), err)
	}
	for _, n := range []string{"A", "_x", "GO_1", "a1"} {
		ok := s
		ok.Env = []string{n}
		if err := ok.Validate(); err != nil {
			t.Errorf("--env %s: %v", n, err)
		}
	}
	for _, n := range []string{"", "1BAD", "A-B", "A B", "X=1", "É"} {
		b := s
		b.Env = []string{n}
		if err := b.Validate(); err == nil {
			t.Errorf("--env %q accepted", n)
		} else if strings.Contains(err.Error(), "=1") {
			t.Errorf("--env %q: the error shows the value: %v", n, err)
		}
	}
}
