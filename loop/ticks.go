package loop

import (
	"context"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/plan"
)

// agentTicks finds the tasks whose box in the plan was ticked inside a
// task's effect in the runs the resume continues, and is ticked still: a
// tick made by an agent does not mark a task done (skips). A run's
// boundaries keep the plan's bytes (boundary.Keep.Plan); a box that was
// unticked at a run's first boundary and ticked at its last was ticked by
// one of its tasks, since nothing but its tasks ran in between. The user
// ticks between runs (or before the first): those ticks count. When the
// parent stopped without finishing a task (killed), what was ticked since
// its last boundary is that task's too. It reads git and the journal and
// writes nothing; runs that kept no plan tell nothing.
func (e *engine) agentTicks(ctx context.Context) {
	if e.o.Parent == "" || e.lineage == nil || len(e.lineage.runs) == 0 {
		return
	}
	marks := map[string]string{} // task id -> the run a task of which ticked it
	var parentLast []byte
	runs := e.lineage.runs
	for i := len(runs) - 1; i >= 0; i-- {
		first, last, ok, err := boundary.KeptPlans(ctx, e.o.RepoRoot, runs[i])
		if err != nil || !ok {
			continue
		}
		at0, at1 := checkedTasks(first), checkedTasks(last)
		for id := range marks {
			if !at0[id] {
				delete(marks, id) // unticked between the runs
			}
		}
		for id := range at1 {
			if !at0[id] {
				marks[id] = runs[i]
			}
		}
		for id := range marks {
			if !at1[id] {
				delete(marks, id)
			}
		}
		if i == 0 {
			parentLast = last
		}
	}
	if parentLast != nil {
		if _, unfinished := e.unfinishedTask(e.o.Parent, e.lastAfter()); unfinished {
			before := checkedTasks(parentLast)
			for _, t := range e.sel.Tasks {
				if t.Checked && !before[t.ID] {
					marks[t.ID] = e.o.Parent
				}
			}
		}
	}
	for _, t := range e.sel.Tasks {
		if run, ok := marks[t.ID]; ok && t.Checked {
			if e.ticked == nil {
				e.ticked = map[string]string{}
			}
			e.ticked[t.ID] = run
		}
	}
	e.here = nil // runsHere reads skips
}

// lastAfter is the task the parent's last boundary was taken after.
func (e *engine) lastAfter() string {
	if e.j == nil {
		return ""
	}
	b, ok, err := e.j.LastBoundary(e.o.Parent)
	if err != nil || !ok {
		return ""
	}
	return b.AfterTask
}

// checkedTasks is the set of task ids ticked in plan bytes src (all of
// its tasks, whatever the range); nil when it does not parse.
func checkedTasks(src []byte) map[string]bool {
	p, _ := plan.Parse("plan.md", src)
	if p == nil {
		return nil
	}
	out := map[string]bool{}
	for _, t := range p.Tasks {
		if t.Checked {
			out[t.ID] = true
		}
	}
	return out
}

// tickedBy says, for a task whose box is ticked but was ticked by an
// agent (agentTicks), why it is not skipped; "" otherwise.
func (e *engine) tickedBy(id string) string {
	if run, ok := e.ticked[id]; ok {
		return "its box was ticked inside a task of run " + run + ": a tick made by an agent does not mark a task done"
	}
	return ""
}
