package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gittest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/report/")

func TestDecide(t *testing.T) {
	tasks := func(statuses ...cache.TaskStatus) []cache.Task {
		var ts []cache.Task
		for i, s := range statuses {
			ts = append(ts, cache.Task{TaskID: fmt.Sprint(i + 1), Status: s})
		}
		return ts
	}
	const (
		d = cache.TaskDone
		b = cache.TaskBlocked
		p = cache.TaskPending
		s = cache.TaskSkipped
		i = cache.TaskInterrupted
		r = cache.TaskRunning
	)
	cases := []struct {
		name     string
		tasks    []cache.Task
		headline string
		exit     int
	}{
		{"all done", tasks(d, d, d), "DONE 3/3", 0},
		{"skipped do not count against done", tasks(s, d, s, d), "DONE 2/2", 0},
		{"only skipped", tasks(s, s), "DONE 0/0", 0},
		{"nothing in range", nil, "DONE 0/0", 0},
		{"seed incident", tasks(d, d, d, d, d, d, d, d, d, b, p, p, p), "PARTIAL 9/13", 3},
		{"blocked first", tasks(b, p, p), "BLOCKED 0/3", 4},
		{"blocked with skipped done before", tasks(s, b), "BLOCKED 0/1", 4},
		{"continue past a block", tasks(d, b, d), "PARTIAL 2/3", 3},
		{"interrupted", tasks(d, i, p), "INTERRUPTED 1/3", 130},
		{"killed mid-task", tasks(d, d, r, p, p), "INCOMPLETE 2/5", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Decide(c.tasks)
			if o.Headline() != c.headline || o.Verdict.ExitCode() != c.exit {
				t.Errorf("got %s (exit %d), want %s (exit %d)", o.Headline(), o.Verdict.ExitCode(), c.headline, c.exit)
			}
		})
	}
}

var t0 = time.Date(2025, 11, 30, 5, 43, 1, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func newJournal(t *testing.T) (*cache.Journal, string) {
	t.Helper()
	root := gittest.New(t).Dir
	j, err := cache.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j, root
}

type fixture struct {
	t *testing.T
	j *cache.Journal
}

func (f fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// live journals a live unit with the given figures.
func (f fixture) live(run, task string, attempt int, start, end float64, in, out int64, cost float64, ok bool) cache.Unit {
	f.t.Helper()
	pre := fmt.Sprintf(`{"attempt":%d,"task":{"id":%q}}`, attempt, task)
	u := cache.Unit{RunID: run, UnitID: fmt.Sprintf("%s/implement~a%d", task, attempt), TaskID: task, Role: "implement",
		Attempt: attempt, Identity: "u1:" + cache.HashBytes([]byte(pre)), Preimage: []byte(pre), StartedAt: at(start)}
	f.must(f.j.StartUnit(u))
	res, err := f.j.PutBlob([]byte(`{"result":"ok"}`))
	f.must(err)
	o := cache.Outcome{Status: cache.UnitCompleted, Result: res, TokensIn: in, TokensOut: out, CacheRead: in / 2,
		CostUSD: cost, FinishedAt: at(end)}
	if !ok {
		o = cache.Outcome{Status: cache.UnitFailed, ExitCode: 1, Error: "exit 1", TokensIn: in, TokensOut: out, CostUSD: cost, FinishedAt: at(end)}
	}
	f.must(f.j.FinishUnit(run, u.UnitID, o))
	got, err := f.j.GetUnit(run, u.UnitID)
	f.must(err)
	return *got
}

func (f fixture) task(run, id string, ord int, title string, st cache.TaskStatus, src cache.Source, attempts int, secs float64, mod func(*cache.Task)) {
	f.t.Helper()
	tk := cache.Task{RunID: run, TaskID: id, Ordinal: ord, Title: title, Status: st, Source: src, Attempts: attempts,
		Duration: time.Duration(secs * float64(time.Second))}
	if mod != nil {
		mod(&tk)
	}
	f.must(f.j.PutTask(tk))
}

func (f fixture) gate(run, task string, attempt int, passed, replayed bool) {
	f.t.Helper()
	f.must(f.j.PutGate(cache.Gate{RunID: run, TaskID: task, Attempt: attempt, Command: "go test ./...", Passed: passed,
		Replayed: replayed, At: t0}))
}

// seed builds the two runs of the seed incident, shortened: a first run
// that ends PARTIAL with task 4 blocked, and its resume that replays 1-3
// and runs 4-5 live to DONE.
func seed(t *testing.T) (*cache.Journal, string, string) {
	j, _ := newJournal(t)
	f := fixture{t, j}
	a := &cache.Run{ID: "20251130-054301-a1b2c3", PlanPath: "plan.md", PlanSHA256: strings.Repeat("3f9a0c", 10) + "1b2d", StartedAt: t0}
	f.must(j.CreateRun(a))
	f.task(a.ID, "0", 0, "Read the spec", cache.TaskSkipped, cache.SourceNone, 0, 0, nil)
	u1 := f.live(a.ID, "1", 1, 0, 12.3, 12345, 1234, 0.0123, true)
	f.gate(a.ID, "1", 1, true, false)
	f.task(a.ID, "1", 1, "Add the | parser", cache.TaskDone, cache.SourceLive, 1, 14.1, nil)
	u2 := f.live(a.ID, "2", 1, 15, 75, 40000, 5000, 0.25, true)
	f.gate(a.ID, "2", 1, true, false)
	f.task(a.ID, "2", 2, "Wire the CLI", cache.TaskDone, cache.SourceLive, 1, 62, func(t *cache.Task) {
		t.Concerns = []string{"HEAD moved a1b2c3d -> c3d4e5f during the task (nothing lost)"}
	})
	f.live(a.ID, "3", 1, 80, 90, 1000, 100, 0.01, false)
	f.gate(a.ID, "3", 1, false, false)
	u3 := f.live(a.ID, "3", 2, 91, 101, 1100, 120, 0.011, true)
	f.gate(a.ID, "3", 2, true, false)
	f.task(a.ID, "3", 3, "Tests", cache.TaskDone, cache.SourceLive, 2, 25, nil)
	for at := 1; at <= 3; at++ {
		f.live(a.ID, "4", at, 110+float64(at)*10, 115+float64(at)*10, 2000, 300, 0.02, true)
		f.gate(a.ID, "4", at, false, false)
	}
	f.task(a.ID, "4", 4, "Write out/f10.txt", cache.TaskBlocked, cache.SourceLive, 3, 45, func(t *cache.Task) {
		t.BlockReason = "gate failed after 3 attempts: go test ./... exited 1\n--- FAIL: TestF10 (0.00s)\n    f10_test.go:9: open out/f10.txt: no such file or directory\nFAIL"
		t.LostPaths = []string{"internal/parse.go", "odd `name`.txt"}
	})
	f.task(a.ID, "5", 5, "Docs", cache.TaskPending, cache.SourceNone, 0, 0, nil)
	f.must(j.FinishRun(a.ID, "PARTIAL", 3, at(150)))

	b := &cache.Run{ID: "20251130-060000-d4e5f6", ParentID: a.ID, PlanPath: "plan.md", PlanSHA256: strings.Repeat("77", 32), StartedAt: at(1000)}
	f.must(j.CreateRun(b))
	f.task(b.ID, "0", 0, "Read the spec", cache.TaskSkipped, cache.SourceNone, 0, 0, nil)
	for i, u := range []cache.Unit{u1, u2, u3} {
		_, err := j.AddReplayedUnit(b.ID, u.UnitID, &u)
		f.must(err)
		f.gate(b.ID, u.TaskID, u.Attempt, true, true)
		title := []string{"Add the | parser", "Wire the CLI", "Tests"}[i]
		f.task(b.ID, u.TaskID, i+1, title, cache.TaskDone, cache.SourceReplayed, u.Attempt, 0.004, nil)
	}
	f.live(b.ID, "4", 4, 1001, 1030, 3000, 400, 0.03, true)
	f.gate(b.ID, "4", 4, true, false)
	f.task(b.ID, "4", 4, "Write out/f10.txt", cache.TaskDone, cache.SourceLive, 4, 31, nil)
	f.live(b.ID, "5", 1, 1032, 1040, 500, 50, 0.005, true)
	f.gate(b.ID, "5", 1, true, false)
	f.task(b.ID, "5", 5, "Docs", cache.TaskDone, cache.SourceLive, 1, 9, nil)
	f.must(j.FinishRun(b.ID, "DONE", 0, at(1042.5)))
	return j, a.ID, b.ID
}

func TestBuildFigures(t *testing.T) {
	j, a, b := seed(t)
	ra, err := Build(j, a)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Headline != "PARTIAL 3/5" || ra.ExitCode != 3 || ra.Outcome.Skipped != 1 || ra.WallMS != 150000 {
		t.Errorf("first run: %s exit %d skipped %d wall %d", ra.Headline, ra.ExitCode, ra.Outcome.Skipped, ra.WallMS)
	}
	// Live totals: every attempt, the failed one included.
	us, _ := j.Units(a)
	var in, out int64
	var cost float64
	for _, u := range us {
		in, out, cost = in+u.TokensIn, out+u.TokensOut, cost+u.CostUSD
	}
	if tl := ra.Totals.Live; tl.Units != len(us) || tl.TokensIn != in || tl.TokensOut != out || tl.CostUSD != cost || ra.Totals.Saved.Units != 0 {
		t.Errorf("live totals %+v, want %d units %d/%d $%v", tl, len(us), in, out, cost)
	}
	if task3 := ra.Tasks[3]; task3.ID != "3" || task3.Live.Units != 2 || task3.Live.TokensIn != 2100 || task3.Attempts != 2 {
		t.Errorf("task 3 = %+v", task3)
	}
	if ra.Totals.GatesLive != 7 {
		t.Errorf("gates live = %d", ra.Totals.GatesLive)
	}

	rb, err := Build(j, b)
	if err != nil {
		t.Fatal(err)
	}
	if rb.Headline != "DONE 5/5" || rb.ExitCode != 0 || rb.ParentID != a {
		t.Errorf("resume: %s exit %d parent %s", rb.Headline, rb.ExitCode, rb.ParentID)
	}
	// Replayed units cost nothing now: they are saved, not spent.
	if rb.Totals.Live.Units != 2 || rb.Totals.Saved.Units != 3 || rb.Totals.Live.TokensIn != 3500 ||
		rb.Totals.Saved.TokensIn != 12345+40000+1100 || rb.Totals.GatesReplayed != 3 || rb.Totals.GatesLive != 2 {
		t.Errorf("resume totals %+v", rb.Totals)
	}
	for _, task := range rb.Tasks[1:4] {
		if task.Source != "replayed" || task.Live.Units != 0 || task.Saved.Units != 1 {
			t.Errorf("replayed task %+v", task)
		}
	}
}

func TestIncompleteRun(t *testing.T) {
	j, _ := newJournal(t)
	f := fixture{t, j}
	r := &cache.Run{ID: "20251130-070000-000001", PlanPath: "plan.md", PlanSHA256: strings.Repeat("0", 64), StartedAt: t0}
	f.must(j.CreateRun(r))
	f.live(r.ID, "1", 1, 0, 10, 100, 10, 0.001, true)
	f.task(r.ID, "1", 1, "One", cache.TaskDone, cache.SourceLive, 1, 10, nil)
	u := cache.Unit{RunID: r.ID, UnitID: "2/implement~a1", TaskID: "2", Role: "implement", Attempt: 1, Identity: "u1:x",
		Preimage: []byte(`{}`), StartedAt: at(11)}
	f.must(j.StartUnit(u))
	f.task(r.ID, "2", 2, "Two", cache.TaskRunning, cache.SourceLive, 1, 0, nil)
	f.task(r.ID, "3", 3, "Three", cache.TaskPending, cache.SourceNone, 0, 0, nil)
	rep, err := Build(j, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Headline != "INCOMPLETE 1/3" || rep.Finished || rep.WallMS != 11000 || rep.Totals.Live.Units != 2 {
		t.Errorf("report %s finished %v wall %d units %d", rep.Headline, rep.Finished, rep.WallMS, rep.Totals.Live.Units)
	}
	golden(t, "incomplete", rep)
}

func TestGoldens(t *testing.T) {
	j, a, b := seed(t)
	for name, id := range map[string]string{"partial": a, "resumed-done": b} {
		r, err := Build(j, id)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, name, r)
	}
}

func golden(t *testing.T, name string, r *Report) {
	t.Helper()
	var term bytes.Buffer
	if err := Terminal(&term, r); err != nil {
		t.Fatal(err)
	}
	for ext, got := range map[string][]byte{".txt": term.Bytes(), ".md": Markdown(r), ".json": JSON(r)} {
		path := filepath.Join("..", "testdata", "report", name+ext)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./report -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (go test ./report -update, then review the diff):\n%s", path, got)
		}
	}
}

func TestWrite(t *testing.T) {
	j, _, b := seed(t)
	r, err := Build(j, b)
	if err != nil {
		t.Fatal(err)
	}
	dir := j.Dir()
	md, js, err := Write(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(j.Root(), ".git", "implloop", "runs", b, "report.md"); md != want {
		t.Errorf("md path %s, want %s", md, want)
	}
	got, _ := os.ReadFile(md)
	if !bytes.Equal(got, Markdown(r)) {
		t.Error("report.md differs from Markdown()")
	}
	var back Report
	raw, _ := os.ReadFile(js)
	if err := json.Unmarshal(raw, &back); err != nil || back.Headline != r.Headline || len(back.Tasks) != len(r.Tasks) {
		t.Errorf("report.json: %v %+v", err, back)
	}
	// Rewriting replaces in place and leaves no temp file.
	if _, _, err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(filepath.Dir(md))
	if len(es) != 2 {
		t.Errorf("runs/%s holds %d entries", b, len(es))
	}
}

func TestBuildUnknownRun(t *testing.T) {
	j, _ := newJournal(t)
	if _, err := Build(j, "nope"); err == nil {
		t.Error("report of an unknown run")
	}
}

// A journal that holds figures no loop writes (another program's, a
// pulled run's): the report leaves the impossible ones out and its sums
// saturate, so its JSON, markdown and text are written, never a panic and
// never a negative or infinite total.
func TestHostileJournalFigures(t *testing.T) {
	j, _ := newJournal(t)
	f := fixture{t, j}
	f.must(j.CreateRun(&cache.Run{ID: "r1", PlanPath: "plan.md", PlanSHA256: "00", StartedAt: t0}))
	for i, fig := range []struct {
		in, out int64
		cost    float64
	}{
		{1, 1, 1e308}, {2, 2, 1e308}, {-5, math.MaxInt64, -3}, {math.MaxInt64, 3, math.Inf(1)}, {4, 4, 0.5},
	} {
		id := fmt.Sprint(i + 1)
		f.task("r1", id, i+1, "t", cache.TaskDone, cache.SourceLive, 1, 1, nil)
		f.live("r1", id, 1, float64(i), float64(i)+0.5, fig.in, fig.out, fig.cost, true)
	}
	f.must(j.FinishRun("r1", "DONE", 0, at(10)))
	r, err := Build(j, "r1")
	if err != nil {
		t.Fatal(err)
	}
	l := r.Totals.Live
	if l.TokensIn != math.MaxInt64 || l.TokensOut != math.MaxInt64 || l.CostUSD != math.MaxFloat64 || l.CostReported != 3 {
		t.Errorf("totals %+v, want saturated sums of the possible figures", l)
	}
	if b := JSON(r); !json.Valid(b) {
		t.Errorf("invalid JSON")
	}
	_ = Markdown(r)
	var buf bytes.Buffer
	if err := Terminal(&buf, r); err != nil {
		t.Fatal(err)
	}
}

// "not reported", never zeros, where no call reported a figure.
func TestNotReported(t *testing.T) {
	j, _ := newJournal(t)
	f := fixture{t, j}
	f.must(j.CreateRun(&cache.Run{ID: "r1", PlanPath: "plan.md", PlanSHA256: "00", StartedAt: t0}))
	f.task("r1", "1", 1, "t", cache.TaskDone, cache.SourceLive, 1, 1, nil)
	f.live("r1", "1", 1, 0, 1, 0, 0, 0, true)
	f.must(j.FinishRun("r1", "DONE", 0, at(10)))
	r, err := Build(j, "r1")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Terminal(&buf, r); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "not reported") || strings.Contains(s, "$0.0000") || !strings.Contains(s, "spent: tokens not reported, cost not reported") {
		t.Errorf("terminal report:\n%s", s)
	}
	if md := string(Markdown(r)); strings.Contains(md, "$0.0000") || !strings.Contains(md, "| cost | not reported | - |") {
		t.Errorf("markdown report:\n%s", md)
	}
}

// The lanes of a --jobs run name what they show: a newcomer could not
// read "  1  0 0.0-0.0s, 2 0.1-0.1s".
func TestTerminalLanesSayTaskAndLane(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	at := func(task string, attempt, lane int, from, to float64) Attempt {
		return Attempt{Task: task, Attempt: attempt, Lane: lane,
			Start: t0.Add(time.Duration(from * float64(time.Second))), End: t0.Add(time.Duration(to * float64(time.Second)))}
	}
	r := &Report{Headline: "DONE 3/3", Attempts: []Attempt{at("0", 1, 0, 0, 0.04), at("1", 1, 1, 0.1, 2.2), at("2", 1, 0, 0.1, 0.15), at("2", 2, 0, 2.3, 4)}}
	var b bytes.Buffer
	if err := Terminal(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n  lane 1: task 0 0.0-0.0s, task 2 0.1-0.1s, task 2 (attempt 2) 2.3-4.0s\n",
		"\n  lane 2: task 1 0.1-2.2s\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("terminal report lacks %q:\n%s", want, b.String())
		}
	}
}
