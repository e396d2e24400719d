package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/implloop/implloop/loop"
)

// progress renders the run's events: NDJSON on stdout with --json; on a
// terminal, one live line per task on stderr (spinner, elapsed, attempt,
// live or replayed) that settles into a summary line; plain lines
// otherwise, and with --color never or NO_COLOR set.
type progress struct {
	io   *ioStreams
	json bool
	live bool // redraw in place

	mu      sync.Mutex
	enc     *json.Encoder
	task    *taskLine
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
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newProgress(io *ioStreams, asJSON bool) *progress {
	p := &progress{io: io, json: asJSON, live: io.liveErr() && !asJSON, stop: make(chan struct{})}
	if asJSON {
		p.enc = json.NewEncoder(io.Out)
		p.enc.SetEscapeHTML(false)
	}
	if p.live {
		go p.tick()
	}
	return p
}

func (p *progress) tick() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	i := 0
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.task != nil {
				i++
				p.draw(spinnerFrames[i%len(spinnerFrames)])
			}
			p.mu.Unlock()
		}
	}
}

// Close stops the spinner. Safe to call twice.
func (p *progress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.stopped = true
		close(p.stop)
	}
}

func (p *progress) draw(frame string) {
	t := p.task
	line := fmt.Sprintf("%s [%d/%d] task %s %s  %s  attempt %d  %s", frame, t.index, t.n, t.id, clipTitle(t.title),
		time.Since(t.start).Round(100*time.Millisecond), max(t.attempt, 1), t.source)
	if t.note != "" {
		line += "  " + t.note
	}
	fmt.Fprintf(p.io.ErrOut, "\r\x1b[2K%s", line)
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
	w := p.io.ErrOut
	switch e.Type {
	case loop.EvRunStarted:
		parent := ""
		if e.ParentID != "" {
			parent = " (resumes " + e.ParentID + ")"
		}
		fmt.Fprintf(w, "implloop: run %s%s: %s, %d task(s), plan sha256 %.12s\n", e.RunID, parent, e.Plan, e.Count, e.PlanSHA)
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
	case loop.EvTaskStarted:
		p.task = &taskLine{id: e.Task, title: e.Title, index: e.Index, n: e.Count, start: time.Now(), source: "…"}
		if e.Message != "" {
			p.task.note = e.Message
		}
		if !p.live && !p.json {
			fmt.Fprintf(w, "[%d/%d] task %s: %s\n", e.Index, e.Count, e.Task, e.Title)
		}
	case loop.EvUnitStarted:
		if p.task != nil {
			p.task.attempt, p.task.source = e.Attempt, "live"
			p.task.note = strings.Join(e.Reasons, ", ")
		}
		if !p.live && !p.json {
			why := ""
			if len(e.Reasons) > 0 {
				why = " (" + strings.Join(e.Reasons, ", ") + ")"
			}
			if e.Message != "" { // ran ahead with its wave (--jobs)
				why += "; " + e.Message
			}
			fmt.Fprintf(w, "  attempt %d: live%s\n", e.Attempt, why)
		}
	case loop.EvUnitReplayed:
		if p.task != nil {
			p.task.attempt, p.task.source = e.Attempt, "replayed"
		}
		if !p.live && !p.json {
			fmt.Fprintf(w, "  attempt %d: replayed from %s\n", e.Attempt, e.From)
		}
	case loop.EvUnitFinished:
		if e.Status != "failed" && p.task != nil {
			p.task.note = "gate running"
		}
		if e.Status == "failed" {
			if p.task != nil {
				p.task.note = "agent failed"
			}
			if !p.live && !p.json {
				fmt.Fprintf(w, "  agent failed (attempt %d): %s\n", e.Attempt, e.Message)
			}
		}
	case loop.EvGate:
		if e.Passed != nil && !*e.Passed {
			if p.task != nil {
				p.task.note = "gate failed"
			}
			if !p.live && !p.json {
				msg := e.Message
				if msg == "" && e.ExitCode != nil {
					msg = fmt.Sprintf("exit status %d", *e.ExitCode)
				}
				fmt.Fprintf(w, "  gate failed (attempt %d): %s\n", e.Attempt, msg)
			}
		}
	case loop.EvRestored:
		if p.live {
			p.clear()
		}
		if !p.json {
			fmt.Fprintf(w, "  restored: task %s: %s\n", e.Task, e.Message)
		}
	case loop.EvConcern:
		if p.live {
			p.clear()
		}
		if !p.json {
			fmt.Fprintf(w, "  concern: task %s: %s\n", e.Task, e.Message)
		}
	case loop.EvBlocked:
		if p.live {
			p.clear()
		}
		if !p.json {
			fmt.Fprintf(w, "  BLOCKED: task %s: %s\n", e.Task, e.Message)
		}
	case loop.EvTaskFinished:
		if p.live {
			p.clear()
		}
		if !p.json {
			mark := map[string]string{"done": "✓", "blocked": "✗", "skipped": "-", "interrupted": "!"}[e.Status]
			if mark == "" {
				mark = "·"
			}
			fmt.Fprintf(w, "%s [%d/%d] task %s %s: %s, %s, %d attempt(s), %s\n", mark, e.Index, e.Count, e.Task,
				clipTitle(e.Title), e.Status, e.Source, e.Attempt, (time.Duration(e.Millis) * time.Millisecond).Round(time.Millisecond))
		}
		p.task = nil
	}
}

func (p *progress) clear() { fmt.Fprint(p.io.ErrOut, "\r\x1b[2K") }

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
