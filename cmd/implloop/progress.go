package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/report"
)

// progress renders the run's events: NDJSON on stdout with --json; on a
// terminal, a live block on stderr redrawn in place (spinner, elapsed): a
// line for the task whose turn it is (attempt, live or replayed) and, with
// --jobs, one line per call made ahead with its wave, each settling into a
// plain summary line; plain lines otherwise (stderr not a terminal,
// TERM=dumb, --color never or NO_COLOR set).
type progress struct {
	io   *ioStreams
	json bool
	live bool // redraw in place
	now  func() time.Time

	mu      sync.Mutex
	enc     *json.Encoder
	task    *taskLine
	ahead   []*aheadLine // calls made ahead whose task's turn has not come, in plan order
	drawn   int          // lines of the live block on the screen
	frame   int
	width   int // the terminal's columns; 0 when unknown
	stop    chan struct{}
	stopped bool
}

type taskLine struct {
	id, title string
	index, n  int
	start     time.Time
	attempt   int
	source    string // live, replayed
	note      string
	// until is the end of a wait for a limit (waiting says for what):
	// the line counts down to it.
	until   time.Time
	waiting string
}

// aheadLine is a call made ahead with its wave (--jobs), running or back.
type aheadLine struct {
	id, title, worktree string
	index, n            int
	start               time.Time
	took                time.Duration // when back
	back                bool
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newProgress(io *ioStreams, asJSON bool) *progress {
	live := io.liveErr() && !asJSON
	width := 0
	if f, ok := io.ErrOut.(*os.File); ok && live {
		width, _, _ = term.GetSize(int(f.Fd()))
	}
	return startProgress(io, asJSON, live, width, 100*time.Millisecond)
}

// startProgress is newProgress with the terminal's facts given: whether to
// redraw in place, its width (0: unknown), and how often the spinner
// turns (0: only when an event comes, as tests want).
func startProgress(io *ioStreams, asJSON, live bool, width int, tick time.Duration) *progress {
	p := &progress{io: io, json: asJSON, live: live, width: width, now: time.Now, stop: make(chan struct{})}
	if asJSON {
		p.enc = json.NewEncoder(io.Out)
		p.enc.SetEscapeHTML(false)
	}
	if p.live && tick > 0 {
		go p.tick(tick)
	}
	return p
}

func (p *progress) tick(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if !p.stopped {
				p.frame++
				p.redraw()
			}
			p.mu.Unlock()
		}
	}
}

// Close stops the spinner and clears the live block. Safe to call twice.
func (p *progress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.stopped = true
		close(p.stop)
		p.clear()
	}
}

// block is the live block's lines: the task whose turn it is (unless its
// call, made ahead, has not returned: its ahead line says so), then the
// calls made ahead, in plan order.
func (p *progress) block() []string {
	spin := spinnerFrames[p.frame%len(spinnerFrames)]
	var lines []string
	if t := p.task; t != nil && !p.aheadRunning(t.id) {
		line := fmt.Sprintf("%s [%d/%d] task %s %s  %s  attempt %d  %s", spin, t.index, t.n, t.id, clipTitle(t.title),
			p.now().Sub(t.start).Round(100*time.Millisecond), max(t.attempt, 1), t.source)
		if left := t.until.Sub(p.now()); !t.until.IsZero() && left > 0 {
			line += fmt.Sprintf("  %s: %s left (until %s)", t.waiting, left.Round(time.Second), t.until.Local().Format("15:04:05"))
		} else if t.note != "" {
			line += "  " + t.note
		}
		lines = append(lines, line)
	}
	for _, a := range p.ahead {
		if p.task != nil && a.id == p.task.id && a.back {
			continue
		}
		if a.back {
			lines = append(lines, fmt.Sprintf("· [%d/%d] task %s %s  agent back after %s, waits for its turn", a.index, a.n, a.id, clipTitle(a.title),
				a.took.Round(100*time.Millisecond)))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s [%d/%d] task %s %s  %s  running ahead in worktree %s", spin, a.index, a.n, a.id, clipTitle(a.title),
			p.now().Sub(a.start).Round(100*time.Millisecond), path.Base(a.worktree)))
	}
	return lines
}

func (p *progress) aheadRunning(id string) bool {
	for _, a := range p.ahead {
		if a.id == id && !a.back {
			return true
		}
	}
	return false
}

// redraw replaces the live block on the screen with what it is now. The
// cursor stays at the end of its last line, so clear can go back up.
func (p *progress) redraw() {
	if !p.live {
		return
	}
	p.clear()
	lines := p.block()
	for i, l := range lines {
		if p.width > 1 {
			if r := []rune(l); len(r) > p.width-1 { // a wrapped line would throw the count off
				l = string(r[:p.width-1])
			}
		}
		if i > 0 {
			fmt.Fprint(p.io.ErrOut, "\n")
		}
		fmt.Fprint(p.io.ErrOut, l)
	}
	p.drawn = len(lines)
}

// clear erases the live block: back to the start of its first line, then
// everything below.
func (p *progress) clear() {
	if !p.live || p.drawn == 0 {
		return
	}
	up := ""
	if p.drawn > 1 {
		up = fmt.Sprintf("\x1b[%dA", p.drawn-1)
	}
	fmt.Fprintf(p.io.ErrOut, "\r%s\x1b[J", up)
	p.drawn = 0
}

func clipTitle(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return s
}

// Event implements loop.Observer.
func (p *progress) Event(e loop.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		_ = p.enc.Encode(e)
	}
	// The plain lines an event prints go above the live block, which is
	// then drawn again as the event left it.
	p.clear()
	p.plain(e)
	if !p.stopped {
		p.redraw()
	}
}

// print runs f, which writes lines of its own (a worker's), with the live
// block cleared, and draws the block again; any goroutine may call it.
func (p *progress) print(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	f()
	if !p.stopped {
		p.redraw()
	}
}

// plain updates the live block's state for e and prints its plain lines
// on stderr: all of them when the block is not drawn, else only those that
// stay (a task's summary, restores, concerns, blocks); with --json, only
// the run-level ones (the events say the rest on stdout).
func (p *progress) plain(e loop.Event) {
	lines := !p.live && !p.json // the live block or the events show the rest
	stays := !p.json
	switch e.Type {
	case loop.EvRunStarted, loop.EvJournalMoved, loop.EvWarning, loop.EvResumePlan, loop.EvBoundary:
		p.runEvent(e)
	case loop.EvAhead:
		p.aheadEvent(e, lines)
	case loop.EvTaskStarted:
		p.task = &taskLine{id: e.Task, title: e.Title, index: e.Index, n: e.Count, start: p.now(), source: "…", note: e.Message}
		p.dropAhead(e.Task, true)
		if lines {
			fmt.Fprintf(p.io.ErrOut, "[%d/%d] task %s: %s\n", e.Index, e.Count, e.Task, e.Title)
		}
	case loop.EvLimit, loop.EvFallback, loop.EvWait, loop.EvStopped:
		p.limitEvent(e, lines, stays)
	case loop.EvHeartbeat:
		if !p.live {
			p.heartbeatLine(e)
		}
	case loop.EvUnitStarted:
		p.unitStarted(e, lines)
	case loop.EvUnitReplayed, loop.EvUnitFinished:
		p.unitEnded(e, lines)
	case loop.EvGate:
		p.gateEvent(e, lines)
	case loop.EvRestored, loop.EvConcern, loop.EvBlocked:
		if stays {
			p.noteLine(e)
		}
	case loop.EvTaskFinished:
		p.task = nil
		p.dropAhead(e.Task, false)
		if stays {
			p.taskFinished(e)
		}
	}
}

// runEvent prints what the run says of itself: that it started (and
// runs sandboxed), its journal moved, a warning, the resume plan, a
// boundary's message.
func (p *progress) runEvent(e loop.Event) {
	w := p.io.ErrOut
	switch e.Type {
	case loop.EvRunStarted:
		parent := ""
		if e.ParentID != "" {
			parent = " (resumes " + e.ParentID + ")"
		}
		fmt.Fprintf(w, "implloop: run %s%s: %s, %d task(s), plan sha256 %.12s\n", e.RunID, parent, e.Plan, e.Count, e.PlanSHA)
		if e.Sandbox != "" {
			fmt.Fprintf(w, "implloop: every agent call runs sandboxed (%s): it may write its work tree, not implloop's state\n", e.Sandbox)
		}
	case loop.EvJournalMoved:
		fmt.Fprintf(w, "implloop: %s\n", e.Message)
	case loop.EvWarning:
		fmt.Fprintf(w, "implloop: warning: %s\n", e.Message)
	case loop.EvResumePlan:
		fmt.Fprint(w, formatPlan(e.Tasks, false))
	case loop.EvBoundary:
		if e.Message != "" && e.Task == "" {
			fmt.Fprintf(w, "implloop: %s\n", e.Message)
		}
	}
}

// unitStarted follows a unit dispatched live: the task line shows it
// (its call made ahead is back), and the plain line says why it runs.
func (p *progress) unitStarted(e loop.Event, lines bool) {
	p.dropAhead(e.Task, true)
	if p.task != nil {
		p.task.attempt, p.task.source = e.Attempt, "live"
		p.task.note = strings.Join(e.Reasons, ", ")
		p.task.until = time.Time{}
	}
	if !lines {
		return
	}
	why := ""
	if len(e.Reasons) > 0 {
		why = " (" + strings.Join(e.Reasons, ", ") + ")"
	}
	if e.Message != "" { // ran ahead with its wave (--jobs)
		why += "; " + e.Message
	}
	if e.Sandbox != "" {
		why = ", sandboxed" + why
	}
	fmt.Fprintf(p.io.ErrOut, "  attempt %d: live%s\n", e.Attempt, why)
}

// unitEnded follows a unit replayed, or a live one that finished: a
// failed call says so.
func (p *progress) unitEnded(e loop.Event, lines bool) {
	w := p.io.ErrOut
	switch {
	case e.Type == loop.EvUnitReplayed:
		if p.task != nil {
			p.task.attempt, p.task.source = e.Attempt, "replayed"
		}
		if lines {
			fmt.Fprintf(w, "  attempt %d: replayed from %s\n", e.Attempt, e.From)
			// A failed call the attempt chain went on from, replayed:
			// said as a live one is (EvUnitFinished).
			if why, ok := strings.CutPrefix(e.Message, "failed: "); ok {
				fmt.Fprintf(w, "  agent failed (attempt %d, replayed): %s\n", e.Attempt, why)
			}
		}
	case e.Status != "failed":
		// The gate, if the task has one, then the boundary and the guard.
		p.note("checking the work")
	default:
		p.note("agent failed")
		if lines {
			fmt.Fprintf(w, "  agent failed (attempt %d): %s\n", e.Attempt, e.Message)
		}
	}
}

// gateEvent follows a gate: a failed one says so, and how it failed.
func (p *progress) gateEvent(e loop.Event, lines bool) {
	if e.Passed == nil || *e.Passed {
		return
	}
	p.note("gate failed")
	if !lines {
		return
	}
	msg := e.Message
	if msg == "" && e.ExitCode != nil {
		msg = fmt.Sprintf("exit status %d", *e.ExitCode)
	}
	how := "" // a journaled verdict carried over: no gate ran now
	if e.Source == "replayed" {
		how = ", replayed"
	}
	fmt.Fprintf(p.io.ErrOut, "  gate failed (attempt %d%s): %s\n", e.Attempt, how, msg)
}

// noteLine prints a line that stays: a restore, a concern, a block; a
// replay across runs is an ordinary line, not a concern.
func (p *progress) noteLine(e loop.Event) {
	if e.Type == loop.EvRestored && strings.HasPrefix(e.Message, report.ReplayedNotePrefix) {
		fmt.Fprintf(p.io.ErrOut, "  %s\n", e.Message)
		return
	}
	label := map[string]string{loop.EvRestored: "restored", loop.EvConcern: "concern", loop.EvBlocked: "BLOCKED"}[e.Type]
	if e.Task == "" { // the run's, no task's (ignore rules changed since its runs began)
		fmt.Fprintf(p.io.ErrOut, "  %s: %s\n", label, e.Message)
		return
	}
	fmt.Fprintf(p.io.ErrOut, "  %s: task %s: %s\n", label, e.Task, e.Message)
}

// taskFinished prints a task's summary line.
func (p *progress) taskFinished(e loop.Event) {
	mark := map[string]string{"done": "✓", "blocked": "✗", "skipped": "-", "interrupted": "!"}[e.Status]
	if mark == "" {
		mark = "·"
	}
	fmt.Fprintf(p.io.ErrOut, "%s [%d/%d] task %s %s: %s, %s, %d attempt(s), %s\n", mark, e.Index, e.Count, e.Task,
		clipTitle(e.Title), e.Status, e.Source, e.Attempt, (time.Duration(e.Millis) * time.Millisecond).Round(time.Millisecond))
}

// limitEvent follows the limits a call hits (limits.go): the limit, a
// fallback taking the call, and a wait, which the live task line counts
// down; and a run stopped by a cap or a wait. They stay on the screen.
func (p *progress) limitEvent(e loop.Event, lines, stays bool) {
	w := p.io.ErrOut
	who := e.Agent
	if e.Model != "" {
		who += " (" + e.Model + ")"
	}
	switch e.Type {
	case loop.EvLimit:
		p.note(who + " hit a limit")
		if stays {
			when := ""
			if !e.Until.IsZero() {
				when = " (lifts at " + e.Until.Local().Format("2006-01-02 15:04:05 MST") + ")"
			}
			kind := map[string]string{"usage": "usage limit", "rate": "rate limit", "overload": "overload"}[e.Status]
			if kind == "" {
				kind = "limit (exit 75)"
			}
			fmt.Fprintf(w, "  limit: task %s: %s hit its %s%s: %s\n", e.Task, who, kind, when, e.Message)
		}
	case loop.EvFallback:
		p.note(who + " takes the call")
		if stays {
			fmt.Fprintf(w, "  fallback: task %s: %s\n", e.Task, e.Message)
		}
	case loop.EvWait:
		if p.task != nil {
			p.task.until, p.task.waiting = e.Until, e.Message
		}
		if lines || (stays && !p.live) {
			fmt.Fprintf(w, "  waiting: task %s: %s, until %s (%s)\n", e.Task, e.Message, e.Until.Local().Format("2006-01-02 15:04:05 MST"),
				(time.Duration(e.Millis) * time.Millisecond).Round(time.Second))
		}
	case loop.EvStopped:
		if stays {
			fmt.Fprintf(w, "  stopped: task %s: %s\n", e.Task, e.Message)
		}
	}
}

// heartbeatLine says, where the live block is not drawn, that a call, a
// gate or a wait still lasts: a CI log is never silent for long.
func (p *progress) heartbeatLine(e loop.Event) {
	line := fmt.Sprintf("implloop: still running: task %s %s: %s, %s", e.Task, clipTitle(e.Title), e.Message,
		(time.Duration(e.Millis) * time.Millisecond).Round(time.Second))
	if e.TokensIn > 0 || e.TokensOut > 0 {
		line += fmt.Sprintf(", %d tokens in, %d out so far", e.TokensIn, e.TokensOut)
	}
	if !e.Until.IsZero() {
		line += ", until " + e.Until.Local().Format("15:04:05")
	}
	fmt.Fprintln(p.io.ErrOut, line)
}

// aheadEvent follows a call made ahead with its wave: a line in the live
// block while it runs and until its task's turn; plain, a line when it
// starts and one when the agent is back.
func (p *progress) aheadEvent(e loop.Event, lines bool) {
	w := p.io.ErrOut
	switch e.Status {
	case "running":
		p.dropAhead(e.Task, false)
		a := &aheadLine{id: e.Task, title: e.Title, worktree: e.Worktree, index: e.Index, n: e.Count, start: p.now()}
		at := len(p.ahead)
		for at > 0 && p.ahead[at-1].index > a.index {
			at--
		}
		p.ahead = slices.Insert(p.ahead, at, a)
		if lines {
			fmt.Fprintf(w, "  task %s: agent started ahead, with its wave, in %s\n", e.Task, e.Worktree)
		}
	case "returned":
		took := time.Duration(e.Millis) * time.Millisecond
		for _, a := range p.ahead {
			if a.id == e.Task {
				a.back, a.took = true, took
			}
		}
		if lines {
			why := ""
			if e.Message != "" {
				why = ": " + e.Message
			}
			fmt.Fprintf(w, "  task %s: agent back after %s, settles at its turn%s\n", e.Task, took.Round(time.Millisecond), why)
		}
	}
}

// dropAhead forgets the call made ahead for task id (its turn took it),
// only once it is back when onlyBack.
func (p *progress) dropAhead(id string, onlyBack bool) {
	p.ahead = slices.DeleteFunc(p.ahead, func(a *aheadLine) bool { return a.id == id && (a.back || !onlyBack) })
}

// note sets the live task line's note.
func (p *progress) note(s string) {
	if p.task != nil {
		p.task.note = s
	}
}

// formatPlan renders a resume plan or a dry run's work list.
func formatPlan(tasks []loop.PlannedTask, dry bool) string {
	var b strings.Builder
	head := "resume plan"
	if dry {
		head = "work list (dry run: nothing is written)"
	}
	fmt.Fprintf(&b, "implloop: %s:\n", head)
	for _, t := range tasks {
		why := strings.Join(t.Reasons, "; ")
		switch {
		case t.Action == loop.ActionReplay && t.From != "":
			if why != "" {
				why = "; " + why
			}
			why = "from run " + t.From + why
		case why == "" && t.Action == loop.ActionLive:
			why = "never ran"
		}
		fmt.Fprintf(&b, "  %-7s task %-6s %-40s %s\n", t.Action, t.Task, clipTitle(t.Title), why)
	}
	return b.String()
}

func printPlan(io *ioStreams, tasks []loop.PlannedTask, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetEscapeHTML(false)
		// A struct, not a map: "type" comes first, as in every event.
		_ = enc.Encode(struct {
			Type  string             `json:"type"`
			Tasks []loop.PlannedTask `json:"tasks"`
		}{"work_list", tasks})
		return
	}
	fmt.Fprint(io.Out, formatPlan(tasks, true))
}
