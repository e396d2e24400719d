package loop

import (
	"context"
	"fmt"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/unit"
)

// A replay across runs: a fresh run's task replays the calls another run
// made for it, from any run in the journal (pulled from a teammate or CI,
// or an earlier run here), when that run did the task from the same tree
// with the same identities. Its work is then written into the tree from
// that run's boundary commits, no agent call; the gate runs live. So a
// plan run again at the commit where someone already ran it pays nothing.
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
// What must hold, all of it (the common case, exactly): the task's first attempt,
// nothing of the task in a resume's lineage; the other run did
// the task in one attempt and it ended done; its boundary before the task
// has the tree this run's has; and every unit of the attempt has a
// completed live unit of the same identity in that run.
type acrossRun struct {
	origin   *cache.Run
	from, to cache.Boundary         // the task's boundaries in that run
	hits     []*cache.Unit          // per unit of the attempt, in order
	work     []boundary.LostContent // the task's effect there, to write
}

// acrossRuns finds the run t's first attempt may replay from, with the
// task's effect there read, to write.
func (e *engine) acrossRuns(ctx context.Context, t extractor.Task, attempt int, units []unit.Unit) (*acrossRun, bool) {
	return e.acrossMatch(t, attempt, units, e.prev.Tree, func(a *acrossRun) bool {
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

// acrossMatch finds the run t's first attempt may replay from when the
// tree before the task is tree: the one decision the run takes
// (acrossRuns) and the resume plan predicts (planner.chain). accept may
// refuse a candidate (nil: any).
func (e *engine) acrossMatch(t extractor.Task, attempt int, units []unit.Unit, tree string, accept func(*acrossRun) bool) (*acrossRun, bool) {
	if attempt != 1 || len(units) == 0 || tree == "" || e.j == nil {
		return nil, false
	}
	for _, id := range e.lineage.runs {
		if _, ok := e.lineage.factsOf(id).maxUnit[t.ID]; ok {
			return nil, false
		}
	}
	cands, err := e.j.CompletedElsewhereFrom(units[0].Identity, e.runID, tree)
	if err != nil {
		return nil, false
	}
	tried := map[string]bool{}
	for _, c := range cands {
		if tried[c.RunID] || c.Attempt != 1 {
			continue
		}
		tried[c.RunID] = true
		if row, ok := e.lineage.factsOf(c.RunID).tasks[t.ID]; !ok || row.Status != cache.TaskDone || row.Attempts != 1 {
			continue
		}
		from, to, err := taskBoundaries(e.j, c.RunID, t.ID)
		if err != nil || from.Tree != tree {
			continue
		}
		a := &acrossRun{from: from, to: to}
		for _, u := range units {
			h, ok, err := e.j.FindCompleted([]string{c.RunID}, u.Identity)
			if err != nil || !ok || h.Replayed() || h.Attempt != 1 {
				a = nil
				break
			}
			a.hits = append(a.hits, h)
		}
		if a == nil {
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

// replayAcross replays the attempt's units from a.origin and writes the
// task's work there into the tree.
func (e *engine) replayAcross(ctx context.Context, t extractor.Task, ts *taskState, attempt int, units []unit.Unit, a *acrossRun) error {
	why := fmt.Sprintf("run %s on %s did this task from the same tree with the same identities", a.origin.ID, a.origin.Host)
	for i, u := range units {
		h := a.hits[i]
		if _, err := e.j.AddReplayedUnit(e.runID, u.ID, h); err != nil {
			return err
		}
		ts.replayed++
		e.emit(Event{Type: EvUnitReplayed, Task: t.ID, Unit: u.ID, Identity: u.Identity, Attempt: attempt,
			Source: "replayed", From: h.RunID + ":" + h.UnitID, Message: why,
			TokensIn: h.TokensIn, TokensOut: h.TokensOut, CostUSD: h.CostUSD})
	}
	written, left := writeBack(ctx, e.o.RepoRoot, a.work)
	ts.restored = true // the boundary after the task holds that work
	note := "replayed: " + why + "; its work written into the tree"
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
	return nil
}
