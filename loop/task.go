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
	"github.com/implloop/implloop/boundary"
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
	gateCmd := e.gateCommand(t)

	// A task that ended blocked is never replayed as blocked: its gate runs
	// first, since the user may have fixed it by hand. A task whose last
	// run began with such a recheck begins with it here too, while it is
	// the task that was fixed (resume.go, startOf: the plan starts the same).
	fixedOutside := func(note string) (taskResult, error) {
		ts.row.Attempts = 0
		if note != "" {
			ts.row.Concerns = append(ts.row.Concerns, note)
		}
		return e.afterTask(ctx, idx, t, ts, cache.TaskDone, "")
	}
	st, err := e.run.startOf(t)
	if err != nil {
		return taskResult{}, err
	}
	if st.carry != nil {
		e.carryGate(t, *st.carry)
	}
	attempt, feedback := st.attempt, st.feedback
	switch st.kind {
	case startFixed:
		return fixedOutside("")
	case startRecheck:
		g, err := e.liveGate(ctx, t, st.attempt, gateCmd, true)
		if err != nil {
			return taskResult{}, err
		}
		if g.Passed {
			return fixedOutside("fixed outside the loop: the gate passes now, no agent call")
		}
		attempt, feedback = st.attempt+1, g.Feedback()
		ts.retryWhy = "after its gate, run first, failed again"
	}

	liveAttempts := 0
	for {
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
			reason := fmt.Sprintf("the gate failed on %d attempt(s)", ts.row.Attempts)
			if sum := GateSummary(feedback); sum != "" {
				reason += ": " + sum
			}
			if a.failure != "" {
				reason = fmt.Sprintf("the agent failed on %d attempt(s): %s", ts.row.Attempts, firstLine(a.failure))
				ts.agentFailure = a.failure
				return e.afterTask(ctx, idx, t, ts, cache.TaskBlocked, reason)
			}
			return e.afterTask(ctx, idx, t, ts, cache.TaskBlocked, reason, feedback)
		}
		ts.retryWhy = "after a failed gate"
		if a.failure != "" {
			ts.retryWhy = "after the agent failed"
		}
		attempt++
	}
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
}

// runAttempt runs the units of one attempt (facts) in order: the
// attempt of another run's chain it replays across runs, or each unit
// replays when its identity completed in the lineage (or as a failure the
// chain went on from), else it is dispatched live; a failed call ends the
// attempt.
func (e *engine) runAttempt(ctx context.Context, idx int, t extractor.Task, ts *taskState, facts unit.Facts, units []unit.Unit) (attemptRun, error) {
	attempt := facts.Attempt
	calledAhead := len(units) > 0 && e.early[units[0].Identity] != nil // with its wave (--jobs): that call stands
	if len(units) > 0 && !calledAhead {
		_, calledAhead = e.lineage.aheadCall(units[0].Identity) // by the run this one resumes: it stands too
	}
	if attempt == 1 && !calledAhead && ts.across == nil {
		ts.across, _ = e.acrossRuns(ctx, t, facts, units)
		if d, ok := e.declined[t.ID]; ok && ts.across == nil {
			// Said once, in the report too: a replay the trust rule
			// declined is why this task costs agent calls.
			note := "not replayed: " + d
			ts.row.Concerns = append(ts.row.Concerns, note)
			e.emit(Event{Type: EvConcern, Task: t.ID, Message: note})
		}
	}
	if ac := ts.across; ac != nil && attempt <= len(ac.attempts) {
		return e.replayAcross(ctx, t, ts, attempt, units, ac)
	}
	a := attemptRun{allReplayed: true}
	for _, u := range units {
		h, ok, err := e.findDone(t, facts, u)
		if err != nil {
			return a, err
		}
		if ok && e.work.mustRun(t.ID) {
			ok = false // its work is gone and --rerun-lost: the agent does it again
		}
		if ok {
			if _, err := e.j.AddReplayedUnit(e.runID, u.ID, h); err != nil {
				return a, err
			}
			ts.replayed++
			a.hit = h
			from := h.RunID + ":" + h.UnitID
			if h.ReplayedFromRun != "" {
				from = h.ReplayedFromRun + ":" + h.ReplayedFromUnit
			}
			e.emit(Event{Type: EvUnitReplayed, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: attempt,
				Source: "replayed", From: from, TokensIn: h.TokensIn, TokensOut: h.TokensOut, CostUSD: h.CostUSD})
			a.final = h.Identity // u's, or a fallback's that took the call
			continue
		}
		if f, g, ok := e.failedChain(t, u); ok {
			// The attempt chain went on after this failure: it
			// replays as that failure, and the next attempt as
			// what followed it.
			if _, err := e.j.AddReplayedUnit(e.runID, u.ID, f); err != nil {
				return a, err
			}
			ts.replayed++
			e.emit(Event{Type: EvUnitReplayed, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: attempt,
				Source: "replayed", From: f.RunID + ":" + f.UnitID, Message: "failed: " + firstLine(f.Error)})
			a.carried, a.failure = &g, g.Feedback
			break
		}
		a.allReplayed = false
		reasons := e.liveWhy(e.run, t, u, e.prev.Tree)
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

// judge says whether attempt a passed and, if not, its feedback: a failed
// call's failure, a replayed gate's verdict, or the gate run now (none: it
// passed).
func (e *engine) judge(ctx context.Context, t extractor.Task, attempt int, gateCmd string, a attemptRun) (bool, string, error) {
	switch {
	case a.carried != nil:
		e.carryGate(t, *a.carried)
		return false, a.carried.Feedback, nil
	case a.failure != "":
		e.recordGate(t, attempt, cache.Gate{Command: agentGate, Passed: false, ExitCode: -1, Feedback: a.failure})
		return false, a.failure, nil
	case a.allReplayed && a.hit != nil && !e.o.Reverify && !a.crossed && e.replayGate(t, attempt, a.hit):
		g, _ := e.lineage.journaledGate(a.hit.RunID, t.ID, attempt)
		return g.Passed, g.Feedback, nil
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

// replayGate carries the gate journaled after the replayed unit over into
// this run. It reports false when there is none (the original run stopped
// before its gate finished), in which case the gate runs live.
func (e *engine) replayGate(t extractor.Task, attempt int, hit *cache.Unit) bool {
	if e.work != nil && e.work.freshGate[t.ID] {
		return false // its work was found gone and written back: ask again
	}
	g, ok := e.lineage.journaledGate(hit.RunID, t.ID, attempt)
	if !ok || !e.gateReplayable(g, e.gateCommand(t)) {
		return false
	}
	e.carryGate(t, g)
	return true
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
	canon, err := identity.Canonical(u.Preimage)
	if err != nil {
		return "", "", err
	}
	stopBeat := e.beat(ctx, t, u.Attempt, "agent call (made ahead, in its worktree)", nil, time.Time{})
	ahead, err := e.takeEarly(u)
	stopBeat()
	if err != nil {
		return "", "", err
	}
	if ahead == nil {
		// Made ahead by a run this one resumes, which stopped before
		// this turn: taken, not made again.
		if ahead, err = e.adoptAhead(ctx, u); err != nil {
			return "", "", err
		}
	}
	if ahead != nil {
		if e.settled == nil {
			e.settled = map[string]*early{}
		}
		e.settled[t.ID] = ahead // what its work was, should a discard be seen (attribute.go)
	}
	var ctxFile, promptFile, promptHash string
	if ahead == nil {
		if ctxFile, promptFile, promptHash, err = unitFiles(e.j, e.runID, u); err != nil {
			return "", "", err
		}
	} else {
		promptHash = ahead.prompt
	}
	started := e.now()
	if ahead != nil {
		started = ahead.started
	}
	// Who makes the call: the first of the chain whose limit (if it hit
	// one earlier in the run) has lifted. A call made ahead was made by
	// the run's own agent.
	m := e.chain[0]
	if ahead == nil {
		m = e.firstFree()
	}
	if m != e.chain[0] {
		if u, err = e.unitFor(t, m, facts, u); err != nil {
			return "", "", err
		}
		if canon, err = identity.Canonical(u.Preimage); err != nil {
			return "", "", err
		}
	}
	if err := e.j.StartUnit(cache.Unit{RunID: e.runID, UnitID: u.ID, TaskID: t.ID, Role: u.Role, Attempt: u.Attempt,
		Identity: u.Identity, Preimage: canon, Prompt: promptHash, StartedAt: started}); err != nil {
		return "", "", err
	}
	ev := Event{Type: EvUnitStarted, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: u.Attempt, Source: "live", Reasons: reasons, Index: idx + 1, Count: len(e.sel.Tasks),
		Sandbox: e.s.SandboxTool}
	if m != e.chain[0] {
		ev.Agent, ev.Model = m.agent, m.model
	}
	switch {
	case ahead != nil && ahead.adopted:
		ev.Message = "no agent call: its result and work taken from run " + ahead.staged.RunID + "'s journal"
	case ahead != nil:
		ev.Message = "ran with its wave, in its own worktree"
		if rel, err := filepath.Rel(e.o.RepoRoot, ahead.worktree); err == nil {
			ev.Worktree = filepath.ToSlash(rel)
		}
	}
	e.emit(ev)

	var c agentCall
	var mergeFailure string
	if ahead != nil {
		c = ahead.call
		if c.runErr != nil && ctx.Err() != nil {
			_ = e.j.MarkInterrupted(e.runID, u.ID, c.stdout, c.stderr)
			return "", "", context.Canceled
		}
		if c.res.Limit == nil {
			if mergeFailure, err = e.mergeEarly(ctx, ahead); err != nil {
				return "", "", err
			}
		}
	} else if c, err = e.callMember(ctx, t, u, m, ctxFile, promptFile); err != nil {
		return "", "", err
	}
	// Interrupted only when the call was cut short: an agent that had
	// already exited when the signal came has a result, which is
	// journaled (durable) before the run stops.
	if c.runErr != nil && ctx.Err() != nil {
		_ = e.j.MarkInterrupted(e.runID, u.ID, c.stdout, c.stderr)
		return "", "", context.Canceled
	}
	// Limits: the call is made again, by a fallback or after a wait. What
	// the limited calls spent counts (a usage limit may come after paid
	// work), added to the unit's figures.
	var limited agent.Result
	for c.runErr == nil && c.res.Limit != nil {
		e.sane(t, &c.res)
		e.count(t, c.res)
		addFigures(&limited, c.res)
		next, err := e.afterLimit(ctx, t, u, m, c.res.Limit)
		if err != nil {
			o := cache.Outcome{Status: cache.UnitInterrupted, Stdout: c.stdout, Stderr: c.stderr,
				TokensIn: limited.InputTokens, TokensOut: limited.OutputTokens, CacheRead: limited.CacheRead, CacheWrite: limited.CacheWrite,
				CostUSD: limited.CostUSD, ExitCode: c.res.ExitCode, Error: "stopped: " + firstLine(c.res.Limit.Message), FinishedAt: e.now()}
			if ferr := e.j.FinishUnit(e.runID, u.ID, o); ferr != nil {
				return "", "", ferr
			}
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return "", "", context.Canceled
			}
			return "", "", err
		}
		if next != m {
			if u, err = e.unitFor(t, next, facts, u); err != nil {
				return "", "", err
			}
			if canon, err = identity.Canonical(u.Preimage); err != nil {
				return "", "", err
			}
			if err := e.j.RetargetUnit(e.runID, u.ID, u.Identity, canon); err != nil {
				return "", "", err
			}
			m = next
		}
		if ctxFile == "" { // the call made ahead: its files are where unitFiles puts them
			if ctxFile, promptFile, _, err = unitFiles(e.j, e.runID, u); err != nil {
				return "", "", err
			}
		}
		if c, err = e.callMember(ctx, t, u, m, ctxFile, promptFile); err != nil {
			return "", "", err
		}
		if c.runErr != nil && ctx.Err() != nil {
			_ = e.j.MarkInterrupted(e.runID, u.ID, c.stdout, c.stderr)
			return "", "", context.Canceled
		}
	}
	res, runErr, outHash, errHash := c.res, c.runErr, c.stdout, c.stderr
	e.sane(t, &res)
	e.count(t, res)
	m.backoff = 0
	addFigures(&res, limited)
	resJSON, _ := json.Marshal(res)
	resHash, err := e.j.PutBlob(resJSON)
	if err != nil {
		return "", "", err
	}
	o := cache.Outcome{Status: cache.UnitCompleted, Stdout: outHash, Stderr: errHash, Result: resHash,
		TokensIn: res.InputTokens, TokensOut: res.OutputTokens, CacheRead: res.CacheRead, CacheWrite: res.CacheWrite,
		CostUSD: res.CostUSD, ExitCode: res.ExitCode, FinishedAt: e.now()}
	failure := ""
	switch {
	case runErr != nil && res.TimedOut:
		failure = fmt.Sprintf("the agent was killed after the %s timeout", time.Duration(e.s.Timeout))
	case runErr != nil:
		failure = "the agent could not run: " + runErr.Error()
	case res.ExitCode != 0 && res.Error != "":
		// The error the agent reported says it better than stderr.
		failure = fmt.Sprintf("the agent exited with status %d: %s", res.ExitCode, res.Error)
	case res.ExitCode != 0:
		failure = fmt.Sprintf("the agent exited with status %d%s", res.ExitCode, e.stderrTail(errHash))
	case res.IsError:
		failure = "the agent reported an error: " + firstLine(cmp.Or(res.Error, res.Text))
	case mergeFailure != "":
		failure = mergeFailure
	}
	if failure != "" {
		o.Status, o.Error = cache.UnitFailed, failure
	}
	if ahead != nil && c.res.Limit == nil && limited == (agent.Result{}) {
		o.FinishedAt = ahead.finished
	}
	if err := e.settleAhead(ctx, ahead, u.ID, o); err != nil {
		return "", "", err
	}
	fin := Event{Type: EvUnitFinished, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: u.Attempt, Source: "live",
		Status: string(o.Status), ExitCode: intp(res.ExitCode), TokensIn: res.InputTokens, TokensOut: res.OutputTokens,
		CostUSD: res.CostUSD, Millis: o.FinishedAt.Sub(started).Milliseconds(), Message: firstLine(failure)}
	if m != e.chain[0] {
		fin.Agent, fin.Model = m.agent, m.model
	}
	e.emit(fin)
	if ctx.Err() != nil {
		return failure, u.Identity, context.Canceled
	}
	return failure, u.Identity, nil
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
		ts.row.BlockReason = reason
		b := blockInfo{RunID: e.runID, PlanPath: e.s.Plan, TaskID: t.ID, Title: t.Title, Attempts: ts.row.Attempts,
			Reason: reason, Lost: v.lost, LostKinds: v.kinds}
		if len(gateOutput) > 0 {
			b.Gate, b.Output = e.gateCommand(t), gateOutput[0]
		}
		b.AgentFailure = ts.agentFailure
		b.NoGate = e.gateCommand(t) == ""
		if top, err := boundary.StashTop(ctx, e.o.RepoRoot); err == nil && top.Commit != "" && top.Commit != e.stash.Commit {
			b.Stash, e.stash = top, top
		}
		b.Sandbox = e.s.SandboxTool
		// With --on-blocked continue, BLOCKED.md explains every block.
		e.blocks = append(e.blocks, b)
		if err := writeBlocked(e.o.RepoRoot, e.blocks); err != nil {
			return taskResult{}, err
		}
		e.blockedWrote = true
		e.emit(Event{Type: EvBlocked, Task: t.ID, Title: t.Title, Message: reason, Paths: v.lost})
	}
	return e.finishTask(idx, t, ts, status)
}
