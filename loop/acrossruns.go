package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/report"
	"github.com/implloop/implloop/travel"
	"github.com/implloop/implloop/unit"
)

// A replay across runs: a fresh run's task replays the calls another run
// made for it, from any run in the journal the trust rule trusts (an
// earlier run here, or one pulled from a teammate or CI and signed by an
// allowed signer: trust.go), when that run did the task from the same
// tree with the same identities, in one attempt or several, or several
// runs of one lineage did (a run that blocked at it, then the resume that
// finished it). Its work is then
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
// the task in a resume's lineage; the other run (or a line of runs, each
// resuming the one before, the first of which made attempt 1) did the
// task in k attempts (each attempt's units live units of one of them)
// and the last ended it done; the boundary before the task (the first,
// back along the line, with this run's tree) has the tree this run's
// has; each attempt's units have those runs' identities; and every run
// of the line is trusted (a line that would match but is not trusted is
// declined, and the task says so). Those
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
	origin *cache.Run // the run that finished the task (the chain's last)
	// runs are the runs the chain's attempts were made in, oldest first,
	// origin last: one run that did the task alone, or a lineage (a run
	// that blocked at it, then the resume that finished it), each
	// trusted (trust).
	runs     []string
	trust    []travel.Trust
	from, to cache.Boundary         // the task's boundaries: before it (from this tree), after it in origin
	attempts []acrossAttempt        // 1 to k, in order
	work     []boundary.LostContent // the task's effect there, to write
	// merge: the other run did the task from another tree (a worker,
	// from its input tree): its work is merged into this one (fanin.go).
	merge bool
	// blocked: the chain ended blocked there; its attempts count
	// against this run's --max-attempts (fanin.go).
	blocked bool
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

// who names the chain's runs: "run X on host", or "runs A on h1, then B
// on h2 (a resume of it)".
func (a *acrossRun) who(e *engine) string {
	if len(a.runs) == 1 {
		return fmt.Sprintf("run %s on %s", a.origin.ID, a.origin.Host)
	}
	var parts []string
	for _, id := range a.runs {
		host := "?"
		if r, err := e.j.GetRun(id); err == nil {
			host = r.Host
		}
		parts = append(parts, id+" on "+host)
	}
	return "runs " + strings.Join(parts, ", then ") + " (each resuming the one before)"
}

// acrossWork is the runner's accept for acrossMatch: a run whose task's
// effect can be read, to write it (a.work), from the tree now.
func (e *engine) acrossWork(ctx context.Context) func(a *acrossRun) bool {
	return func(a *acrossRun) bool {
		effects, err := boundary.Effects(ctx, e.o.RepoRoot, [][2]string{{a.from.Commit, a.to.Commit}})
		if err != nil {
			return false
		}
		for _, ch := range effects[0] {
			a.work = append(a.work, boundary.LostContent{Path: ch.Path, Lost: ch.After, Base: ch.Before})
		}
		return true
	}
}

// acrossMatch finds the run t's first attempt (facts, units) may replay
// from when the tree before the task is tree: asked by decide, so the
// run takes, the resume plan predicts and a wave honours one answer.
// accept may refuse a candidate (nil: any).
//
// A candidate is a run that made the task's first attempt from tree;
// the chain is followed there, and, when that run did not finish the
// task (it blocked), through the runs that resumed it to the one that
// did (acrossPaths). A chain whose runs are not all trusted (travel.TrustOf)
// is declined, and e.declined says so for the task.
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
		for _, path := range e.acrossPaths(c.RunID, t.ID) {
			a, ok := e.acrossChain(t, facts, units, path, tree)
			if !ok {
				continue
			}
			if a.origin, err = e.j.GetRun(path[len(path)-1]); err != nil {
				continue
			}
			if untrusted := e.untrustedOf(a); untrusted != nil {
				if e.declined == nil {
					e.declined = map[string]string{}
				}
				if _, ok := e.declined[t.ID]; !ok {
					e.declined[t.ID] = declinedNote(untrusted, e.trustOf(untrusted.ID))
				}
				continue
			}
			if accept != nil && !accept(a) {
				continue
			}
			return a, true
		}
	}
	return nil, false
}

// untrustedOf is the first run of chain a that the trust rule does not
// trust (nil: all are), with each run's trust kept in a.trust.
func (e *engine) untrustedOf(a *acrossRun) *cache.Run {
	a.trust = a.trust[:0]
	for _, id := range a.runs {
		tr := e.trustOf(id)
		if !tr.Trusted {
			if r, err := e.j.GetRun(id); err == nil {
				return r
			}
			return &cache.Run{ID: id}
		}
		a.trust = append(a.trust, tr)
	}
	return nil
}

// acrossPaths are the chains of runs task taskID's attempts may have been
// made in, starting at run start (which made its first attempt), oldest
// first: start alone when it finished the task, else each line of runs
// that resumed it down to one that finished it (a run that blocked at
// the task, then the teammate's resume that did it). Nearest first.
func (e *engine) acrossPaths(start, taskID string) [][]string {
	if row, ok := e.lineage.factsOf(start).tasks[taskID]; ok && row.Status == cache.TaskDone {
		return [][]string{{start}}
	}
	kids := e.children()
	var out [][]string
	var walk func(path []string)
	walk = func(path []string) {
		if len(path) > len(kids)+1 || len(out) >= 8 {
			return
		}
		for _, c := range kids[path[len(path)-1]] {
			if c == e.runID {
				continue
			}
			next := append(slices.Clone(path), c)
			if row, ok := e.lineage.factsOf(c).tasks[taskID]; ok && row.Status == cache.TaskDone {
				out = append(out, next)
				continue
			}
			walk(next)
		}
	}
	walk([]string{start})
	if row, ok := e.lineage.factsOf(start).tasks[taskID]; ok && row.Status == cache.TaskBlocked && len(out) == 0 {
		out = append(out, []string{start}) // its chain, which blocked there (fanin.go)
	}
	return out
}

// children maps each run to the runs that resume it, oldest first (read
// once).
func (e *engine) children() map[string][]string {
	if e.kids != nil {
		return e.kids
	}
	e.kids = map[string][]string{}
	runs, err := e.j.ListRuns() // newest first
	if err != nil {
		return e.kids
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if p := runs[i].ParentID; p != "" {
			e.kids[p] = append(e.kids[p], runs[i].ID)
		}
	}
	return e.kids
}

// acrossChain is task t's chain of attempts through path (runs, oldest
// first, the first made attempt 1, the last finished the task), as this
// run would replay it from attempt 1 (facts, units), when it holds (see
// acrossRun); not ok at the first thing that does not.
//
// Each attempt's units must be live units of one run of the path; the
// gate that ended attempt i (the failed gate, or the failed call, whose
// feedback attempt i+1 was made from) is looked for from the newest run
// of the path back to the run of attempt i: a resume re-runs the gate of
// a task that blocked before it goes on, and its feedback, not the
// blocked run's, made the next attempt. Whichever gate it was, the next
// attempt's identities say so: a gate whose feedback makes identities
// the path does not have is not the one.
func (e *engine) acrossChain(t extractor.Task, facts unit.Facts, units []unit.Unit, path []string, tree string) (*acrossRun, bool) {
	last := e.lineage.factsOf(path[len(path)-1])
	row, ok := last.tasks[t.ID]
	if !ok || row.Status != cache.TaskDone && row.Status != cache.TaskBlocked {
		return nil, false
	}
	blocked := row.Status == cache.TaskBlocked
	if f := e.lineage.factsOf(path[0]); f.minUnit[t.ID] != 1 {
		return nil, false
	}
	from, to, ok := e.chainBoundaries(path, t.ID, tree)
	if !ok {
		return nil, false
	}
	a := &acrossRun{runs: path, from: from, to: to}
	gateCmd := e.gateCommand(t)
	at, owner, failed, ok := e.attemptIn(path, 0, units, 1)
	if !ok {
		return nil, false
	}
	for attempt := 1; ; attempt++ {
		var next *acrossAttempt
		nextOwner := -1
		for r := len(path) - 1; r >= owner && next == nil; r-- {
			g, ok := e.lineage.journaledGate(path[r], t.ID, attempt)
			switch {
			case !ok || g.Passed || g.Replayed:
				continue
			case failed && g.Command != agentGate:
				continue
			case !failed && !e.asksSame(g, gateCmd):
				continue // another gate now: its feedback is not known
			}
			f := facts
			f.Attempt, f.GateFeedback = attempt+1, g.Feedback
			nu, err := unit.WorkList(t, e.unitParams(t), f)
			if err != nil || len(nu) == 0 {
				continue
			}
			n, o, nf, ok := e.attemptIn(path, r, nu, attempt+1)
			if !ok {
				continue
			}
			at.gate = &g
			next, nextOwner, failed = &n, o, nf
		}
		a.attempts = append(a.attempts, at)
		if next == nil {
			break
		}
		at, owner = *next, nextOwner
	}
	k := len(a.attempts)
	switch {
	case blocked && failed:
		// Its last call failed, and that is what it blocked on.
		g, ok := e.lineage.journaledGate(path[owner], t.ID, k)
		if !ok || g.Command != agentGate || g.Passed {
			return nil, false
		}
		a.attempts[k-1].gate = &g
		a.blocked = true
	case blocked:
		a.blocked = true
	case failed || a.attempts[k-1].gate != nil:
		return nil, false // the chain ends on a failure: not how the task was done
	}
	for _, id := range path {
		if e.lineage.factsOf(id).maxUnit[t.ID] > k {
			return nil, false // an attempt the chain does not reach
		}
	}
	return a, true
}

// attemptIn finds attempt's units as live units of one run of path, from
// path[from] on: their hits in order (a failed call ends the attempt:
// failed), and the index of that run.
func (e *engine) attemptIn(path []string, from int, units []unit.Unit, attempt int) (at acrossAttempt, owner int, failed bool, ok bool) {
	for r := from; r < len(path); r++ {
		at = acrossAttempt{units: units}
		failed = false
		found := true
		for _, u := range units {
			h, ok, err := e.j.FindCompleted([]string{path[r]}, u.Identity)
			if err == nil && ok && !h.Replayed() && h.Attempt == attempt {
				at.hits = append(at.hits, h)
				continue
			}
			h, ok, err = e.j.FindFailed([]string{path[r]}, u.Identity)
			if err != nil || !ok || h.Attempt != attempt {
				found = false // not this run's identity
				break
			}
			at.hits, failed = append(at.hits, h), true
			break
		}
		if found {
			return at, r, failed, true
		}
	}
	return acrossAttempt{}, 0, false, false
}

// chainBoundaries are the task's boundaries for a chain through path:
// after it, the last run's; before it, the first boundary back along the
// path (each run's before-task tree being the tree the run before it left
// the task in) that has tree. Not ok when the path does not reach tree.
func (e *engine) chainBoundaries(path []string, taskID, tree string) (from, to cache.Boundary, ok bool) {
	from, to, err := e.lineage.taskBoundaries(path[len(path)-1], taskID)
	if err != nil {
		return from, to, false
	}
	for i := len(path) - 2; i >= 0 && from.Tree != tree; i-- {
		pf, pt, err := e.lineage.taskBoundaries(path[i], taskID)
		if err != nil {
			continue // that run never reached the task
		}
		if pt.Tree != from.Tree {
			return from, to, false
		}
		from = pf
	}
	return from, to, from.Tree == tree
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
	why := a.who(e) + " did this task from the same tree with the same identities"
	if a.merge {
		why = a.who(e) + " did this task from its dependencies' results with the same identities"
	}
	if n := len(a.attempts); n > 1 {
		why += fmt.Sprintf(", in %d attempts", n)
	}
	why += " (" + trustPhrase(a.trust) + ")"
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
	carry := func() {
		r.carried = at.gate
		if at.gate.Command == agentGate {
			r.failure = at.gate.Feedback
		}
	}
	if at.gate != nil && attempt < len(a.attempts) {
		carry()
		return r, nil
	}
	var written, left []string
	if a.merge {
		var failure string
		var err error
		if written, failure, err = e.mergeAcross(ctx, a); err != nil || failure != "" {
			r.failure, r.conflict = failure, failure != ""
			return r, err
		}
	} else {
		written, left = writeBack(ctx, e.o.RepoRoot, a.work)
	}
	if at.gate != nil {
		carry() // the failed call a blocked chain ended on
	}
	ts.restored = true // the boundary after the task holds that work
	// A note, not a concern (report.ReplayedNotePrefix): the task is
	// done, by another run, and that is all it says.
	note := report.ReplayedNotePrefix + why + "; its work written into the tree"
	if a.merge {
		note = report.ReplayedNotePrefix + why + "; its work merged into the tree"
	}
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
	if d, ok := e.declined[t.ID]; ok && u.Attempt == 1 {
		return []string{d}
	}
	c, ok, err := e.j.CompletedElsewhere(u.Identity, e.runID)
	if err != nil || !ok {
		return why
	}
	who := "run " + c.RunID
	r, rerr := e.j.GetRun(c.RunID)
	if rerr == nil && r.Host != "" {
		who += " on " + r.Host
	}
	if tr := e.trustOf(c.RunID); !tr.Trusted && rerr == nil {
		return []string{declinedNote(r, tr)}
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
