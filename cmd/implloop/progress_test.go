package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/loop"
)

// fakeTerm is the screen a terminal would show for what progress writes:
// it understands the escapes the live block uses (carriage return, new
// line, cursor up, erase below, erase line) and fails on any other.
type fakeTerm struct {
	t        *testing.T
	rows     [][]rune
	row, col int
}

func (f *fakeTerm) Write(b []byte) (int, error) {
	s := []rune(string(b))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r':
			f.col = 0
		case '\n':
			f.row, f.col = f.row+1, 0
		case '\x1b':
			j := i + 2
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if i+1 >= len(s) || s[i+1] != '[' || j >= len(s) {
				f.t.Fatalf("a cut escape in %q", string(b))
			}
			n, _ := strconv.Atoi(string(s[i+2 : j]))
			switch s[j] {
			case 'A':
				f.row = max(f.row-max(n, 1), 0)
			case 'J':
				f.line()
				f.rows[f.row] = f.rows[f.row][:min(f.col, len(f.rows[f.row]))]
				f.rows = f.rows[:f.row+1]
			case 'K':
				f.line()
				f.rows[f.row] = nil
			default:
				f.t.Fatalf("an escape the live block should not use: %q", string(s[i:j+1]))
			}
			i = j
		default:
			f.line()
			for len(f.rows[f.row]) <= f.col {
				f.rows[f.row] = append(f.rows[f.row], ' ')
			}
			f.rows[f.row][f.col] = c
			f.col++
		}
	}
	return len(b), nil
}

func (f *fakeTerm) line() {
	for len(f.rows) <= f.row {
		f.rows = append(f.rows, nil)
	}
}

// screen is what the terminal shows, one string a line, blank lines at the
// end dropped.
func (f *fakeTerm) screen() []string {
	var out []string
	for _, r := range f.rows {
		out = append(out, strings.TrimRight(string(r), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// waveEvents is a run of three tasks whose tasks 2 and 3 form a wave
// (--jobs 2), as the loop emits them, with the clock each one comes at.
func waveEvents() []struct {
	at time.Duration
	ev loop.Event
} {
	task := func(typ, id string, idx int) loop.Event {
		return loop.Event{Type: typ, Task: id, Title: "title " + id, Index: idx, Count: 3}
	}
	with := func(e loop.Event, f func(*loop.Event)) loop.Event { f(&e); return e }
	fin := func(id string, idx int) loop.Event {
		return with(task(loop.EvTaskFinished, id, idx), func(e *loop.Event) { e.Status, e.Source, e.Attempt, e.Millis = "done", "live", 1, 1500 })
	}
	ahead := func(id string, idx int, status string, ms int64) loop.Event {
		return with(task(loop.EvAhead, id, idx), func(e *loop.Event) {
			e.Status, e.Millis, e.Worktree = status, ms, ".git/implloop/worktrees/R/w"+strconv.Itoa(idx-1)
		})
	}
	unit := func(id string, idx int) loop.Event {
		return with(task(loop.EvUnitStarted, id, idx), func(e *loop.Event) { e.Attempt, e.Reasons = 1, []string{"never ran"} })
	}
	return []struct {
		at time.Duration
		ev loop.Event
	}{
		{0, loop.Event{Type: loop.EvRunStarted, RunID: "R", Plan: "plan.md", Count: 3, PlanSHA: "abcdef0123456789"}},
		{0, task(loop.EvTaskStarted, "1", 1)},
		{0, unit("1", 1)},
		{time.Second, fin("1", 1)},
		{time.Second, ahead("2", 2, "running", 0)},
		{time.Second, ahead("3", 3, "running", 0)},
		{time.Second, task(loop.EvTaskStarted, "2", 2)}, // 6: its turn, its call still running
		{2 * time.Second, ahead("3", 3, "returned", 1000)},
		{3 * time.Second, ahead("2", 2, "returned", 2000)},
		{3 * time.Second, unit("2", 2)}, // 9
		{4 * time.Second, fin("2", 2)},  // 10
		{4 * time.Second, task(loop.EvTaskStarted, "3", 3)},
		{4 * time.Second, unit("3", 3)},
		{5 * time.Second, fin("3", 3)},
	}
}

// On a terminal, calls made ahead get a line each in the live block,
// redrawn in place while they run and until their task's turn; what
// stays on the screen is the plain summary line of each task.
func TestProgressLiveBlockOfAWave(t *testing.T) {
	ft := &fakeTerm{t: t}
	p := startProgress(&ioStreams{Out: &bytes.Buffer{}, ErrOut: ft}, false, true, 0, 0)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock time.Duration
	p.now = func() time.Time { return t0.Add(clock) }
	want := map[int][]string{
		5: {
			"implloop: run R: plan.md, 3 task(s), plan sha256 abcdef012345",
			"✓ [1/3] task 1 title 1: done, live, 1 attempt(s), 1.5s",
			"⠋ [2/3] task 2 title 2  0s  running ahead in worktree w1",
			"⠋ [3/3] task 3 title 3  0s  running ahead in worktree w2",
		},
		6: {
			"implloop: run R: plan.md, 3 task(s), plan sha256 abcdef012345",
			"✓ [1/3] task 1 title 1: done, live, 1 attempt(s), 1.5s",
			"⠋ [2/3] task 2 title 2  0s  running ahead in worktree w1",
			"⠋ [3/3] task 3 title 3  0s  running ahead in worktree w2",
		},
		7: {
			"implloop: run R: plan.md, 3 task(s), plan sha256 abcdef012345",
			"✓ [1/3] task 1 title 1: done, live, 1 attempt(s), 1.5s",
			"⠋ [2/3] task 2 title 2  1s  running ahead in worktree w1",
			"· [3/3] task 3 title 3  agent back after 1s, waits for its turn",
		},
		9: {
			"implloop: run R: plan.md, 3 task(s), plan sha256 abcdef012345",
			"✓ [1/3] task 1 title 1: done, live, 1 attempt(s), 1.5s",
			"⠋ [2/3] task 2 title 2  2s  attempt 1  live  never ran",
			"· [3/3] task 3 title 3  agent back after 1s, waits for its turn",
		},
		10: {
			"implloop: run R: plan.md, 3 task(s), plan sha256 abcdef012345",
			"✓ [1/3] task 1 title 1: done, live, 1 attempt(s), 1.5s",
			"✓ [2/3] task 2 title 2: done, live, 1 attempt(s), 1.5s",
			"· [3/3] task 3 title 3  agent back after 1s, waits for its turn",
		},
	}
	evs := waveEvents()
	for i, x := range evs {
		clock = x.at
		p.Event(x.ev)
		if w, ok := want[i]; ok {
			if got := ft.screen(); strings.Join(got, "\n") != strings.Join(w, "\n") {
				t.Errorf("after event %d (%s %s):\n%s\nwant:\n%s", i, x.ev.Type, x.ev.Status, strings.Join(got, "\n"), strings.Join(w, "\n"))
			}
		}
	}
	p.Close()
	end := []string{
		"implloop: run R: plan.md, 3 task(s), plan sha256 abcdef012345",
		"✓ [1/3] task 1 title 1: done, live, 1 attempt(s), 1.5s",
		"✓ [2/3] task 2 title 2: done, live, 1 attempt(s), 1.5s",
		"✓ [3/3] task 3 title 3: done, live, 1 attempt(s), 1.5s",
	}
	if got := ft.screen(); strings.Join(got, "\n") != strings.Join(end, "\n") {
		t.Errorf("at the end:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(end, "\n"))
	}
}

// The spinner turns and the elapsed time grows between events; a narrow
// terminal gets lines cut to its width, so the block's line count holds.
func TestProgressLiveBlockRedrawsAndFits(t *testing.T) {
	ft := &fakeTerm{t: t}
	p := startProgress(&ioStreams{Out: &bytes.Buffer{}, ErrOut: ft}, false, true, 30, 0)
	t0 := time.Now()
	p.now = func() time.Time { return t0 }
	evs := waveEvents()
	for _, x := range evs[:6] {
		p.Event(x.ev)
	}
	p.now = func() time.Time { return t0.Add(1500 * time.Millisecond) }
	p.mu.Lock()
	p.frame++
	p.redraw()
	p.mu.Unlock()
	got := ft.screen()
	want := []string{"⠙ [2/3] task 2 title 2  1.5s", "⠙ [3/3] task 3 title 3  1.5s"} // 29 columns, and a blank
	if len(got) < 2 || strings.Join(got[len(got)-2:], "\n") != strings.Join(want, "\n") {
		t.Errorf("screen:\n%s\nwant it to end with:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p.Close()
	if got := ft.screen(); len(got) != 2 {
		t.Errorf("Close left the block on the screen:\n%s", strings.Join(got, "\n"))
	}
}

// Not on a terminal: plain lines, one per event worth a line, calls made
// ahead included, and no escape code.
func TestProgressPlainLinesOfAWave(t *testing.T) {
	var errOut bytes.Buffer
	p := startProgress(&ioStreams{Out: &bytes.Buffer{}, ErrOut: &errOut}, false, false, 0, 0)
	for _, x := range waveEvents() {
		p.Event(x.ev)
	}
	p.Close()
	want := `implloop: run R: plan.md, 3 task(s), plan sha256 abcdef012345
[1/3] task 1: title 1
  attempt 1: live (never ran)
✓ [1/3] task 1 title 1: done, live, 1 attempt(s), 1.5s
  task 2: agent started ahead, with its wave, in .git/implloop/worktrees/R/w1
  task 3: agent started ahead, with its wave, in .git/implloop/worktrees/R/w2
[2/3] task 2: title 2
  task 3: agent back after 1s, settles at its turn
  task 2: agent back after 2s, settles at its turn
  attempt 1: live (never ran)
✓ [2/3] task 2 title 2: done, live, 1 attempt(s), 1.5s
[3/3] task 3: title 3
  attempt 1: live (never ran)
✓ [3/3] task 3 title 3: done, live, 1 attempt(s), 1.5s
`
	if errOut.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", errOut.String(), want)
	}
}

// A wait for a usage limit: the limit line stays on the screen, and the
// task's live line counts down to the reset.
func TestProgressCountdown(t *testing.T) {
	ft := &fakeTerm{t: t}
	p := startProgress(&ioStreams{Out: &bytes.Buffer{}, ErrOut: ft}, false, true, 0, 0)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock time.Duration
	p.now = func() time.Time { return t0.Add(clock) }
	until := t0.Add(90 * time.Second)
	for _, e := range []loop.Event{
		{Type: loop.EvTaskStarted, Task: "1", Title: "One", Index: 1, Count: 1},
		{Type: loop.EvUnitStarted, Task: "1", Attempt: 1},
		{Type: loop.EvLimit, Task: "1", Agent: "claude", Status: "usage", Until: until, Message: "You've hit your 5-hour limit"},
		{Type: loop.EvWait, Task: "1", Agent: "claude", Until: until, Millis: 90000, Message: "waiting for claude's usage limit to lift"},
	} {
		p.Event(e)
	}
	clock = 30 * time.Second
	p.mu.Lock()
	p.redraw()
	p.mu.Unlock()
	got := strings.Join(ft.screen(), "\n")
	if !strings.Contains(got, "limit: task 1: claude hit its usage limit (lifts at ") ||
		!strings.Contains(got, "waiting for claude's usage limit to lift: 1m0s left (until ") {
		t.Errorf("screen:\n%s", got)
	}
	p.Close()
}

// Not on a terminal: a heartbeat line, with the tokens so far.
func TestProgressHeartbeatLine(t *testing.T) {
	var errb bytes.Buffer
	p := startProgress(&ioStreams{Out: &bytes.Buffer{}, ErrOut: &errb}, false, false, 0, 0)
	p.Event(loop.Event{Type: loop.EvHeartbeat, Task: "3", Title: "Count lines", Message: "agent call", Millis: 61_400, TokensIn: 1200, TokensOut: 34})
	p.Close()
	if want := "implloop: still running: task 3 Count lines: agent call, 1m1s, 1200 tokens in, 34 out so far\n"; errb.String() != want {
		t.Errorf("got %q, want %q", errb.String(), want)
	}
}

// A concern of the run, not of a task (the ignore rules changed since
// the work tree's runs began), names no task: no "task :".
func TestProgressRunConcernNamesNoTask(t *testing.T) {
	var errb bytes.Buffer
	p := newProgress(&ioStreams{Out: &bytes.Buffer{}, ErrOut: &errb}, false)
	p.Event(loop.Event{Type: loop.EvConcern, Message: "the ignore rules changed"})
	p.Event(loop.Event{Type: loop.EvConcern, Task: "T1", Message: "no changes"})
	if got, want := errb.String(), "  concern: the ignore rules changed\n  concern: task T1: no changes\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
