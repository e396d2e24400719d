package loop

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/internal/rapidcases"
	"pgregory.net/rapid"
)

// TestReplayPropertyNeedsItsWork is a property test of "a resume checks the
// work it replays" (docs/boundary.md, issue 12). Each case runs a plan of 3
// or 4 tasks to DONE in a real repository; task i writes out/fi.txt (over a
// committed seed, sometimes), and sometimes a later task k appends to an
// earlier task j's file. Then the user does 1 to 4 things between the runs
// (deletes, reverts or edits a task's file, commits, resets, cleans, edits a
// task's text in the plan), and the run is resumed. The properties:
//
//   - (a) the resume ends DONE and the tree is what a model of the rules
//     says: tasks in plan order, a changed task runs its agent, a replayed
//     task's path that holds its before-content gets its after-content
//     back, and anything else (a user's edit, a deletion of a file that
//     was there before the run) is kept;
//   - (b) the agent ran for exactly the tasks whose text changed (no
//     dependencies are declared), in plan order;
//   - (c) when the tree's content differs from the parent's last boundary
//     no gate result is replayed, and the resume is "nothing changed"
//     exactly when neither the plan nor the tree changed;
//   - (d) the journal's invariants hold after both runs.
//
// In half the cases the agent's output carries its call number, so that a
// task run again never writes what a commit holds (which the guard would
// rightly call a discard of the user's change); in the other half it
// writes the same every time, and the user makes no commits.
//
// It found a bug, fixed since: a task that ran live took a later replayed
// task's work away (the work check saw only the tree at the start), see
// testdata/script/resume_live_clobbers_replay.txtar.
func TestReplayPropertyNeedsItsWork(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two loops per case in real repositories")
	}
	// replayChecks cases by default; -rapid.checks=N for more.
	defer rapidcases.Default(replayChecks)()
	rapid.Check(t, func(rt *rapid.T) {
		c := newReplayCase(t, rt)
		defer c.cleanup()
		c.run()
	})
}

// rapidTB lets the package's helpers (newRepo, fakeAgent, checkJournal)
// fail a rapid case instead of the whole test, and makes their temporary
// directories under the case's own, removed when the case ends.
type rapidTB struct {
	testing.TB
	rt   *rapid.T
	root string
	n    int
}

func (r *rapidTB) Helper()                      {}
func (r *rapidTB) Fatal(args ...any)            { r.rt.Fatal(args...) }
func (r *rapidTB) Fatalf(f string, args ...any) { r.rt.Fatalf(f, args...) }
func (r *rapidTB) Error(args ...any)            { r.rt.Error(args...) }
func (r *rapidTB) Errorf(f string, args ...any) { r.rt.Errorf(f, args...) }
func (r *rapidTB) Log(args ...any)              { r.rt.Log(args...) }
func (r *rapidTB) Logf(f string, args ...any)   { r.rt.Logf(f, args...) }
func (r *rapidTB) Fail()                        { r.rt.Fail() }
func (r *rapidTB) FailNow()                     { r.rt.FailNow() }
func (r *rapidTB) Failed() bool                 { return r.rt.Failed() }
func (r *rapidTB) Cleanup(func())               { panic("rapidTB: no Cleanup; the case removes its directory") }

func (r *rapidTB) TempDir() string {
	r.n++
	d := filepath.Join(r.root, fmt.Sprintf("%03d", r.n))
	if err := os.Mkdir(d, 0o755); err != nil {
		r.rt.Fatal(err)
	}
	return d
}

// absent is the model's content of a path that does not exist.
const absent = "\x00absent"

// effect is one path a task changed in the first run.
type effect struct{ path, before, after string }

type replayCase struct {
	rt   *rapid.T
	tb   *rapidTB
	repo string
	n    int
	// seeds: task -> the content of its file in the start commit (absent:
	// none).
	seeds map[int]string
	// rewriter appends to task rewritten's file (0: no such task).
	rewriter, rewritten int
	// det: the agent writes the same content every time it runs (else
	// its output carries its call number).
	det        bool
	agent, log string
	start      string // the start commit
	edits      int    // user edits so far (their contents differ)
}

func newReplayCase(t *testing.T, rt *rapid.T) *replayCase {
	root, err := os.MkdirTemp("", "replay-prop-")
	if err != nil {
		rt.Fatal(err)
	}
	c := &replayCase{rt: rt, tb: &rapidTB{TB: t, rt: rt, root: root}, seeds: map[int]string{}}
	c.n = rapid.IntRange(3, 4).Draw(rt, "tasks")
	if rapid.IntRange(0, 2).Draw(rt, "rewrite") > 0 {
		c.rewriter = rapid.IntRange(2, c.n).Draw(rt, "rewriter")
		c.rewritten = rapid.IntRange(1, c.rewriter-1).Draw(rt, "rewritten")
	}
	c.det = rapid.Bool().Draw(rt, "deterministic")
	files := map[string]string{"plan.md": replayPlan(c.n, nil)}
	for i := 1; i <= c.n; i++ {
		c.seeds[i] = absent
		if rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("seed%d", i)) == 0 {
			c.seeds[i] = fmt.Sprintf("seed %d\n", i)
			files[taskFile(i)] = c.seeds[i]
		}
	}
	c.repo = newRepo(c.tb, files)
	c.start = git(c.tb, c.repo, "rev-parse", "HEAD")
	body := `n=$(( $(cat "$LOG/calls" 2>/dev/null | wc -l) + 1 ))
echo "$IMPLLOOP_TASK_ID" >> "$LOG/calls"
mkdir -p out
sfx=" call $n"
` + map[bool]string{true: "sfx=\n"}[c.det] + `echo "task $IMPLLOOP_TASK_ID$sfx" > "out/f$IMPLLOOP_TASK_ID.txt"`
	if c.rewriter > 0 {
		body += fmt.Sprintf("\nif [ \"$IMPLLOOP_TASK_ID\" = %d ]; then echo \"more %d$sfx\" >> out/f%d.txt; fi", c.rewriter, c.rewriter, c.rewritten)
	}
	c.agent, c.log = fakeAgent(c.tb, body)
	rt.Logf("%d tasks, seeds %v, task %d appends to task %d's file, same output every call: %v", c.n, c.seeds, c.rewriter, c.rewritten, c.det)
	return c
}

func (c *replayCase) cleanup() { os.RemoveAll(c.tb.root) }

// out is what task i's agent writes to its file on call n.
func (c *replayCase) out(i, n int) string {
	if c.det {
		return fmt.Sprintf("task %d\n", i)
	}
	return fmt.Sprintf("task %d call %d\n", i, n)
}

// more is what the rewriter appends to the rewritten task's file on call
// n.
func (c *replayCase) more(n int) string {
	if c.det {
		return fmt.Sprintf("more %d\n", c.rewriter)
	}
	return fmt.Sprintf("more %d call %d\n", c.rewriter, n)
}

func taskFile(i int) string { return fmt.Sprintf("out/f%d.txt", i) }

// replayLine is the line of task i's text that a plan edit changes.
func replayLine(i int) string { return fmt.Sprintf("Write out/f%d.txt.", i) }

// replayPlan is a plan of n tasks; edits[i] is appended to task i's line.
func replayPlan(n int, edits map[int]string) string {
	var b strings.Builder
	b.WriteString("# Plan\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "### Task %d: Step %d\n\n%s%s\n\n", i, i, replayLine(i), edits[i])
	}
	return b.String()
}

// tree is the content of every file of the work tree but the plan and
// .git, absent ones left out.
func (c *replayCase) tree() map[string]string {
	m := map[string]string{}
	err := filepath.WalkDir(c.repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.repo, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "plan.md" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m[rel] = string(b)
		return nil
	})
	if err != nil {
		c.rt.Fatal(err)
	}
	return m
}

func get(m map[string]string, p string) string {
	if v, ok := m[p]; ok {
		return v
	}
	return absent
}

func (c *replayCase) calls() []string {
	b, err := os.ReadFile(filepath.Join(c.log, "calls"))
	if err != nil {
		c.rt.Fatal(err)
	}
	return strings.Fields(string(b))
}

func (c *replayCase) resume(parent string) *Outcome {
	s := settingsFor(c.agent)
	s.Verify = "test -f README"
	var short *Outcome
	if parent != "" {
		var err error
		short, err = Run(context.Background(), Options{Settings: s, RepoRoot: c.repo, Parent: parent})
		if err != nil {
			c.rt.Fatalf("resume (parent %q): %v", parent, err)
		}
		if !short.UpToDate {
			checkJournal(c.tb, c.repo)
			return short
		}
	}
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: c.repo, Parent: parent, Full: true})
	if err != nil {
		c.rt.Fatalf("run (parent %q): %v", parent, err)
	}
	checkJournal(c.tb, c.repo)
	// A resume answered without a run (nothing changed) must agree with
	// the same resume planned in full, which the checks then look at.
	if short != nil && (!out.NoOp || out.Verdict != short.Verdict) {
		c.rt.Fatalf("answered as up to date (%s), but the full resume: NoOp=%v %s", short.Headline, out.NoOp, out.Verdict)
	}
	return out
}

func (c *replayCase) run() {
	rt := c.rt
	first := c.resume("")
	if first.Verdict != "DONE" {
		rt.Fatalf("first run: %s", first.Verdict)
	}
	// The model of the first run, checked against it, gives each task's
	// effect.
	effects := map[int][]effect{}
	sim := map[string]string{}
	for i := 1; i <= c.n; i++ {
		sim[taskFile(i)] = c.seeds[i]
	}
	for i := 1; i <= c.n; i++ {
		after := c.out(i, i)
		effects[i] = append(effects[i], effect{taskFile(i), sim[taskFile(i)], after})
		sim[taskFile(i)] = after
		if i == c.rewriter {
			p := taskFile(c.rewritten)
			after := strings.TrimPrefix(sim[p], absent) + c.more(i)
			effects[i] = append(effects[i], effect{p, sim[p], after})
			sim[p] = after
		}
	}
	end := c.tree()
	for p, want := range sim {
		if got := get(end, p); got != want {
			rt.Fatalf("first run: %s = %q, want %q", p, got, want)
		}
	}

	// Between the runs.
	planEdits := map[int]string{}
	for k, n := 0, rapid.IntRange(1, 4).Draw(rt, "actions"); k < n; k++ {
		c.act(planEdits)
	}

	// What the resume should do, from the tree and plan it starts with.
	pre := c.tree()
	planNow := readFile(c.tb, filepath.Join(c.repo, "plan.md"))
	var changed []int
	for i := 1; i <= c.n; i++ {
		if !strings.Contains(planNow, replayLine(i)+"\n") {
			changed = append(changed, i)
		}
	}
	treeChanged := !mapsEqual(pre, end)
	want := map[string]string{}
	for p, v := range pre {
		want[p] = v
	}
	call := len(c.calls())
	var wantCalls []string
	for i := 1; i <= c.n; i++ {
		if slices.Contains(changed, i) {
			call++
			wantCalls = append(wantCalls, fmt.Sprint(i))
			want[taskFile(i)] = c.out(i, call)
			if i == c.rewriter {
				p := taskFile(c.rewritten)
				want[p] = strings.TrimPrefix(get(want, p), absent) + c.more(call)
			}
			continue
		}
		for _, e := range effects[i] {
			if get(want, e.path) == e.before {
				want[e.path] = e.after
			}
		}
	}
	for p, v := range want {
		if v == absent {
			delete(want, p)
		}
	}
	before := len(c.calls())
	rt.Logf("resume: tasks changed %v, tree changed %v", changed, treeChanged)

	out := c.resume(first.RunID)
	var plan []string
	for _, p := range out.Plan {
		plan = append(plan, p.Task+":"+p.Action)
	}
	rt.Logf("resume plan %v, verdict %s", plan, out.Verdict)

	// (a)
	if out.Verdict != "DONE" {
		rt.Fatalf("resume: %s", out.Verdict)
	}
	got := c.tree()
	// KNOWN BUG (excluded; see resume_live_clobbers_replay.txtar): the
	// work check runs once, before the resume plans, against the tree as
	// the restores will leave it, not as the live tasks before a replayed
	// task leave it. When the rewritten task runs again (its text changed)
	// and writes what it wrote in the parent, the rewriter's append is gone
	// (its file holds the rewriter's before-content again), yet the
	// rewriter replays without a restore: its work is not in the tree
	// after a DONE resume. Only that file's content is not checked then.

	for _, p := range sortedKeys(got, want) {
		if get(got, p) != get(want, p) {
			rt.Errorf("after the resume %s = %q, want %q", p, get(got, p), get(want, p))
		}
	}
	// (b)
	if gotCalls := c.calls()[before:]; !slices.Equal(gotCalls, wantCalls) {
		rt.Errorf("the resume called the agent for tasks %v, want %v", gotCalls, wantCalls)
	}
	// (c)
	j, err := cache.Open(c.repo)
	if err != nil {
		rt.Fatal(err)
	}
	defer j.Close()
	gates, err := j.Gates(out.RunID, "")
	if err != nil {
		rt.Fatal(err)
	}
	gated := map[string]bool{}
	for _, g := range gates {
		gated[g.TaskID] = true
		if treeChanged && g.Replayed {
			rt.Errorf("task %s's gate (attempt %d) replayed on a changed tree", g.TaskID, g.Attempt)
		}
	}
	for i := 1; i <= c.n; i++ {
		if !gated[fmt.Sprint(i)] {
			rt.Errorf("task %d has no gate row in the resume", i)
		}
	}
	if noop := !treeChanged && len(changed) == 0; out.NoOp != noop {
		rt.Errorf("resume NoOp = %v, want %v", out.NoOp, noop)
	}
}

// act does one thing a user might between the runs.
func (c *replayCase) act(planEdits map[int]string) {
	rt := c.rt
	pick := func() int { return rapid.IntRange(1, c.n).Draw(rt, "task") }
	full := func(i int) string { return filepath.Join(c.repo, filepath.FromSlash(taskFile(i))) }
	actions := []string{"delete", "revert", "checkout", "edit", "commit", "reset", "clean", "plan"}
	if c.det {
		// An agent that runs again and writes what a commit holds over
		// the user's uncommitted change (a deletion, an edit) discards
		// it, and the guard rightly blocks: no commits with that agent.
		actions = slices.DeleteFunc(actions, func(a string) bool { return a == "commit" })
	}
	switch a := rapid.SampledFrom(actions).Draw(rt, "action"); a {
	case "delete":
		i := pick()
		_ = os.Remove(full(i))
		rt.Logf("rm %s", taskFile(i))
	case "revert":
		i := pick()
		if c.seeds[i] == absent {
			_ = os.Remove(full(i))
		} else {
			writeFile(c.tb, full(i), c.seeds[i])
		}
		rt.Logf("revert %s to its start content", taskFile(i))
	case "checkout":
		i := pick()
		_, err := gitErr(c, "checkout", "--", taskFile(i))
		rt.Logf("git checkout -- %s (%v)", taskFile(i), err)
	case "edit":
		i := pick()
		c.edits++
		writeFile(c.tb, full(i), fmt.Sprintf("user edit %d\n", c.edits))
		rt.Logf("edit %s (user edit %d)", taskFile(i), c.edits)
	case "commit":
		git(c.tb, c.repo, "add", "-A")
		git(c.tb, c.repo, "commit", "-q", "--allow-empty", "-m", "user")
		rt.Logf("git add -A && git commit")
	case "reset":
		to := c.start
		if _, err := gitErr(c, "rev-parse", "--verify", "-q", "HEAD~1"); err == nil && rapid.Bool().Draw(rt, "reset-back") {
			to = "HEAD~1"
		}
		git(c.tb, c.repo, "reset", "-q", "--hard", to)
		rt.Logf("git reset --hard %s", to)
	case "clean":
		git(c.tb, c.repo, "clean", "-q", "-fd")
		rt.Logf("git clean -fd")
	case "plan":
		i := pick()
		c.edits++
		planEdits[i] += fmt.Sprintf(" Edit %d.", c.edits)
		writeFile(c.tb, filepath.Join(c.repo, "plan.md"), replayPlan(c.n, planEdits))
		rt.Logf("edit task %d's text in the plan", i)
	default:
		rt.Fatalf("action %s", a)
	}
}

func gitErr(c *replayCase, args ...string) (string, error) {
	return gittest.At(c.tb, c.repo).GitErr(args...)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sortedKeys(ms ...map[string]string) []string {
	var ks []string
	for _, m := range ms {
		for k := range m {
			if !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	return ks
}
