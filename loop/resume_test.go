package loop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
)

// The resume tests use the builtin agent (fully specified tasks: fenced
// blocks with path=) so they need no agent on the machine, and a fake
// shell agent where the test must see or stop the agent itself.

// rsRecorder collects a run's events.
type rsRecorder struct {
	mu sync.Mutex
	ev []Event
}

func (r *rsRecorder) Event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev = append(r.ev, e)
}

// tasksWith returns the sorted ids of the tasks with an event of type typ
// (matching source when it is not "").
func (r *rsRecorder) tasksWith(typ, source string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, e := range r.ev {
		if e.Type == typ && (source == "" || e.Source == source) && !seen[e.Task] {
			seen[e.Task] = true
			out = append(out, e.Task)
		}
	}
	sort.Slice(out, func(a, b int) bool { return rsLess(out[a], out[b]) })
	return out
}

func rsLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// rsPlan is a heading-form plan of n tasks the builtin agent can carry out:
// task i writes out/fi.txt and its verify block checks it. Each task has a
// two step checkboxes: ticking one is not an edit of the task; ticking both
// checks the task (a heading task with steps is checked when all are).
func rsPlan(n int, preamble string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Plan\n\n%s\n\n", preamble)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "### Task %d: file %d\n\n- [ ] write out/f%d.txt\n- [ ] check it\n\n```text path=out/f%d.txt\nhello %d\n```\n\n```verify\ntest -f out/f%d.txt\n```\n\n", i, i, i, i, i, i)
	}
	return b.String()
}

// rsChecklist is the same plan in checklist form.
func rsChecklist(n int) string {
	var b strings.Builder
	b.WriteString("# Plan\n\nShared context.\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] Task %d: file %d\n\n  ```text path=out/f%d.txt\n  hello %d\n  ```\n\n", i, i, i, i)
	}
	return b.String()
}

func rsBuiltin() Settings {
	s := DefaultSettings()
	s.Plan = "plan.md"
	s.Agent = "builtin"
	s.Model = "a"
	s.Timeout = Duration(30 * time.Second)
	return s
}

// rsRun runs (parent == "") or resumes in-process and checks the journal.
func rsRun(t *testing.T, repo string, s Settings, parent string, mod ...func(*Options)) (*Outcome, *rsRecorder) {
	t.Helper()
	rec := &rsRecorder{}
	o := Options{Settings: s, RepoRoot: repo, Parent: parent, Observer: rec}
	for _, m := range mod {
		m(&o)
	}
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run (parent %q): %v", parent, err)
	}
	checkJournal(t, repo)
	return out, rec
}

// rsBase makes a repository with plan and runs it to DONE.
func rsBase(t *testing.T, plan string, s Settings) (repo, run string) {
	t.Helper()
	repo = newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), plan)
	out, rec := rsRun(t, repo, s, "")
	if out.Verdict != "DONE" {
		t.Fatalf("base run: %s, want DONE", out.Verdict)
	}
	if live := rec.tasksWith(EvUnitStarted, ""); len(live) == 0 {
		t.Fatal("base run dispatched nothing")
	}
	return repo, out.RunID
}

func rsEditPlan(t *testing.T, repo string, edit func(string) string) {
	t.Helper()
	p := filepath.Join(repo, "plan.md")
	old := readFile(t, p)
	nw := edit(old)
	if nw == old {
		t.Fatal("the edit changed nothing")
	}
	writeFile(t, p, nw)
}

func TestResumePlanEdits(t *testing.T) {
	all := []string{"1", "2", "3", "4", "5"}
	full := rsBuiltin()
	full.PlanContext = "full"
	cases := []struct {
		name     string
		plan     string   // "" means rsPlan(5, ...)
		base     Settings // zero means rsBuiltin()
		edit     func(t *testing.T, repo string) string
		resume   func(s Settings) Settings
		live     []string
		skipped  []string
		reasons  map[string]string // task -> a reason its planned line must carry
		wantNoOp bool
	}{
		{
			name: "one task's text", live: []string{"3"},
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string { return strings.Replace(s, "hello 3\n", "hello three\n", 1) })
				return repo
			},
			reasons: map[string]string{"3": "task text changed"},
		},
		{
			name: "preamble", live: all,
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string { return strings.Replace(s, "Shared context.", "Shared context, edited.", 1) })
				return repo
			},
			reasons: map[string]string{"1": "preamble changed", "5": "preamble changed"},
		},
		{
			name: "trailing whitespace", wantNoOp: true,
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string {
					s = strings.Replace(s, "### Task 2: file 2\n", "### Task 2: file 2  \t\n", 1)
					s = strings.Replace(s, "- [ ] write out/f4.txt\n", "- [ ] write out/f4.txt   \n", 1)
					return s + "\n\n\n"
				})
				return repo
			},
		},
		{
			name: "CRLF", wantNoOp: true,
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") })
				return repo
			},
		},
		{
			name: "tick a step checkbox", wantNoOp: true,
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string {
					return strings.Replace(strings.Replace(s, "- [ ] write out/f2.txt", "- [x] write out/f2.txt", 1),
						"- [ ] write out/f5.txt", "- [X] write out/f5.txt", 1)
				})
				return repo
			},
		},
		{
			name: "tick every step of a task", skipped: []string{"2"},
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string {
					return strings.Replace(s, "- [ ] write out/f2.txt\n- [ ] check it", "- [x] write out/f2.txt\n- [x] check it", 1)
				})
				return repo
			},
		},
		{
			// A checked checklist task is skipped by default: not live.
			name: "tick a checklist task", plan: rsChecklist(5), skipped: []string{"2"},
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string { return strings.Replace(s, "- [ ] Task 2:", "- [x] Task 2:", 1) })
				return repo
			},
		},
		{
			// ... and with --include-checked it replays: the marker's state
			// is normalized out of the identity.
			name: "tick a checklist task, include checked", plan: rsChecklist(5), wantNoOp: true,
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string { return strings.Replace(s, "- [ ] Task 2:", "- [x] Task 2:", 1) })
				return repo
			},
			resume: func(s Settings) Settings { s.IncludeChecked = true; return s },
		},
		{
			name: "move the repository", wantNoOp: true,
			edit: func(t *testing.T, repo string) string {
				moved := filepath.Join(t.TempDir(), "elsewhere")
				if out, err := exec.Command("mv", repo, moved).CombinedOutput(); err != nil {
					t.Fatalf("mv: %v\n%s", err, out)
				}
				return moved
			},
		},
		{
			name: "model", live: all,
			resume:  func(s Settings) Settings { s.Model = "b"; return s },
			reasons: map[string]string{"2": "model changed"},
		},
		{
			name: "plan-context full, an edit to the last task", base: full, live: all,
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string { return s + "A note at the end.\n" })
				return repo
			},
			reasons: map[string]string{"1": "plan changed"},
		},
		{
			name: "plan-context task, the same edit", live: []string{"5"},
			edit: func(t *testing.T, repo string) string {
				rsEditPlan(t, repo, func(s string) string { return s + "A note at the end.\n" })
				return repo
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := c.base
			if s.Plan == "" {
				s = rsBuiltin()
			}
			plan := c.plan
			if plan == "" {
				plan = rsPlan(5, "Shared context.")
			}
			repo, parent := rsBase(t, plan, s)
			if c.edit != nil {
				repo = c.edit(t, repo)
			}
			if c.resume != nil {
				s = c.resume(s)
			}
			// The full path, unit by unit: a resume that would replay
			// everything is otherwise answered without a run (upToDate).
			if c.wantNoOp {
				if quick, _ := rsRun(t, repo, s, parent); !quick.UpToDate || quick.RunID != parent {
					t.Errorf("a resume that replays everything: UpToDate=%v run %s, want the parent's answer", quick.UpToDate, quick.RunID)
				}
			}
			out, rec := rsRun(t, repo, s, parent, func(o *Options) { o.Full = true })
			if out.Verdict != "DONE" {
				t.Errorf("verdict %s, want DONE", out.Verdict)
			}
			if got := rec.tasksWith(EvUnitStarted, "live"); strings.Join(got, ",") != strings.Join(c.live, ",") {
				t.Errorf("live tasks %v, want %v", got, c.live)
			}
			var planned []string
			for _, p := range out.Plan {
				if p.Action == ActionLive {
					planned = append(planned, p.Task)
				}
				if want, ok := c.reasons[p.Task]; ok && !strings.Contains(strings.Join(p.Reasons, "; "), want) {
					t.Errorf("task %s planned %s %q, want a reason %q", p.Task, p.Action, p.Reasons, want)
				}
			}
			if strings.Join(planned, ",") != strings.Join(c.live, ",") {
				t.Errorf("the resume plan said live %v, the run ran live %v", planned, c.live)
			}
			j := openJournal(t, repo)
			rows := taskRows(t, j, out.RunID)
			for _, id := range c.skipped {
				if rows[id].Status != cache.TaskSkipped {
					t.Errorf("task %s: %s, want skipped", id, rows[id].Status)
				}
			}
			for id, r := range rows {
				if r.Status == cache.TaskSkipped {
					continue
				}
				want := cache.SourceReplayed
				for _, l := range c.live {
					if l == id {
						want = cache.SourceLive
					}
				}
				if r.Source != want {
					t.Errorf("task %s: source %s, want %s", id, r.Source, want)
				}
			}
			if out.NoOp != c.wantNoOp {
				t.Errorf("NoOp = %v, want %v", out.NoOp, c.wantNoOp)
			}
		})
	}
}

// The seed incident, in-process: 13 tasks, task 10 writes a wrong path and
// its gate fails; the user fixes the plan, commits the good subset,
// removes BLOCKED.md and resumes.
func TestResumeSeedIncident(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	s.MaxAttempts = 2
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), strings.Replace(rsPlan(13, "Shared context."), "path=out/f10.txt", "path=out/f10.tx", 1))
	first, _ := rsRun(t, repo, s, "")
	if first.Verdict != "PARTIAL" || !first.Blocked {
		t.Fatalf("first run: %s blocked=%v, want PARTIAL with BLOCKED.md", first.Verdict, first.Blocked)
	}
	// Resuming with BLOCKED.md in place is refused.
	if _, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: first.RunID}); err != ErrBlockedFile {
		t.Fatalf("resume with BLOCKED.md: %v, want ErrBlockedFile", err)
	}
	rsEditPlan(t, repo, func(p string) string { return strings.Replace(p, "path=out/f10.tx\n", "path=out/f10.txt\n", 1) })
	var good []string
	for i := 1; i <= 9; i++ {
		good = append(good, fmt.Sprintf("out/f%d.txt", i))
	}
	git(t, repo, append([]string{"add"}, good...)...)
	git(t, repo, "commit", "-q", "-m", "the good subset")
	if err := os.Remove(filepath.Join(repo, BlockedFile)); err != nil {
		t.Fatal(err)
	}
	out, rec := rsRun(t, repo, s, first.RunID)
	if out.Verdict != "DONE" || out.Blocked || out.NoOp {
		t.Fatalf("resume: %s blocked=%v noop=%v, want DONE", out.Verdict, out.Blocked, out.NoOp)
	}
	if got := rec.tasksWith(EvUnitReplayed, ""); strings.Join(got, ",") != "1,2,3,4,5,6,7,8,9" {
		t.Errorf("replayed %v, want 1-9", got)
	}
	if got := rec.tasksWith(EvUnitStarted, "live"); strings.Join(got, ",") != "10,11,12,13" {
		t.Errorf("live %v, want 10-13", got)
	}
	if got := rec.tasksWith(EvConcern, ""); len(got) != 0 {
		t.Errorf("concerns on tasks %v: the commit between runs must not look like a loss", got)
	}
	j := openJournal(t, repo)
	for id, r := range taskRows(t, j, out.RunID) {
		if len(r.LostPaths) > 0 {
			t.Errorf("task %s lost %v", id, r.LostPaths)
		}
	}

	// Nothing changed since: the next resume replays everything, task 10's
	// recheck-then-attempt chain included.
	again, rec := rsRun(t, repo, s, out.RunID)
	if live := rec.tasksWith(EvUnitStarted, ""); len(live) != 0 || !again.NoOp {
		t.Errorf("the resume after the fix ran %v live (NoOp=%v); nothing changed", live, again.NoOp)
	}
	for _, p := range again.Plan {
		if p.Action != ActionReplay {
			t.Errorf("task %s planned %s %v, want replay", p.Task, p.Action, p.Reasons)
		}
	}
}

// A blocked task the user fixed by hand: the resume re-runs its gate, which
// passes, and the task is done with no agent call. The next resume replays
// that verdict rather than starting the task over.
func TestResumeBlockedFixedByHand(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	s.MaxAttempts = 1
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), strings.Replace(rsPlan(3, "Shared context."), "path=out/f2.txt", "path=out/wrong.txt", 1))
	first, _ := rsRun(t, repo, s, "")
	if first.Verdict != "PARTIAL" {
		t.Fatalf("first run: %s", first.Verdict)
	}
	writeFile(t, filepath.Join(repo, "out/f2.txt"), "fixed by hand\n")
	if err := os.Remove(filepath.Join(repo, BlockedFile)); err != nil {
		t.Fatal(err)
	}
	out, rec := rsRun(t, repo, s, first.RunID)
	if out.Verdict != "DONE" {
		t.Fatalf("resume: %s, want DONE", out.Verdict)
	}
	if live := rec.tasksWith(EvUnitStarted, ""); strings.Join(live, ",") != "3" {
		t.Errorf("live %v, want only 3 (task 2 was fixed by hand)", live)
	}
	for _, p := range out.Plan {
		if p.Task == "2" && p.Action != ActionGate {
			t.Errorf("task 2 planned %s, want %s", p.Action, ActionGate)
		}
	}
	j := openJournal(t, repo)
	row := taskRows(t, j, out.RunID)["2"]
	if row.Status != cache.TaskDone || row.Source != cache.SourceNone {
		t.Errorf("task 2: %s/%s, want done with no agent call", row.Status, row.Source)
	}
	if gs, _ := j.Gates(out.RunID, "2"); len(gs) != 1 || !gs[0].Passed || gs[0].Replayed {
		t.Errorf("task 2's gates %+v, want one live pass", gs)
	}

	again, rec := rsRun(t, repo, s, out.RunID)
	if live := rec.tasksWith(EvUnitStarted, ""); len(live) != 0 || !again.NoOp || again.Verdict != "DONE" {
		t.Errorf("next resume: live %v NoOp=%v %s, want a DONE no-op", live, again.NoOp, again.Verdict)
	}
	if row := taskRows(t, j, again.RunID)["2"]; row.Status != cache.TaskDone {
		t.Errorf("task 2 in the next resume: %s", row.Status)
	}
	// --reverify re-runs that gate (and every other) live.
	rev, rec := rsRun(t, repo, s, again.RunID, func(o *Options) { o.Reverify = true })
	if rev.NoOp || rev.Verdict != "DONE" {
		t.Errorf("--reverify: NoOp=%v %s", rev.NoOp, rev.Verdict)
	}
	if got := rec.tasksWith(EvGate, "live"); strings.Join(got, ",") != "1,2,3" {
		t.Errorf("--reverify ran gates of %v live, want 1,2,3", got)
	}
	if live := rec.tasksWith(EvUnitStarted, ""); len(live) != 0 {
		t.Errorf("--reverify dispatched %v", live)
	}
}

// rsPartial makes a repository whose 2-task plan's second task can never
// pass its gate, runs it to PARTIAL with s, and removes BLOCKED.md.
func rsPartial(t *testing.T, s Settings) (repo, run string) {
	t.Helper()
	repo = newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), strings.Replace(rsPlan(2, "Shared context."), "path=out/f2.txt", "path=out/wrong.txt", 1))
	first, _ := rsRun(t, repo, s, "")
	if first.Verdict != "PARTIAL" {
		t.Fatalf("first run: %s", first.Verdict)
	}
	if err := os.Remove(filepath.Join(repo, BlockedFile)); err != nil {
		t.Fatal(err)
	}
	return repo, first.RunID
}

// A resume whose blocked task still fails continues numbering after the
// last journaled attempt, with its gate feedback.
func TestResumeBlockedStillFailing(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	s.MaxAttempts = 2
	repo, first := rsPartial(t, s)
	out, _ := rsRun(t, repo, s, first)
	if out.Verdict != "PARTIAL" || !out.Blocked {
		t.Fatalf("resume: %s blocked=%v, want PARTIAL and blocked again", out.Verdict, out.Blocked)
	}
	j := openJournal(t, repo)
	us, err := j.Units(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var attempts []int
	for _, u := range us {
		if u.TaskID == "2" {
			attempts = append(attempts, u.Attempt)
		}
	}
	if fmt.Sprint(attempts) != "[3 4]" {
		t.Errorf("task 2's attempts in the resume: %v, want [3 4]", attempts)
	}
}

// The no-op resume says so and keeps the parent's verdict; --reverify
// re-runs the gates and is not a no-op. (Planned in full: the answer
// without a run is TestResumeUpToDate's.)
func TestResumeNoOp(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo, parent := rsBase(t, rsPlan(3, "Shared context."), s)
	out, rec := rsRun(t, repo, s, parent, func(o *Options) { o.Full = true })
	if !out.NoOp || out.UpToDate || out.ParentVerdict != "DONE" || out.Verdict != "DONE" {
		t.Errorf("no-op resume: NoOp=%v parent verdict %q verdict %q", out.NoOp, out.ParentVerdict, out.Verdict)
	}
	if got := rec.tasksWith(EvGate, "replayed"); len(got) != 3 {
		t.Errorf("replayed gates of %v, want all 3", got)
	}
	rev, rec := rsRun(t, repo, s, out.RunID, func(o *Options) { o.Reverify = true })
	if rev.NoOp {
		t.Error("--reverify resume reported a no-op")
	}
	if got := rec.tasksWith(EvGate, "live"); len(got) != 3 {
		t.Errorf("--reverify ran gates of %v live, want all 3", got)
	}
	if got := rec.tasksWith(EvUnitStarted, ""); len(got) != 0 {
		t.Errorf("--reverify dispatched %v", got)
	}
}

// A gate whose command changed since it was journaled is not replayed: it
// runs live, since the journaled result answers another question.
func TestResumeGateCommandChanged(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), "# Plan\n\n### Task 1: one\n\n```text path=out/a.txt\na\n```\n")
	s.Verify = "test -f out/a.txt"
	first, _ := rsRun(t, repo, s, "")
	if first.Verdict != "DONE" {
		t.Fatalf("first run: %s", first.Verdict)
	}
	s.Verify = "test -f out/missing.txt"
	out, rec := rsRun(t, repo, s, first.RunID)
	if got := rec.tasksWith(EvGate, "live"); strings.Join(got, ",") != "1" {
		t.Errorf("live gates %v, want task 1's (its command changed)", got)
	}
	if out.NoOp {
		t.Error("a changed gate command reported as a no-op")
	}
}

// Dry-run resume writes nothing: every file under the repository
// (.git and its implloop/ included) is byte-identical after.
func TestResumeDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo, parent := rsBase(t, rsPlan(3, "Shared context."), s)
	rsEditPlan(t, repo, func(p string) string { return strings.Replace(p, "hello 2\n", "hello two\n", 1) })
	before := rsTreeHash(t, repo)
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: parent, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if after := rsTreeHash(t, repo); after != before {
		t.Errorf("resume --dry-run changed the repository:\n%s", rsDiffLines(before, after))
	}
	var got []string
	for _, p := range out.Plan {
		got = append(got, p.Task+":"+p.Action)
	}
	if strings.Join(got, " ") != "1:replay 2:live 3:replay" {
		t.Errorf("dry-run plan %v", got)
	}
}

// rsTreeHash lists every file under dir with its size, mode, mtime and
// sha256.
func rsTreeHash(t *testing.T, dir string) string {
	t.Helper()
	c := exec.Command("sh", "-c", `find . -exec stat -c "%n|%s|%Y|%a" {} + | LC_ALL=C sort; find . -type f -exec sha256sum {} + | LC_ALL=C sort`)
	c.Dir = dir
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func rsDiffLines(a, b string) string {
	in := map[string]bool{}
	for _, l := range strings.Split(a, "\n") {
		in[l] = true
	}
	var out []string
	for _, l := range strings.Split(b, "\n") {
		if !in[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// kill -9 during task 3 of 5, then resume: 1-2 replay, 3-5 run live, DONE,
// and no unit completes twice.
func TestResumeAfterKill9(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(5)})
	agentPath, logDir := fakeAgent(t, `
echo "$IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"
echo "$IMPLLOOP_TASK_ID" >> "$LOG/calls"
if [ "$IMPLLOOP_TASK_ID" = 3 ] && [ -f "$LOG/hang" ]; then
	echo $$ > "$LOG/agent.pid"
	touch "$LOG/marker"
	exec sleep 300
fi`)
	writeFile(t, filepath.Join(logDir, "hang"), "")
	s := settingsFor(agentPath)
	child, output, agentPID := startAgentChild(t, Options{Settings: s, RepoRoot: repo}, logDir)
	kill9(t, child, agentPID)
	checkJournal(t, repo)

	j := openJournal(t, repo)
	runs, err := j.ListRuns()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v\n%s", runs, err, output)
	}
	killed := runs[0].ID
	j.Close()
	if err := os.Remove(filepath.Join(logDir, "hang")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(logDir, "calls"), "")

	out, rec := rsRun(t, repo, s, killed)
	if out.Verdict != "DONE" {
		t.Fatalf("resume: %s, want DONE", out.Verdict)
	}
	if got := rec.tasksWith(EvUnitReplayed, ""); strings.Join(got, ",") != "1,2" {
		t.Errorf("replayed %v, want 1,2", got)
	}
	if got := rec.tasksWith(EvUnitStarted, "live"); strings.Join(got, ",") != "3,4,5" {
		t.Errorf("live %v, want 3,4,5", got)
	}
	for _, p := range out.Plan {
		if p.Task == "3" && (p.Action != ActionLive || !strings.Contains(strings.Join(p.Reasons, ";"), "interrupted")) {
			t.Errorf("task 3 planned %s %v, want live because interrupted", p.Action, p.Reasons)
		}
	}
	if calls := strings.Fields(readFile(t, filepath.Join(logDir, "calls"))); strings.Join(calls, ",") != "3,4,5" {
		t.Errorf("the agent was called for %v, want 3,4,5", calls)
	}
	j = openJournal(t, repo)
	completed := map[string]int{} // identity -> live completed units in the lineage
	for _, run := range []string{killed, out.RunID} {
		us, err := j.Units(run)
		if err != nil {
			t.Fatal(err)
		}
		perTask := map[string]int{}
		for _, u := range us {
			if u.Status != cache.UnitCompleted {
				continue
			}
			perTask[u.TaskID]++
			if !u.Replayed() {
				completed[u.Identity]++
			}
		}
		for task, n := range perTask {
			if n > 1 {
				t.Errorf("run %s: task %s has %d completed units", run, task, n)
			}
		}
	}
	for id, n := range completed {
		if n > 1 {
			t.Errorf("identity %s completed live %d times", id, n)
		}
	}
}
