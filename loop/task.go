package loop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/unit"
)

type taskResult struct {
	status cache.TaskStatus
}

// taskState accumulates one task's row as it runs.
type taskState struct {
	row      cache.Task
	live     int // units dispatched
	replayed int
	gates0   int // e.liveGates when the task started
	// agentFailure is why the last attempt's agent call failed (BLOCKED.md
	// shows it instead of a gate's output).
	agentFailure string
	// restored: the task's work was written into the tree (back from
	// this run's lineage before it replayed, or from another run's
	// boundaries as it replayed across runs), so it takes a boundary of
	// its own: the next task starts from the tree that work made.
	restored bool
	// across: the chain of attempts another run made for the task, which
	// its attempts replay one by one (acrossruns.go); decided at attempt
	// 1, nil when there is none.
	across *acrossRun
	// retryWhy is why the next attempt runs, when the one before it (or
	// the recheck of a blocked task's gate) failed in this run: said of a
	// live attempt that no journaled unit explains better.
	retryWhy string
}

func (ts *taskState) source() cache.Source {
	switch {
	case ts.live > 0 && ts.replayed > 0:
		return cache.SourceMixed
	case ts.live > 0:
		return cache.SourceLive
	case ts.replayed > 0:
		return cache.SourceReplayed
	}
	return cache.SourceNone
}

// runTask runs task t (the idx-th of the selection): skipped, held, or
// begun as startOf says and then attempt after attempt until its gate
// passes or the attempts run out.
func (e *engine) runTask(ctx context.Context, idx int, t extractor.Task) (taskResult, error) {
	ts := &taskState{row: cache.Task{RunID: e.runID, TaskID: t.ID, Ordinal: t.Ordinal, Title: t.Title, StartedAt: e.now()}, gates0: e.liveGates}
	if res, ok, err := e.notRun(idx, t, ts); ok || err != nil {
		return res, err
	}
	if err := e.startTask(ctx, idx, t, ts); err != nil {
		return taskResult{}, err
	}
	op, err := e.openChain(ctx, t, ts)
	if err != nil {
		return taskResult{}, err
	}
	if op.fixed {
		// Done with no agent call: fixed outside the loop.
		ts.row.Attempts = 0
		if op.note != "" {
			ts.row.Concerns = append(ts.row.Concerns, op.note)
		}
		return e.afterTask(ctx, idx, t, ts, cache.TaskDone, "")
	}
	return e.attempts(ctx, idx, t, ts, op.attempt, op.feedback)
}

// opening is how a task's chain of attempts begins in this run: done
// with no agent call (fixed, with a note for its row), or from attempt
// with feedback.
type opening struct {
	fixed    bool
	note     string
	attempt  int
	feedback string
}

// openChain begins task t's chain of attempts as startOf says. A task
// that ended blocked is never replayed as blocked: its gate runs first,
// since the user may have fixed it by hand. A task whose last run began
// with such a recheck begins with it here too, while it is the task that
// was fixed (resume.go, startOf: the plan starts the same).
func (e *engine) openChain(ctx context.Context, t extractor.Task, ts *taskState) (opening, error) {
	st, err := e.run.startOf(t)
	if err != nil {
		return opening{}, err
	}
	if st.carry != nil {
		e.carryGate(t, *st.carry)
	}
	switch st.kind {
	case startFixed:
		return opening{fixed: true}, nil
	case startRecheck:
		g, err := e.liveGate(ctx, t, st.attempt, e.gateCommand(t), true)
		if err != nil {
			return opening{}, err
		}
		if g.Passed {
			return opening{fixed: true, note: "fixed outside the loop: the gate passes now, no agent call"}, nil
		}
		ts.retryWhy = "after its gate, run first, failed again"
		return opening{attempt: st.attempt + 1, feedback: g.Feedback()}, nil
	}
	return opening{attempt: st.attempt, feedback: st.feedback}, nil
}

// attempts runs task t's attempts from attempt (with feedback) until its
// gate passes, the live attempts run out (it is blocked), or a cap or a
// limit stops the run.
func (e *engine) attempts(ctx context.Context, idx int, t extractor.Task, ts *taskState, attempt int, feedback string) (taskResult, error) {
	gateCmd := e.gateCommand(t)
	liveAttempts := 0
	for ; ; attempt++ {
		facts := unit.Facts{Attempt: attempt, GateFeedback: feedback, Artifacts: e.run.artifacts(t)}
		units, err := unit.WorkList(t, e.unitParams(t), facts)
		if err != nil {
			return taskResult{}, err
		}
		ts.row.Attempts++
		a, err := e.runAttempt(ctx, idx, t, ts, facts, units)
		if isLimitStop(err) {
			// A limit the run will not wait for: the call did not
			// complete, and no attempt is counted for it.
			ts.row.Attempts--
			return e.stopTask(ctx, idx, t, ts)
		}
		if err != nil {
			return taskResult{}, err
		}
		var passed bool
		passed, feedback, err = e.judge(ctx, t, attempt, gateCmd, a)
		if err != nil {
			return taskResult{}, err
		}
		if !a.allReplayed {
			liveAttempts++
		}
		if a.crossed && ts.across.blocked && attempt == len(ts.across.attempts) {
			// A chain that blocked elsewhere spent its attempts (fanin.go).
			liveAttempts = max(liveAttempts, attempt)
		}
		if passed {
			e.noteResult(t, ts, a)
			if a.final != "" {
				e.run.art[t.ID] = a.final
			}
			return e.afterTask(ctx, idx, t, ts, cache.TaskDone, "")
		}
		// A cap reached: no further attempt (budget.go).
		if liveAttempts < e.s.MaxAttempts && !a.allReplayed {
			if st := e.capBeforeAttempt(t); st != nil {
				e.stopped = st
				return e.stopTask(ctx, idx, t, ts)
			}
		}
		if liveAttempts >= e.s.MaxAttempts {
			return e.outOfAttempts(ctx, idx, t, ts, a, feedback)
		}
		ts.retryWhy = "after a failed gate"
		if a.failure != "" {
			ts.retryWhy = "after the agent failed"
		}
		if a.conflict {
			ts.retryWhy = "after its work, done elsewhere, conflicted with the tasks merged before it"
		}
	}
}

// outOfAttempts blocks task t, whose live attempts ran out: the last
// one's agent failure, or its gate's feedback, says why.
func (e *engine) outOfAttempts(ctx context.Context, idx int, t extractor.Task, ts *taskState, a attemptRun, feedback string) (taskResult, error) {
	if a.failure != "" {
		reason := fmt.Sprintf("the agent failed on %d attempt(s): %s", ts.row.Attempts, firstLine(a.failure))
		ts.agentFailure = a.failure
		return e.afterTask(ctx, idx, t, ts, cache.TaskBlocked, reason)
	}
	reason := fmt.Sprintf("the gate failed on %d attempt(s)", ts.row.Attempts)
	if sum := GateSummary(feedback); sum != "" {
		reason += ": " + sum
	}
	return e.afterTask(ctx, idx, t, ts, cache.TaskBlocked, reason, feedback)
}

// stopTask ends task t where the run stops though nothing failed
// (e.stopped: a cap, or a limit past --max-wait): its boundary and guard
// as after any task, its status pending, so that a resume goes on with it.
func (e *engine) stopTask(ctx context.Context, idx int, t extractor.Task, ts *taskState) (taskResult, error) {
	note := "stopped: " + e.stopped.why
	ts.row.Concerns = append(ts.row.Concerns, note)
	e.emit(Event{Type: EvConcern, Task: t.ID, Message: note})
	return e.afterTask(ctx, idx, t, ts, cache.TaskPending, "")
}

// finishTask journals the task's row as it ended (status, unless the
// journal went away meanwhile) and says so.
func (e *engine) finishTask(idx int, t extractor.Task, ts *taskState, status cache.TaskStatus) (taskResult, error) {
	status, err := e.unlessJournalGone(t, ts, status)
	if err != nil {
		return taskResult{}, err
	}
	ts.row.Status = status
	ts.row.Source = ts.source()
	ts.row.Concerns = append(ts.row.Concerns, e.callConcerns[t.ID]...)
	delete(e.callConcerns, t.ID)
	ts.row.FinishedAt = e.now()
	ts.row.Duration = ts.row.FinishedAt.Sub(ts.row.StartedAt)
	if err := e.j.PutTask(ts.row); err != nil {
		return taskResult{}, err
	}
	if e.status == nil {
		e.status = map[string]cache.TaskStatus{}
	}
	e.status[t.ID] = status
	e.emit(Event{Type: EvTaskFinished, Task: t.ID, Title: t.Title, Index: idx + 1, Count: len(e.sel.Tasks),
		Status: string(status), Source: string(ts.row.Source), Attempt: ts.row.Attempts,
		Millis: ts.row.Duration.Milliseconds(), Paths: ts.row.LostPaths})
	return taskResult{status: status}, nil
}

// notRun finishes a task that does not run here (ok): checked in the plan
// (skipped), or held by a dependency that did not end done.
func (e *engine) notRun(idx int, t extractor.Task, ts *taskState) (res taskResult, ok bool, err error) {
	count := len(e.sel.Tasks)
	if e.skips(t) {
		e.emit(Event{Type: EvTaskStarted, Task: t.ID, Title: t.Title, Index: idx + 1, Count: count, Message: "checked in the plan: skipped"})
		if row := e.lineage.lastRow(t.ID); row != nil && row.Status != cache.TaskSkipped {
			e.sawNewSkip = true // ticked since: the resume is not a no-op
		}
		res, err = e.finishTask(idx, t, ts, cache.TaskSkipped)
		return res, true, err
	}
	// A dependency that did not end done here (blocked, with --on-blocked
	// continue) leaves nothing to build on: the task is not dispatched and
	// stays pending, journaled with why.
	if why := e.heldBy(t); why != "" {
		note := "not run: " + why
		ts.row.Concerns = append(ts.row.Concerns, note)
		e.emit(Event{Type: EvTaskStarted, Task: t.ID, Title: t.Title, Index: idx + 1, Count: count, Message: note})
		e.emit(Event{Type: EvConcern, Task: t.ID, Message: note})
		res, err = e.finishTask(idx, t, ts, cache.TaskPending)
		return res, true, err
	}
	return taskResult{}, false, nil
}

// startTask journals the task running and readies its work: checked
// again, or written back from the boundaries (work.go).
func (e *engine) startTask(ctx context.Context, idx int, t extractor.Task, ts *taskState) error {
	if t0, ok := e.aheadSince[t.ID]; ok && t0.Before(ts.row.StartedAt) {
		ts.row.StartedAt = t0 // its agent started ahead, with its wave
	}
	ts.row.Status = cache.TaskRunning
	if err := e.j.PutTask(ts.row); err != nil {
		return err
	}
	e.emit(Event{Type: EvTaskStarted, Task: t.ID, Title: t.Title, Index: idx + 1, Count: len(e.sel.Tasks)})
	if err := e.recheckWork(ctx, t.ID); err != nil {
		return err
	}
	return e.restoreWork(ctx, t.ID, ts)
}

// attemptRun is what the units of one attempt came to.
type attemptRun struct {
	allReplayed bool
	hit         *cache.Unit // the last replayed unit
	failure     string      // why the agent call failed ("" none)
	carried     *cache.Gate // a replayed failure's journaled agent-failure gate
	final       string      // identity of the last unit that completed
	crossed     bool        // replayed from another run (acrossruns.go)
	conflict    bool        // its work, done by another run, did not merge (failure says where)
}

// runAttempt runs the units of one attempt (facts) in order, each as
// decide says: the attempt of another run's chain it replays across
// runs, a replay of a unit the lineage journaled (or of a failure the
// chain went on from), or a live dispatch (a call made ahead taken at
// its turn among them); a failed call ends the attempt.
func (e *engine) runAttempt(ctx context.Context, idx int, t extractor.Task, ts *taskState, facts unit.Facts, units []unit.Unit) (attemptRun, error) {
	if ac := ts.across; ac != nil && facts.Attempt <= len(ac.attempts) {
		return e.replayAcross(ctx, t, ts, facts.Attempt, units, ac)
	}
	a := attemptRun{allReplayed: true}
	for i, u := range units {
		d, err := e.run.decide(t, facts, units, i, decideAt{tree: e.prev.Tree, accept: e.acrossWork(ctx), merge: ctx})
		if err != nil {
			return a, err
		}
		if facts.Attempt == 1 && i == 0 && d.choice == choiceLive {
			e.sayDeclined(t, ts)
		}
		switch d.choice {
		case choiceAcross:
			ts.across = d.across
			return e.replayAcross(ctx, t, ts, facts.Attempt, units, d.across)
		case choiceReplay:
			if err := e.replayUnit(t, ts, u, d.hit, false); err != nil {
				return a, err
			}
			a.hit = d.hit
			a.final = d.hit.Identity // u's, or a fallback's that took the call
			continue
		case choiceReplayFailure:
			// The attempt chain went on after this failure: it replays
			// as that failure, and the next attempt as what followed it.
			if err := e.replayUnit(t, ts, u, d.hit, true); err != nil {
				return a, err
			}
			a.carried, a.failure = &d.gate, d.gate.Feedback
			return a, nil
		}
		a.allReplayed = false
		reasons := d.reasons
		if ts.retryWhy != "" && u.Attempt > 1 && (len(reasons) == 0 || len(reasons) == 1 && reasons[0] == "never ran") {
			// "never ran" is true of the attempt, and says nothing: the
			// one before it failed.
			reasons = []string{ts.retryWhy}
		}
		fail, did, err := e.dispatch(ctx, idx, t, u, facts, reasons)
		ts.live++
		e.sawLive = true
		e.run.live[t.ID] = true
		if err != nil {
			return a, err
		}
		if fail != "" {
			a.failure = fail
			break
		}
		a.final = did
	}
	return a, nil
}

// sayDeclined notes, once, in the task's row and as a concern, a replay
// across runs the trust rule declined: why this task costs agent calls.
func (e *engine) sayDeclined(t extractor.Task, ts *taskState) {
	if d, ok := e.declined[t.ID]; ok {
		note := "not replayed: " + d
		ts.row.Concerns = append(ts.row.Concerns, note)
		e.emit(Event{Type: EvConcern, Task: t.ID, Message: note})
	}
}

// replayUnit journals unit u of task t as a replay of h (a completed
// unit, or failed: a failure the chain went on from) and says so.
func (e *engine) replayUnit(t extractor.Task, ts *taskState, u unit.Unit, h *cache.Unit, failed bool) error {
	if _, err := e.j.AddReplayedUnit(e.runID, u.ID, h); err != nil {
		return err
	}
	ts.replayed++
	ev := Event{Type: EvUnitReplayed, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: u.Attempt, Source: "replayed"}
	if failed {
		ev.From, ev.Message = h.RunID+":"+h.UnitID, "failed: "+firstLine(h.Error)
	} else {
		ev.From = h.RunID + ":" + h.UnitID
		if h.ReplayedFromRun != "" {
			ev.From = h.ReplayedFromRun + ":" + h.ReplayedFromUnit
		}
		ev.TokensIn, ev.TokensOut, ev.CostUSD = h.TokensIn, h.TokensOut, h.CostUSD
	}
	e.emit(ev)
	return nil
}

// judge says whether attempt a passed and, if not, its feedback: a failed
// call's failure, a replayed gate's verdict (decideGate), or the gate run
// now (none: it passed).
func (e *engine) judge(ctx context.Context, t extractor.Task, attempt int, gateCmd string, a attemptRun) (bool, string, error) {
	switch {
	case a.carried != nil:
		e.carryGate(t, *a.carried)
		return false, a.carried.Feedback, nil
	case a.failure != "":
		e.recordGate(t, attempt, cache.Gate{Command: agentGate, Passed: false, ExitCode: -1, Feedback: a.failure})
		return false, a.failure, nil
	case a.allReplayed && a.hit != nil && !a.crossed:
		d := e.run.decideGate(t, attempt, a.hit)
		switch d.choice {
		case gateReplay:
			e.carryGate(t, d.g)
			return d.g.Passed, d.g.Feedback, nil
		case gateNone:
			return true, "", nil
		}
	case gateCmd == "":
		return true, "", nil
	}
	g, err := e.liveGate(ctx, t, attempt, gateCmd, false)
	if err != nil {
		return false, "", err
	}
	return g.Passed, g.Feedback(), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// failedChain is the journaled failure of unit u that the task's attempt
// chain went on from: a failed live unit of the same identity in the
// lineage, with the agent-failure gate its next attempt took as feedback,
// while the lineage holds a later attempt of the task. It replays as that
// failure (no agent call), so a chain that reached done through a failed
// call (a 429, say) replays whole instead of paying for the work twice. A
// failure that was the task's last attempt is retried live.
func (e *engine) failedChain(t extractor.Task, u unit.Unit) (*cache.Unit, cache.Gate, bool) {
	if e.lineage.j == nil || len(e.lineage.runs) == 0 || e.work.mustRun(t.ID) || e.lineage.lastAttempt(t.ID) <= u.Attempt {
		return nil, cache.Gate{}, false
	}
	f, ok, err := e.lineage.findFailed(u.Identity)
	if err != nil || !ok {
		return nil, cache.Gate{}, false
	}
	g, ok := e.lineage.journaledGate(f.RunID, t.ID, u.Attempt)
	if !ok || g.Command != agentGate || g.Passed {
		return nil, cache.Gate{}, false
	}
	return f, g, true
}

// carryGate journals gate g, from an earlier run, as this run's (replayed).
// An agent failure's verdict (agentGate) gets no gate event, as a live one
// gets none (recordGate): no gate ran; the failed unit's unit_replayed
// event says why the call failed.
func (e *engine) carryGate(t extractor.Task, g cache.Gate) {
	g.RunID, g.Replayed, g.At = e.runID, true, e.now()
	_ = e.j.PutGate(g)
	if g.Command == agentGate {
		return
	}
	e.emit(Event{Type: EvGate, Task: t.ID, Attempt: g.Attempt, Command: g.Command, Passed: boolp(g.Passed),
		ExitCode: intp(g.ExitCode), Source: "replayed"})
}

func (e *engine) recordGate(t extractor.Task, attempt int, g cache.Gate) {
	g.RunID, g.TaskID, g.Attempt, g.At = e.runID, t.ID, attempt, e.now()
	// No gate event: no gate ran. The unit_finished event already says
	// why the call failed.
	_ = e.j.PutGate(g)
}

// liveGate runs the gate now and journals it. A recheck (a blocked task's
// gate run before any new attempt) that passes journals the identity it
// stands in for (standIn).
func (e *engine) liveGate(ctx context.Context, t extractor.Task, attempt int, cmd string, recheck bool) (GateResult, error) {
	if e.held != nil {
		return GateResult{}, errNeedsLive
	}
	e.sawLiveGate = true
	e.liveGates++
	w, err := e.j.NewBlobWriter()
	if err != nil {
		return GateResult{}, err
	}
	env := e.protocolEnv(t, attempt, "gate", "", "", "")
	var wrap func([]string) ([]string, error)
	if e.s.SandboxGates {
		var closeBox func()
		if wrap, env, closeBox, err = e.sandboxed(ctx, e.o.RepoRoot, env); err != nil {
			_ = w.Close()
			return GateResult{}, err
		}
		defer closeBox()
	}
	stopBeat := e.beat(ctx, t, attempt, "gate: "+firstLine(cmd), nil, time.Time{})
	g, err := runGate(ctx, e.lock, e.o.RepoRoot, cmd, env, time.Duration(e.s.Timeout), w, wrap, wrap == nil || !e.box.Reaps())
	stopBeat()
	if cerr := w.Close(); err == nil && cerr != nil {
		err = e.goneWithJournal(cerr)
	}
	if err != nil {
		return g, err
	}
	row := cache.Gate{RunID: e.runID, TaskID: t.ID, Attempt: attempt, Command: cmd, Passed: g.Passed,
		ExitCode: g.ExitCode, Output: w.Hash(), Feedback: g.Feedback(), Duration: g.Duration, At: e.now()}
	if recheck && g.Passed {
		if row.StandsFor, err = e.run.standIn(t, attempt, row.Feedback); err != nil {
			return g, err
		}
	}
	if err := e.j.PutGate(row); err != nil {
		return g, err
	}
	msg := ""
	if !g.Passed {
		msg = GateSummary(string(g.Output))
	}
	if recheck {
		msg = strings.TrimSpace("recheck " + msg)
	}
	ev := Event{Type: EvGate, Task: t.ID, Attempt: attempt, Command: cmd, Passed: boolp(g.Passed),
		ExitCode: intp(g.ExitCode), Source: "live", Millis: g.Duration.Milliseconds(), Message: msg}
	if wrap != nil {
		ev.Sandbox = e.s.SandboxTool
	}
	e.emit(ev)
	return g, nil
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n ")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// protocolEnv is the IMPLLOOP_* environment of an agent call or a gate.
// planSHA is the unit's preimage's plan_sha256: set only for a unit whose
// prompt reads the plan, so that the variable never carries an input its
// identity does not hash (a gate gets none).
func (e *engine) protocolEnv(t extractor.Task, attempt int, role, planSHA, ctxFile, promptFile string) map[string]string {
	return agent.ProtocolEnv(e.runID, t.ID, attempt, role, planSHA, ctxFile, promptFile)
}

// dispatch runs one unit live: journaled running before the call, completed
// or failed after. It returns a non-empty failure when the call did not
// complete (non-zero exit, error result, timeout): the attempt failed, and
// the identity of the call that did the work (u's, or a fallback's). A
// call made ahead in a worktree (parallel.go) is journaled the same way at
// this point, and its work merged into the work tree.
//
// A call that hits a usage limit, a rate limit or an overload is made
// again, by a fallback or after a wait (limits.go): the unit stays the
// same, its row takes the identity of whoever makes the call, and what
// the limited calls reported is added to its figures. errLimitStop when
// the run stops instead of waiting.
func (e *engine) dispatch(ctx context.Context, idx int, t extractor.Task, u unit.Unit, facts unit.Facts, reasons []string) (string, string, error) {
	if e.held != nil {
		return "", "", errNeedsLive
	}
	if err := e.beforeLive(ctx); err != nil {
		return "", "", err
	}
	lc := &liveCall{t: t, u: u, facts: facts}
	var err error
	if lc.canon, err = identity.Canonical(u.Preimage); err != nil {
		return "", "", err
	}
	if lc.ahead, err = e.takeAhead(ctx, t, u); err != nil {
		return "", "", err
	}
	if err := e.startLive(lc, idx, reasons); err != nil {
		return "", "", err
	}
	if err := e.firstCall(ctx, lc); err != nil {
		return "", "", err
	}
	if err := e.callPastLimits(ctx, lc); err != nil {
		return "", "", err
	}
	return e.finishLive(ctx, lc)
}

// beforeLive calls Options.BeforeLive before the run's first agent call;
// an error from it interrupts the run (context.Canceled).
func (e *engine) beforeLive(ctx context.Context) error {
	if e.o.BeforeLive == nil || e.liveOK {
		return nil
	}
	if err := e.o.BeforeLive(ctx); err != nil {
		return fmt.Errorf("%w: %w", context.Canceled, err)
	}
	e.liveOK = true
	return nil
}

// liveCall is one unit dispatch runs live, as it goes through its steps:
// who makes the call (m) under which identity (u, canon: a fallback's
// once one takes it), the call made ahead it takes instead (nil: none),
// its prompt files ("" while a call made ahead needed none), when it
// started, and what the call returned (c), with what calls stopped by a
// limit reported (limited) and why a call made ahead's work could not be
// merged (mergeFailure).
type liveCall struct {
	t                   extractor.Task
	u                   unit.Unit
	facts               unit.Facts
	canon               []byte
	m                   *member
	ahead               *early
	ctxFile, promptFile string
	started             time.Time
	c                   agentCall
	limited             agent.Result
	mergeFailure        string
}

// takeAhead is the call made ahead for unit u of task t, if any: this
// run's, made with its wave (waited for), else one a run this one resumes
// made and never reached the turn of: taken, not made again. It is noted
// as the task's, should a discard be seen (attribute.go).
func (e *engine) takeAhead(ctx context.Context, t extractor.Task, u unit.Unit) (*early, error) {
	stopBeat := e.beat(ctx, t, u.Attempt, "agent call (made ahead, in its worktree)", nil, time.Time{})
	ahead, err := e.takeEarly(u)
	stopBeat()
	if err != nil {
		return nil, err
	}
	if ahead == nil {
		if ahead, err = e.adoptAhead(ctx, u); err != nil {
			return nil, err
		}
	}
	if ahead != nil {
		if e.settled == nil {
			e.settled = map[string]*early{}
		}
		e.settled[t.ID] = ahead
	}
	return ahead, nil
}

// startLive journals lc's unit running and says so. Who makes the call:
// the first of the chain whose limit (if it hit one earlier in the run)
// has lifted; a call made ahead was made by the run's own agent.
func (e *engine) startLive(lc *liveCall, idx int, reasons []string) error {
	var promptHash string
	var err error
	if lc.ahead == nil {
		if lc.ctxFile, lc.promptFile, promptHash, err = unitFiles(e.j, e.runID, lc.u); err != nil {
			return err
		}
		lc.started, lc.m = e.now(), e.firstFree()
	} else {
		promptHash, lc.started, lc.m = lc.ahead.prompt, lc.ahead.started, e.chain[0]
	}
	if lc.m != e.chain[0] {
		if err := e.callAs(lc, lc.m); err != nil {
			return err
		}
	}
	t, u := lc.t, lc.u
	if err := e.j.StartUnit(cache.Unit{RunID: e.runID, UnitID: u.ID, TaskID: t.ID, Role: u.Role, Attempt: u.Attempt,
		Identity: u.Identity, Preimage: lc.canon, Prompt: promptHash, StartedAt: lc.started}); err != nil {
		return err
	}
	ev := Event{Type: EvUnitStarted, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: u.Attempt, Source: "live", Reasons: reasons, Index: idx + 1, Count: len(e.sel.Tasks),
		Sandbox: e.s.SandboxTool}
	if lc.m != e.chain[0] {
		ev.Agent, ev.Model = lc.m.agent, lc.m.model
	}
	switch ahead := lc.ahead; {
	case ahead != nil && ahead.adopted:
		ev.Message = "no agent call: its result and work taken from run " + ahead.staged.RunID + "'s journal"
	case ahead != nil:
		ev.Message = "ran with its wave, in its own worktree"
		if rel, err := filepath.Rel(e.o.RepoRoot, ahead.worktree); err == nil {
			ev.Worktree = filepath.ToSlash(rel)
		}
	}
	e.emit(ev)
	return nil
}

// callAs makes chain member m the one who makes lc's call: the unit as m
// makes it (its identity and preimage).
func (e *engine) callAs(lc *liveCall, m *member) error {
	u, err := e.unitFor(lc.t, m, lc.facts, lc.u)
	if err != nil {
		return err
	}
	canon, err := identity.Canonical(u.Preimage)
	if err != nil {
		return err
	}
	lc.u, lc.canon, lc.m = u, canon, m
	return nil
}

// firstCall makes lc's call, or takes the call made ahead: its work is
// merged into the work tree now (unless it hit a limit: it is made
// again).
func (e *engine) firstCall(ctx context.Context, lc *liveCall) error {
	if lc.ahead == nil {
		var err error
		if lc.c, err = e.callMember(ctx, lc.t, lc.u, lc.m, lc.ctxFile, lc.promptFile); err != nil {
			return err
		}
		return e.cutShort(ctx, lc)
	}
	lc.c = lc.ahead.call
	if err := e.cutShort(ctx, lc); err != nil {
		return err
	}
	if lc.c.res.Limit == nil {
		// A call that returned by itself is merged even as the run is
		// interrupted: its work is paid for, and is journaled with it
		// before the run stops, as a call in the work tree's is.
		var err error
		if lc.mergeFailure, err = e.mergeEarly(context.WithoutCancel(ctx), lc.ahead); err != nil {
			return err
		}
	}
	return e.cutShort(ctx, lc)
}

// cutShort journals lc's unit interrupted, and says the run is, when its
// call was cut short by the interrupt: an agent that had already exited
// when the signal came has a result, which is journaled (durable) before
// the run stops.
func (e *engine) cutShort(ctx context.Context, lc *liveCall) error {
	if lc.c.runErr != nil && ctx.Err() != nil {
		_ = e.j.MarkInterrupted(e.runID, lc.u.ID, lc.c.stdout, lc.c.stderr)
		return context.Canceled
	}
	return nil
}

// callPastLimits makes lc's call again while it hits a limit, by a
// fallback or after a wait (limits.go). What the limited calls spent
// counts (a usage limit may come after paid work), added to the unit's
// figures.
func (e *engine) callPastLimits(ctx context.Context, lc *liveCall) error {
	t := lc.t
	for lc.c.runErr == nil && lc.c.res.Limit != nil {
		e.sane(t, &lc.c.res)
		e.count(t, lc.c.res)
		addFigures(&lc.limited, lc.c.res)
		next, err := e.afterLimit(ctx, t, lc.u, lc.m, lc.c.res.Limit)
		if err != nil {
			return e.stopAtLimit(ctx, lc, err)
		}
		if next != lc.m {
			if err := e.callAs(lc, next); err != nil {
				return err
			}
			if err := e.j.RetargetUnit(e.runID, lc.u.ID, lc.u.Identity, lc.canon); err != nil {
				return err
			}
		}
		if lc.ctxFile == "" { // the call made ahead: its files are where unitFiles puts them
			if lc.ctxFile, lc.promptFile, _, err = unitFiles(e.j, e.runID, lc.u); err != nil {
				return err
			}
		}
		if lc.c, err = e.callMember(ctx, t, lc.u, lc.m, lc.ctxFile, lc.promptFile); err != nil {
			return err
		}
		if err := e.cutShort(ctx, lc); err != nil {
			return err
		}
	}
	return nil
}

// stopAtLimit journals lc's unit interrupted, with what its limited calls
// spent, when the run stops at a limit instead of waiting (err, from
// afterLimit): context.Canceled when it was interrupted meanwhile.
func (e *engine) stopAtLimit(ctx context.Context, lc *liveCall, err error) error {
	c, limited := lc.c, lc.limited
	o := cache.Outcome{Status: cache.UnitInterrupted, Stdout: c.stdout, Stderr: c.stderr,
		TokensIn: limited.InputTokens, TokensOut: limited.OutputTokens, CacheRead: limited.CacheRead, CacheWrite: limited.CacheWrite,
		CostUSD: limited.CostUSD, ExitCode: c.res.ExitCode, Error: "stopped: " + firstLine(c.res.Limit.Message), FinishedAt: e.now()}
	if ferr := e.j.FinishUnit(e.runID, lc.u.ID, o); ferr != nil {
		return ferr
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return context.Canceled
	}
	return err
}

// finishLive journals lc's unit completed or failed, with its figures,
// settles the call made ahead it took, and says so: the failure ("" when
// the call completed) and the identity of whoever made the call.
func (e *engine) finishLive(ctx context.Context, lc *liveCall) (string, string, error) {
	t, u, c := lc.t, lc.u, lc.c
	res := c.res
	e.sane(t, &res)
	e.count(t, res)
	lc.m.backoff = 0
	addFigures(&res, lc.limited)
	resJSON, _ := json.Marshal(res)
	resHash, err := e.j.PutBlob(resJSON)
	if err != nil {
		return "", "", err
	}
	o := cache.Outcome{Status: cache.UnitCompleted, Stdout: c.stdout, Stderr: c.stderr, Result: resHash,
		TokensIn: res.InputTokens, TokensOut: res.OutputTokens, CacheRead: res.CacheRead, CacheWrite: res.CacheWrite,
		CostUSD: res.CostUSD, ExitCode: res.ExitCode, FinishedAt: e.now()}
	failure := cmp.Or(e.callFailure(res, c.runErr, c.stderr), lc.mergeFailure)
	if failure != "" {
		o.Status, o.Error = cache.UnitFailed, failure
	}
	if lc.ahead != nil && c.res.Limit == nil && lc.limited == (agent.Result{}) {
		o.FinishedAt = lc.ahead.finished
	}
	if err := e.settleAhead(ctx, lc.ahead, u.ID, o); err != nil {
		return "", "", err
	}
	fin := Event{Type: EvUnitFinished, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: u.Attempt, Source: "live",
		Status: string(o.Status), ExitCode: intp(res.ExitCode), TokensIn: res.InputTokens, TokensOut: res.OutputTokens,
		CostUSD: res.CostUSD, Millis: o.FinishedAt.Sub(lc.started).Milliseconds(), Message: firstLine(failure)}
	if lc.m != e.chain[0] {
		fin.Agent, fin.Model = lc.m.agent, lc.m.model
	}
	e.emit(fin)
	if ctx.Err() != nil {
		return failure, u.Identity, context.Canceled
	}
	return failure, u.Identity, nil
}

// callFailure is why a call that returned res (runErr: it could not run)
// failed, "" when it completed; errHash is its stderr's blob.
func (e *engine) callFailure(res agent.Result, runErr error, errHash string) string {
	switch {
	case runErr != nil && res.TimedOut:
		return fmt.Sprintf("the agent was killed after the %s timeout", time.Duration(e.s.Timeout))
	case runErr != nil:
		return "the agent could not run: " + runErr.Error()
	case res.ExitCode != 0 && res.Error != "":
		// The error the agent reported says it better than stderr.
		return fmt.Sprintf("the agent exited with status %d: %s", res.ExitCode, res.Error)
	case res.ExitCode != 0:
		return fmt.Sprintf("the agent exited with status %d%s", res.ExitCode, e.stderrTail(errHash))
	case res.IsError:
		return "the agent reported an error: " + firstLine(cmp.Or(res.Error, res.Text))
	}
	return ""
}

// firstFree is the first member of the chain not waiting for a limit to
// lift (the run's own agent, unless it hit one), else the run's own.
func (e *engine) firstFree() *member {
	now := e.now()
	for _, m := range e.chain {
		if !m.until.After(now) {
			return m
		}
	}
	return e.chain[0]
}

// sane refuses the figures of r that cannot be right (figures.go), each
// a concern of task t.
func (e *engine) sane(t extractor.Task, r *agent.Result) {
	for _, c := range refuseFigures(r) {
		if e.callConcerns == nil {
			e.callConcerns = map[string][]string{}
		}
		e.callConcerns[t.ID] = append(e.callConcerns[t.ID], c)
		e.emit(Event{Type: EvConcern, Task: t.ID, Message: c})
	}
}

// addFigures adds b's figures (refused ones already zero) to a's.
func addFigures(a *agent.Result, b agent.Result) {
	a.InputTokens = addTokens(a.InputTokens, b.InputTokens)
	a.OutputTokens = addTokens(a.OutputTokens, b.OutputTokens)
	a.CacheRead = addTokens(a.CacheRead, b.CacheRead)
	a.CacheWrite = addTokens(a.CacheWrite, b.CacheWrite)
	a.CostUSD = addCost(a.CostUSD, b.CostUSD)
}

// callMember makes call u of task t with chain member m in the work tree.
func (e *engine) callMember(ctx context.Context, t extractor.Task, u unit.Unit, m *member, ctxFile, promptFile string) (agentCall, error) {
	c, err := e.callAgent(ctx, e.j, t, u, m, e.o.RepoRoot, ctxFile, promptFile, func(pid int) { e.lock.SetChild("agent", pid) })
	e.lock.SetChild("", 0)
	return c, err
}

// agentCall is what one agent call returned: its result, why it could not
// run, and its stdout and stderr as blobs.
type agentCall struct {
	res            agent.Result
	runErr         error
	stdout, stderr string
}

// callAgent runs unit u of task t with chain member m in dir, its output
// streamed into j's blobs, with the work tree's lock descriptor handed
// down; started, when given, learns the agent's pid.
func (e *engine) callAgent(ctx context.Context, j *cache.Journal, t extractor.Task, u unit.Unit, m *member, dir, ctxFile, promptFile string, started func(int)) (agentCall, error) {
	stdout, err := j.NewBlobWriter()
	if err != nil {
		return agentCall{}, err
	}
	stderr, err := j.NewBlobWriter()
	if err != nil {
		return agentCall{}, err
	}
	var c agentCall
	tokens := &tokensSoFar{}
	what := "agent call"
	if m != e.chain[0] {
		what += " (" + m.String() + ")"
	}
	req := agent.Request{
		Prompt: u.Prompt, Context: u.Context, Dir: dir, Env: e.protocolEnv(t, u.Attempt, u.Role, u.Preimage.PlanSHA256, ctxFile, promptFile),
		Model: m.model, Timeout: time.Duration(e.s.Timeout), Stdout: stdout, Stderr: stderr,
		Hold: e.lock.File(), Started: started, OnTokens: tokens.set, Now: e.now,
	}
	if e.box != nil {
		wrap, env, closeBox, err := e.sandboxed(ctx, dir, req.Env)
		if err != nil {
			_ = stdout.Close()
			_ = stderr.Close()
			return agentCall{}, err
		}
		defer closeBox()
		req.Wrap, req.Env = wrap, env
		if e.box.Reaps() {
			// Nothing of the call can outlive it, so it need not hold
			// the lock (and inside, it could unlock it).
			req.Hold = nil
		}
	}
	var stopBeat func()
	if started != nil { // in the main tree: calls made ahead have no heartbeat of their own
		stopBeat = e.beat(ctx, t, u.Attempt, what, tokens, time.Time{})
	}
	c.res, c.runErr = m.ag.Run(ctx, req)
	if stopBeat != nil {
		stopBeat()
	}
	_ = stdout.Close()
	_ = stderr.Close()
	c.stdout, c.stderr = stdout.Hash(), stderr.Hash()
	return c, nil
}

// unitFiles writes unit u's context and prompt where its agent reads them
// (IMPLLOOP_CONTEXT_FILE, IMPLLOOP_PROMPT_FILE) and stores the prompt in
// j's blobs.
func unitFiles(j *cache.Journal, runID string, u unit.Unit) (ctxFile, promptFile, promptHash string, err error) {
	if promptHash, err = j.PutBlob(u.Prompt); err != nil {
		return "", "", "", err
	}
	dir := filepath.Join(j.Dir(), "runs", runID, "units", strings.NewReplacer("/", "_", "~", "_").Replace(u.ID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", "", err
	}
	ctxFile, promptFile = filepath.Join(dir, "context.json"), filepath.Join(dir, "prompt.md")
	if err := os.WriteFile(ctxFile, u.Context, 0o644); err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(promptFile, u.Prompt, 0o644); err != nil {
		return "", "", "", err
	}
	return ctxFile, promptFile, promptHash, nil
}

func (e *engine) stderrTail(hash string) string {
	b, err := e.j.ReadBlob(hash)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return ""
	}
	// The first line stands alone (block reasons and progress show only
	// it): it ends with the last line of stderr, the rest follows.
	t := tail(b, 2048)
	last := cmp.Or(agent.StderrError([]byte(t)), lastLine(t))
	if strings.TrimSpace(t) == strings.TrimSpace(last) {
		return ": " + strings.TrimSpace(last)
	}
	return ": " + strings.TrimSpace(last) + "\n\nthe end of its stderr:\n" + t
}

// why says why a unit runs live: the fields that differ from the closest
// journaled unit of the same task, role and attempt.
func (p *pass) why(t extractor.Task, u unit.Unit) []string {
	e, taskID := p.e, t.ID
	if e.work.mustRun(taskID) {
		return []string{"its work is no longer in the tree; --rerun-lost: it runs again"}
	}
	if len(e.lineage.runs) == 0 {
		if e.o.Parent == "" {
			return nil
		}
		return []string{"never ran"}
	}
	c, found, err := e.lineage.closestUnit(taskID, u.Role, u.Attempt)
	if err != nil || !found {
		c = nil
	}
	var canon []byte
	if c != nil {
		if canon, err = identity.Canonical(u.Preimage); err != nil {
			return nil
		}
	}
	why, _ := liveReasons(c, u.Identity, canon, func(old []string) []string { return p.depReasons(t, old) })
	return why
}

// liveReasons words why a unit with identity id and canonical preimage
// runs live instead of replaying c, the closest journaled unit of its
// task, role and attempt (nil: there is none), and lists the preimage
// fields that differ. named names the dependencies behind a change of
// artifacts, given c's; nil when it cannot. The one place these words are
// made: the loop journals them when it dispatches a unit, and Explain
// words a unit journaled without them here too.
func liveReasons(c *cache.Unit, id string, preimage []byte, named func(old []string) []string) ([]string, []identity.Change) {
	if c == nil {
		return []string{"never ran"}, nil
	}
	if c.Identity == id {
		switch c.Status {
		case cache.UnitInterrupted:
			if strings.HasPrefix(c.Error, "stopped: ") {
				return []string{"stopped before it completed (" + strings.TrimPrefix(c.Error, "stopped: ") + ")"}, nil
			}
			return []string{"interrupted before it completed"}, nil
		case cache.UnitRunning:
			return []string{"interrupted before it completed"}, nil
		case cache.UnitFailed:
			return []string{"failed before"}, nil
		}
		return []string{"result missing from the journal"}, nil
	}
	changes, err := identity.Diff(c.Preimage, preimage)
	if err != nil {
		return []string{"identity changed"}, nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, ch := range changes {
		if ch.Field == "artifacts" {
			// Name the dependencies: "dependency 1 runs live" says more
			// than "dependency artifacts changed".
			if old, err := identity.Parse(c.Preimage); err == nil {
				if deps := named(old.Artifacts); len(deps) > 0 {
					for _, r := range deps {
						add(r)
					}
					continue
				}
			}
		}
		add(ch.Reason())
	}
	if len(out) == 0 {
		out = []string{"identity changed"}
	}
	return out, changes
}

// depReason says why dependency task's artifact is not the one the
// closest journaled unit was built on: it runs live in this run (ran,
// once the run is over), or it replayed another unit than before.
func depReason(task string, live, planning bool) string {
	switch {
	case live && planning:
		return "dependency " + task + " runs live"
	case live:
		return "dependency " + task + " ran live"
	}
	return "dependency " + task + " changed"
}

// block records task t blocked for reason after boundary verdict v: in
// its row, in BLOCKED.md (which, with --on-blocked continue, explains
// every block), naming a stash made since the last block and the gate's
// output (gateOutput[0], when its gate failed), and as an event.
func (e *engine) block(ctx context.Context, t extractor.Task, ts *taskState, reason string, v guardResult, gateOutput ...string) error {
	ts.row.BlockReason = reason
	b := blockInfo{RunID: e.runID, PlanPath: e.s.Plan, TaskID: t.ID, Title: t.Title, Attempts: ts.row.Attempts,
		Reason: reason, Lost: v.lost, LostKinds: v.kinds}
	if len(gateOutput) > 0 {
		b.Gate, b.Output = e.gateCommand(t), gateOutput[0]
	}
	b.AgentFailure = ts.agentFailure
	b.NoGate = e.gateCommand(t) == ""
	if top, err := e.stashTop(ctx); err == nil && top.Commit != "" && top.Commit != e.stash.Commit {
		b.Stash, e.stash = top, top
	}
	b.Sandbox = e.s.SandboxTool
	e.blocks = append(e.blocks, b)
	if err := writeBlocked(e.o.RepoRoot, e.blocks); err != nil {
		return err
	}
	e.blockedWrote = true
	e.emit(Event{Type: EvBlocked, Task: t.ID, Title: t.Title, Message: reason, Paths: v.lost})
	return nil
}

// afterTask takes the boundary after the task, runs the guard, writes the
// task's row and, on a block, BLOCKED.md.
func (e *engine) afterTask(ctx context.Context, idx int, t extractor.Task, ts *taskState,
	status cache.TaskStatus, reason string, gateOutput ...string) (taskResult, error) {
	// A task that ran nothing (every unit and gate replayed) cannot have
	// changed the worktree, so it takes no boundary: the next task that
	// runs something compares against the last boundary taken, which is
	// still the state before it. On a fully cached resume this saves one
	// snapshot commit per task, most of the resume's time.
	if status == cache.TaskDone && ts.live == 0 && e.liveGates == ts.gates0 && !ts.restored {
		return e.finishTask(idx, t, ts, status)
	}
	v, err := e.takeBoundary(ctx, t.ID, ts.live == 0, "after task "+t.ID)
	if err != nil {
		return taskResult{}, err
	}
	if v.noChanges != "" && status == cache.TaskDone {
		if row := e.lineage.lastRow(t.ID); row != nil && row.Status == cache.TaskDone {
			// Run again (its text, a dependency changed) and its gate
			// passed with the tree as it was: the work an earlier run did
			// is still there, and nothing needed to change. Not a concern.
			v.concerns = slices.DeleteFunc(v.concerns, func(c string) bool { return c == v.noChanges })
		}
	}
	if v.noChanges != "" && status == cache.TaskPending && e.stopped != nil && e.stopped.kind == stopWait {
		// The call hit a usage limit the run does not wait out: it did
		// not complete, so that it changed nothing is no news (its
		// "stopped:" concern says why).
		v.concerns = slices.DeleteFunc(v.concerns, func(c string) bool { return c == v.noChanges })
	}
	ts.row.Concerns = append(ts.row.Concerns, v.concerns...)
	if len(v.vanished) > 0 {
		status = cache.TaskBlocked
		what := "implloop's own record of the run was tampered with during the task: " + strings.Join(v.vanished, "; ")
		if reason == "" {
			reason = what
		} else {
			reason += "; and " + what
		}
	}
	if len(v.lost) > 0 {
		ts.row.LostPaths = v.lost
		status = cache.TaskBlocked
		var whys []string
		if n := len(v.lost) - len(v.carried); n > 0 {
			w := "the task discarded work of earlier tasks: " + shownPaths(v.lost[:n])
			if reason != "" {
				w = "it discarded work of earlier tasks: " + shownPaths(v.lost[:n])
			}
			if v.aheadWhy != "" {
				w += " (" + v.aheadWhy + ")"
			}
			whys = append(whys, w)
		}
		if v.carriedWhy != "" {
			whys = append(whys, v.carriedWhy)
		}
		if reason == "" {
			reason = strings.Join(whys, "; and ")
		} else {
			reason += "; and " + strings.Join(whys, "; and ")
		}
	}
	for _, c := range v.concerns {
		e.emit(Event{Type: EvConcern, Task: t.ID, Message: c})
	}
	if status == cache.TaskBlocked {
		if err := e.block(ctx, t, ts, reason, v, gateOutput...); err != nil {
			return taskResult{}, err
		}
	}
	return e.finishTask(idx, t, ts, status)
}
