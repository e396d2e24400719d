package loop

import (
	"context"
	"fmt"
	"slices"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/report"
	"github.com/implloop/implloop/unit"
)

// A replay across runs: a fresh run's task replays the calls another run
// made for it, from any run in the journal (pulled from a teammate or CI,
// or an earlier run here), when that run did the task from the same tree
// with the same identities, in one attempt or several. Its work is then
// written into the tree from that run's boundary commits, no agent call;
// the final gate runs live. So a plan run again at the commit where
// someone already ran it pays nothing.
//
// A resume replays from its lineage first: a task of a resume replays
// across runs only when no run of its lineage has a unit of it (a task
// the lineage never reached, done meanwhile by a teammate whose run was
// pulled).
//
// With --jobs, a wave's task that will replay across runs is not called
// ahead (startWave asks the same question, following the tree through the
// wave as the resume plan does); one whose call was made ahead after all
// keeps that call.
//
// What must hold, all of it: the task's first attempt here, nothing of
// the task in a resume's lineage; the other run did the task in k
// attempts (attempts 1 to k all in that run, none of its units replayed)
// and it ended done; its boundary before the task has the tree this run's
// has; and each attempt's units have the other run's identities. Those
// of attempt 1 match by lookup. Those of attempt i+1 follow from the
// failed gate (or failed call) that ended attempt i there, carried over as
// journaled: its feedback is hashed into them, so they are computed here
// from it and must be units of that run too. A carried gate must have
// been the gate this run would run (the same command): a changed gate
// asks another question, whose feedback is not known. Not with
// --reverify, either, which asks every gate again: that of an attempt
// before the last would have to judge a tree nobody has, so only a task
// done in one attempt (whose only gate runs live anyway) replays then.
//
// Boundaries are per task, not per attempt, so there is no tree between
// attempts to write: the chain is replayed as a resume replays its
// lineage's (runAttempt, judge): attempt i's units replayed and its
// failed gate carried, ..., the last attempt's units replayed, then the
// task's whole effect (the diff between its boundaries there, every
// attempt's work and what the gates left) written into the tree, and the
// final gate run live. The whole chain is checked before anything is
// written: a mismatch at any attempt (an identity that run has not, a gate
// that changed) refuses that run as the source, and with no other the
// task runs live from attempt 1, as if no run had done it. Replaying
// attempt 1 and going live at attempt 2 would hand the agent feedback
// about work that is not in the tree.
//
// A later attempt of this run never starts a replay across runs (the
// package doc says why).
type acrossRun struct {
	origin   *cache.Run
	from, to cache.Boundary         // the task's boundaries in that run
	attempts []acrossAttempt        // 1 to k, in order
	work     []boundary.LostContent // the task's effect there, to write
}

// acrossAttempt is attempt i of the other run's chain: its units as this
// run computes them, and the unit of that run each replays as, in order
// (a failed call ends the attempt, and the units after it have none); for
// every attempt but the last, the failed gate (or the agent failure) the
// next attempt took as feedback there, carried over.
type acrossAttempt struct {
	units []unit.Unit
	hits  []*cache.Unit
	gate  *cache.Gate
}

// final is the identity of the chain's last unit: the task's artifact.
func (a *acrossRun) final() string {
	last := a.attempts[len(a.attempts)-1].units
	return last[len(last)-1].Identity
}

// acrossRuns finds the run t's first attempt (facts, units) may replay
// from, with the task's effect there read, to write.
func (e *engine) acrossRuns(ctx context.Context, t extractor.Task, facts unit.Facts, units []unit.Unit) (*acrossRun, bool) {
	return e.acrossMatch(t, facts, units, e.prev.Tree, func(a *acrossRun) bool {
		effects, err := boundary.Effects(ctx, e.o.RepoRoot, [][2]string{{a.from.Commit, a.to.Commit}})
		if err != nil {
			return false
		}
		for _, ch := range effects[0] {
			a.work = append(a.work, boundary.LostContent{Path: ch.Path, Lost: ch.After, Base: ch.Before})
		}
		return true
	})
}

// acrossMatch finds the run t's first attempt (facts, units) may replay
// from when the tree before the task is tree: the one decision the run
// takes (acrossRuns), the resume plan predicts (planner.chain) and a wave
// honours (startWave). accept may refuse a candidate (nil: any).
func (e *engine) acrossMatch(t extractor.Task, facts unit.Facts, units []unit.Unit, tree string, accept func(*acrossRun) bool) (*acrossRun, bool) {
	if facts.Attempt != 1 || len(units) == 0 || tree == "" || e.j == nil || e.o.Fresh {
		return nil, false
	}
	for _, id := range e.lineage.runs {
		if _, ok := e.lineage.factsOf(id).maxUnit[t.ID]; ok {
			return nil, false
		}
	}
	cands, err := e.j.LiveElsewhereFrom(units[0].Identity, e.runID, tree)
	if err != nil {
		return nil, false
	}
	tried := map[string]bool{}
	for _, c := range cands {
		if tried[c.RunID] || c.Attempt != 1 {
			continue
		}
		tried[c.RunID] = true
		a, ok := e.acrossChain(t, facts, units, c.RunID, tree)
		if !ok {
			continue
		}
		if a.origin, err = e.j.GetRun(c.RunID); err != nil {
			continue
		}
		if accept != nil && !accept(a) {
			continue
		}
		return a, true
	}
	return nil, false
}

// acrossChain is task t's chain of attempts in run runID, as this run
// would replay it from attempt 1 (facts, units), when it holds (see
// acrossRun); not ok at the first thing that does not.
func (e *engine) acrossChain(t extractor.Task, facts unit.Facts, units []unit.Unit, runID, tree string) (*acrossRun, bool) {
	f := e.lineage.factsOf(runID)
	row, ok := f.tasks[t.ID]
	k := row.Attempts
	if !ok || row.Status != cache.TaskDone || k < 1 || f.minUnit[t.ID] != 1 || f.maxUnit[t.ID] != k {
		return nil, false
	}
	from, to, err := e.lineage.taskBoundaries(runID, t.ID)
	if err != nil || from.Tree != tree {
		return nil, false
	}
	a := &acrossRun{from: from, to: to}
	gateCmd := e.gateCommand(t)
	for attempt := 1; attempt <= k; attempt++ {
		if attempt > 1 {
			facts.Attempt = attempt
			if units, err = unit.WorkList(t, e.unitParams(t), facts); err != nil || len(units) == 0 {
				return nil, false
			}
		}
		at := acrossAttempt{units: units}
		failed := false
		for _, u := range units {
			h, ok, err := e.j.FindCompleted([]string{runID}, u.Identity)
			if err == nil && ok && !h.Replayed() && h.Attempt == attempt {
				at.hits = append(at.hits, h)
				continue
			}
			h, ok, err = e.j.FindFailed([]string{runID}, u.Identity)
			if err != nil || !ok || h.Attempt != attempt {
				return nil, false // not that run's identity
			}
			at.hits, failed = append(at.hits, h), true
			break
		}
		if attempt == k {
			if failed {
				return nil, false
			}
			a.attempts = append(a.attempts, at)
			break
		}
		g, ok := e.lineage.journaledGate(runID, t.ID, attempt)
		switch {
		case !ok || g.Passed || g.Replayed:
			return nil, false
		case failed && g.Command != agentGate:
			return nil, false
		case !failed && (g.Command != gateCmd || gateCmd == "" || e.o.Reverify):
			return nil, false // another gate now: its feedback is not known
		}
		at.gate = &g
		a.attempts = append(a.attempts, at)
		facts.GateFeedback = g.Feedback
	}
	return a, true
}

// replayAcross replays attempt (units) of the chain a from a.origin: its
// units, then its failed gate carried (judge carries it) or, on the last
// attempt, the task's work there written into the tree (judge runs the
// gate live).
func (e *engine) replayAcross(ctx context.Context, t extractor.Task, ts *taskState, attempt int, units []unit.Unit, a *acrossRun) (attemptRun, error) {
	at := a.attempts[attempt-1]
	r := attemptRun{allReplayed: true, crossed: true}
	if !sameIdentities(units, at.units) {
		// The chain was computed from the same facts and the feedback it
		// carries: this is a bug, not a reason to go on half replayed.
		return r, fmt.Errorf("task %s: attempt %d's units are not those its replay across runs from run %s was decided on", t.ID, attempt, a.origin.ID)
	}
	why := fmt.Sprintf("run %s on %s did this task from the same tree with the same identities", a.origin.ID, a.origin.Host)
	if n := len(a.attempts); n > 1 {
		why += fmt.Sprintf(", in %d attempts", n)
	}
	for i, h := range at.hits {
		u := units[i]
		if _, err := e.j.AddReplayedUnit(e.runID, u.ID, h); err != nil {
			return r, err
		}
		ts.replayed++
		msg := why
		if h.Status == cache.UnitFailed {
			msg = "failed: " + firstLine(h.Error) + " (" + why + ")"
		} else {
			r.final = u.Identity
		}
		r.hit = h
		e.emit(Event{Type: EvUnitReplayed, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: attempt,
			Source: "replayed", From: h.RunID + ":" + h.UnitID, Message: msg,
			TokensIn: h.TokensIn, TokensOut: h.TokensOut, CostUSD: h.CostUSD})
	}
	if at.gate != nil {
		r.carried = at.gate
		if at.gate.Command == agentGate {
			r.failure = at.gate.Feedback
		}
		return r, nil
	}
	written, left := writeBack(ctx, e.o.RepoRoot, a.work)
	ts.restored = true // the boundary after the task holds that work
	// A note, not a concern (report.ReplayedNotePrefix): the task is
	// done, by another run, and that is all it says.
	note := report.ReplayedNotePrefix + why + "; its work written into the tree"
	if len(written) > 0 {
		note += ": " + shownPaths(written)
	}
	ts.row.Concerns = append(ts.row.Concerns, note)
	e.emit(Event{Type: EvRestored, Task: t.ID, Paths: written, Message: note})
	if len(left) > 0 {
		note := "not written (changed since): " + shownPaths(left)
		ts.row.Concerns = append(ts.row.Concerns, note)
		e.emit(Event{Type: EvConcern, Task: t.ID, Message: note})
	}
	return r, nil
}

// sameIdentities reports whether a and b are the same units, by identity.
func sameIdentities(a, b []unit.Unit) bool {
	return slices.EqualFunc(a, b, func(x, y unit.Unit) bool { return x.Identity == y.Identity })
}

// liveWhy is why unit u runs live, in the words of why (the lineage's
// closest unit), or, where those say no more than that it never ran, why
// another run that did it does not stand in: a fresh run's "never ran"
// would be untrue of a task a teammate's pulled run did. tree is the tree
// before the task ("" when a plan does not know it).
func (e *engine) liveWhy(p *pass, t extractor.Task, u unit.Unit, tree string) []string {
	if a, ok := e.lineage.aheadCall(u.Identity); ok && e.early[u.Identity] == nil {
		return []string{"made ahead by run " + a.RunID + " (--jobs), which stopped before this task's turn: its journaled result is taken, no agent call"}
	}
	why := p.why(t, u)
	if len(why) > 1 || len(why) == 1 && why[0] != "never ran" || e.j == nil {
		return why
	}
	c, ok, err := e.j.CompletedElsewhere(u.Identity, e.runID)
	if err != nil || !ok {
		return why
	}
	who := "run " + c.RunID
	if r, err := e.j.GetRun(c.RunID); err == nil && r.Host != "" {
		who += " on " + r.Host
	}
	from, _, err := taskBoundaries(e.j, c.RunID, t.ID)
	switch {
	case e.o.Fresh:
		return []string{who + " did it; --fresh: it runs live anyway"}
	case tree == "":
		return []string{who + " did it: it replays at its turn only if the tree then is the one that run did it from"}
	case err != nil || from.Tree != tree:
		return []string{who + " did it, from another tree"}
	case !e.j.Blobs().Has(c.Result):
		return []string{who + " did it from this tree, but its result is not in the blob store"}
	case e.early[u.Identity] != nil:
		// Called with its wave while a task before it was live: the
		// tree it would start from was not known, and the call stands.
		return []string{who + " did it from this tree, but this call was made ahead with its wave (--jobs), before the tree was known"}
	}
	return []string{who + " did it from this tree, but not in this chain of attempts"}
}
