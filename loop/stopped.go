package loop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/words"
)

// stoppedHeading starts BLOCKED.md for a stopped run.
const stoppedHeading = "# STOPPED: "

// endStopped ends a run that stopped though no task failed (e.stopped: a
// cap reached, a limit past --max-wait): BLOCKED.md says why and how to
// resume (after the blocks, if tasks were blocked too), and a stopped
// event says it to the stream and to --notify.
func (e *engine) endStopped(out *Outcome) error {
	st := e.stopped
	if st == nil || e.journalGone != "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(e.o.RepoRoot, BlockedFile), []byte(e.stoppedText(out)), 0o644); err != nil {
		return err
	}
	if err := e.noteStop(); err != nil {
		return err
	}
	e.blockedWrote, out.Blocked, out.Stopped = true, true, st.why
	ev := Event{Type: EvStopped, Task: st.task, Title: st.title, Status: string(st.kind), Message: st.why}
	if !st.until.IsZero() {
		ev.Until = st.until.UTC()
	}
	e.emit(ev)
	return nil
}

// noteStop puts the stop's reason on the task a resume goes on with when
// no task carries it yet: a cap reached at a task boundary stops the run
// after a done task, and without it the report, show and report.json of
// a PARTIAL run with every started task done would not say why it
// stopped (a stop inside a task is noted there by stopTask).
func (e *engine) noteStop() error {
	tasks, err := e.j.Tasks(e.runID)
	if err != nil {
		return err
	}
	note := "stopped: " + e.stopped.why
	for _, t := range tasks {
		if slices.Contains(t.Concerns, note) {
			return nil
		}
	}
	for _, t := range tasks {
		if t.Status == cache.TaskPending {
			t.Concerns = append(t.Concerns, note)
			return e.j.PutTask(t)
		}
	}
	return nil
}

// stoppedText is BLOCKED.md for a stopped run: why, what it spent or
// waited, and the resume command (with a higher cap, or after the
// limit lifts), then the blocks of its tasks, if any.
func (e *engine) stoppedText(out *Outcome) string {
	st := e.stopped
	var b strings.Builder
	done := 0
	for _, s := range e.status {
		if s == cache.TaskDone {
			done++
		}
	}
	switch st.kind {
	case stopWait:
		b.WriteString(stoppedHeading + "waiting for a usage limit would outlast --max-wait\n\n")
	case stopTaskCost:
		fmt.Fprintf(&b, stoppedHeading+"task %s reached --max-task-cost\n\n", st.task)
	case stopTokens:
		b.WriteString(stoppedHeading + "the run reached --max-tokens\n\n")
	default:
		b.WriteString(stoppedHeading + "the run reached --max-cost\n\n")
	}
	fmt.Fprintf(&b, "Run `%s` of `%s` stopped at task %s", e.runID, e.s.Plan, st.task)
	if st.title != "" {
		fmt.Fprintf(&b, " (%s)", st.title)
	}
	fmt.Fprintf(&b, ", %d of %d task(s) done. No task failed: %s.\n\n", done, len(e.sel.Tasks), st.why)
	resume := "implloop resume --run " + e.runID
	switch st.kind {
	case stopWait:
		fmt.Fprintf(&b, "The limit, as read from the agent's output: %q\n\n", st.limit)
		b.WriteString("The call that hit the limit did not complete: the task runs it again on the resume (no attempt was counted for it).\n\n")
	default:
		fmt.Fprintf(&b, "What live calls reported: %s, %s tokens (of every kind), in %d call(s). The call in flight finished, with its gate; no task or attempt started after it.\n\n",
			usd(st.spent.cost), words.Thousands(st.spent.tokens), st.spent.calls)
	}
	b.WriteString("## Resume\n\n")
	b.WriteString("1. Remove this file: `rm " + BlockedFile + "`.\n")
	switch st.kind {
	case stopWait:
		when := "When the limit has lifted (the agent did not say when)"
		if !st.until.IsZero() {
			when = "After " + st.until.UTC().Format("2006-01-02 15:04:05 UTC") + fmt.Sprintf(" (%s after the stop)", st.until.Sub(e.now()).Round(time.Minute))
		}
		fmt.Fprintf(&b, "2. %s: `%s`. Done tasks replay from the journal; the rest run live. Or now, with another agent taking the calls: `%s --fallback-agent NAME`, or with a longer wait: `%s --max-wait 12h`.\n",
			when, resume, resume, resume)
	default:
		fmt.Fprintf(&b, "2. Resume with a higher cap: `%s %s`. Tasks whose calls were paid for replay from the journal at no cost (replays never count against a cap); the rest run live.\n",
			resume, st.resumeFlag(e.s))
	}
	if len(e.blocks) > 0 {
		b.WriteString("\n---\n\n")
		b.WriteString(blockedText(e.blocks))
	}
	return b.String()
}
