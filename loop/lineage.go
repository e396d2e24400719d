package loop

import (
	"sort"

	"github.com/implloop/implloop/cache"
)

// lineage is what the runs a resume continues (parent, grandparent, ...)
// journaled: where replays come from, and where a task's chain of attempts
// left off. It reads the journal and never writes it; the runs it reads
// are over, so what it loads it keeps for the rest of the run.
//
// It reads through the journal it was made with, never a replay batch's
// transaction (runTasks): the rows it reads were committed before this run
// began. A fresh run has an empty lineage; a dry run before any run has
// no journal (j nil), and then knows nothing.
type lineage struct {
	j    *cache.Journal
	runs []string // parent first

	facts map[string]*runFacts        // per run, loaded once (factsOf)
	found map[string]*cache.Unit      // findCompleted's memo (nil: no completed unit)
	ahead map[string]*cache.AheadCall // aheadCall's memo (nil: none)
}

// aheadCall is the unsettled call made ahead (--jobs) with identity that
// the lineage journaled when it returned, which its run never reached the
// turn of (killed, interrupted): the call this run takes instead of
// making it again (parallel.go).
func (l *lineage) aheadCall(identity string) (*cache.AheadCall, bool) {
	if l.j == nil || len(l.runs) == 0 {
		return nil, false
	}
	if a, ok := l.ahead[identity]; ok {
		return a, a != nil
	}
	a, ok, err := l.j.FindAhead(l.runs, identity)
	if err != nil || !ok {
		a = nil
	}
	if l.ahead == nil {
		l.ahead = map[string]*cache.AheadCall{}
	}
	l.ahead[identity] = a
	return a, a != nil
}

// tookAhead forgets the call made ahead with identity: this run settled
// it.
func (l *lineage) tookAhead(identity string) {
	if l.ahead != nil {
		l.ahead[identity] = nil
	}
}

// newLineage is the lineage of parent ("" for a fresh run) in j.
func newLineage(j *cache.Journal, parent string) (*lineage, error) {
	l := &lineage{j: j}
	if parent == "" || j == nil {
		return l, nil
	}
	var err error
	l.runs, err = j.LineageIDs(parent)
	return l, err
}

// runFacts is what one run journaled, per task: the lowest and highest
// attempt of its units, the identity of its final completed unit, and its
// gates by attempt. Loaded once per run, so a resume of a long plan costs
// three queries per run, not three per task.
type runFacts struct {
	tasks   map[string]cache.Task
	minUnit map[string]int
	maxUnit map[string]int
	// final is the identity of the last completed unit of the highest
	// attempt that has one: the task's artifact when the run did it.
	final   map[string]string
	finalAt map[string]int // the attempt of final
	gates   map[string][]cache.Gate
	// bounds are the run's boundaries in order, loaded on first use
	// (boundariesOf): only a replay across runs reads them, once per
	// run rather than once per task.
	bounds     []cache.Boundary
	boundsRead bool
}

// factsOf loads (once) what run runID journaled: a run of the lineage, or
// (acrossruns.go) another earlier run.
func (l *lineage) factsOf(runID string) *runFacts {
	if f, ok := l.facts[runID]; ok {
		return f
	}
	f := &runFacts{tasks: map[string]cache.Task{}, minUnit: map[string]int{}, maxUnit: map[string]int{},
		final: map[string]string{}, finalAt: map[string]int{}, gates: map[string][]cache.Gate{}}
	if l.j == nil {
		return f
	}
	if ts, err := l.j.Tasks(runID); err == nil {
		for _, t := range ts {
			f.tasks[t.TaskID] = t
		}
	}
	if us, err := l.j.Units(runID); err == nil {
		for _, u := range us {
			if m, ok := f.minUnit[u.TaskID]; !ok || u.Attempt < m {
				f.minUnit[u.TaskID] = u.Attempt
			}
			if u.Attempt > f.maxUnit[u.TaskID] {
				f.maxUnit[u.TaskID] = u.Attempt
			}
			// Units come in dispatch order: within an attempt the last
			// completed one is the final role's.
			if u.Status == cache.UnitCompleted && u.Attempt >= f.finalAt[u.TaskID] {
				f.final[u.TaskID], f.finalAt[u.TaskID] = u.Identity, u.Attempt
			}
		}
	}
	if gs, err := l.j.Gates(runID, ""); err == nil {
		for _, g := range gs {
			f.gates[g.TaskID] = append(f.gates[g.TaskID], g)
		}
		for _, l := range f.gates {
			sort.Slice(l, func(a, b int) bool { return l[a].Attempt < l[b].Attempt })
		}
	}
	if l.facts == nil {
		l.facts = map[string]*runFacts{}
	}
	l.facts[runID] = f
	return f
}

// taskBoundaries are the boundaries around the task in run runID, as the
// package's taskBoundaries says, from the run's boundaries loaded once.
func (l *lineage) taskBoundaries(runID, taskID string) (from, to cache.Boundary, err error) {
	f := l.factsOf(runID)
	if !f.boundsRead {
		if f.bounds, err = l.j.Boundaries(runID); err != nil {
			return from, to, err
		}
		f.boundsRead = true
	}
	return boundariesAround(f.bounds, runID, taskID)
}

// lastRow is the task's row in the nearest run of the lineage that got to
// it: a pending row (the run stopped before the task), or a running or
// interrupted one with nothing journaled for the task, says nothing about
// it, so the search goes on to the next ancestor.
func (l *lineage) lastRow(taskID string) *cache.Task {
	if l.j == nil {
		return nil
	}
	for _, runID := range l.runs {
		f := l.factsOf(runID)
		row, ok := f.tasks[taskID]
		if !ok || row.Status == cache.TaskPending {
			continue
		}
		if row.Status == cache.TaskRunning || row.Status == cache.TaskInterrupted {
			if _, ok := f.minUnit[taskID]; !ok && len(f.gates[taskID]) == 0 {
				continue
			}
		}
		return &row
	}
	return nil
}

// lastAttempt is the highest attempt journaled for the task in the lineage.
func (l *lineage) lastAttempt(taskID string) int {
	last := 0
	for _, id := range l.runs {
		last = max(last, l.factsOf(id).maxUnit[taskID])
	}
	return last
}

// artifact is the artifact the lineage holds for a task that does not run
// in this run (checked in the plan, or out of --task-range): the identity
// of the final unit of its done row in the nearest run of the lineage that
// did it; "" when none did, or when it was done with no agent call (fixed
// outside the loop), as it would be had it run here.
func (l *lineage) artifact(taskID string) string {
	if l.j == nil {
		return ""
	}
	for _, runID := range l.runs {
		f := l.factsOf(runID)
		if row, ok := f.tasks[taskID]; ok && row.Status == cache.TaskDone {
			return f.final[taskID]
		}
	}
	return ""
}

// findCompleted is cache.FindCompleted over the lineage, memoized: the
// resume plan and the run look up the same identities, and the lineage's
// runs do not change while this one runs. Without a journal nothing
// completed.
func (l *lineage) findCompleted(identity string) (*cache.Unit, bool, error) {
	if l.j == nil {
		return nil, false, nil
	}
	if u, ok := l.found[identity]; ok {
		return u, u != nil, nil
	}
	u, ok, err := l.j.FindCompleted(l.runs, identity)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		u = nil
	}
	if l.found == nil {
		l.found = map[string]*cache.Unit{}
	}
	l.found[identity] = u
	return u, ok, nil
}

// findFailed is cache.FindFailed over the lineage.
func (l *lineage) findFailed(identity string) (*cache.Unit, bool, error) {
	return l.j.FindFailed(l.runs, identity)
}

// lastGate is cache.LastGate over the lineage.
func (l *lineage) lastGate(taskID string) (*cache.Gate, bool, error) {
	return l.j.LastGate(l.runs, taskID)
}

// closestUnit is cache.ClosestUnit over the lineage.
func (l *lineage) closestUnit(taskID, role string, attempt int) (*cache.Unit, bool, error) {
	return l.j.ClosestUnit(l.runs, taskID, role, attempt)
}

// journaledGate is the gate journaled in run runID for the task's attempt.
func (l *lineage) journaledGate(runID, taskID string, attempt int) (cache.Gate, bool) {
	for _, g := range l.factsOf(runID).gates[taskID] {
		if g.Attempt == attempt {
			return g, true
		}
	}
	return cache.Gate{}, false
}

// chainStart is where a task's chain of attempts starts in this run.
type chainStart struct {
	// blocked: the task ended blocked where it last ran; its gate runs live
	// first, and attempts continue after the last journaled one.
	blocked bool
	// recheck: the run the task last ran in began it with this gate (it
	// was blocked before that run, which re-ran its gate first). This run
	// begins the same way: it replays that gate (or re-runs it with
	// --reverify or a changed command), done if it passed, else the next
	// attempt with its feedback. Starting over at attempt 1 instead would
	// look for identities that never completed (the old text, no
	// feedback) and re-run the task live with nothing changed.
	recheck *cache.Gate
}

// chainStartOf is where the lineage left the task's chain of attempts.
func (l *lineage) chainStartOf(taskID string) chainStart {
	row := l.lastRow(taskID)
	if row == nil {
		return chainStart{}
	}
	if row.Status == cache.TaskBlocked {
		return chainStart{blocked: true}
	}
	f := l.factsOf(row.RunID)
	gs := f.gates[taskID]
	if len(gs) == 0 {
		return chainStart{}
	}
	first := gs[0]
	if m, ok := f.minUnit[taskID]; ok && m <= first.Attempt {
		return chainStart{} // the run's first gate followed one of its own attempts
	}
	return chainStart{recheck: &first}
}
