package loop

import (
	"context"
	"errors"
	"sort"

	"github.com/implloop/implloop/cache"
)

// agentGate is the command a gate row carries when no gate ran because the
// agent call itself failed: the failure is the next attempt's feedback.
const agentGate = "(agent)"

// runFacts is what one run of the lineage journaled, per task: the lowest
// attempt of its units and its gates by attempt. Loaded once per run, so a
// resume of a long plan costs two queries per run, not two per task.
type runFacts struct {
	tasks   map[string]cache.Task
	minUnit map[string]int
	gates   map[string][]cache.Gate
}

// factsOf loads (once) what run runID journaled.
func (e *engine) factsOf(runID string) *runFacts {
	if f, ok := e.facts[runID]; ok {
		return f
	}
	f := &runFacts{tasks: map[string]cache.Task{}, minUnit: map[string]int{}, gates: map[string][]cache.Gate{}}
	if ts, err := e.j.Tasks(runID); err == nil {
		for _, t := range ts {
			f.tasks[t.TaskID] = t
		}
	}
	if us, err := e.j.Units(runID); err == nil {
		for _, u := range us {
			if m, ok := f.minUnit[u.TaskID]; !ok || u.Attempt < m {
				f.minUnit[u.TaskID] = u.Attempt
			}
		}
	}
	if gs, err := e.j.Gates(runID, ""); err == nil {
		for _, g := range gs {
			f.gates[g.TaskID] = append(f.gates[g.TaskID], g)
		}
		for _, l := range f.gates {
			sort.Slice(l, func(a, b int) bool { return l[a].Attempt < l[b].Attempt })
		}
	}
	if e.facts == nil {
		e.facts = map[string]*runFacts{}
	}
	e.facts[runID] = f
	return f
}

// lastRow is the task's row in the nearest run of the lineage that got to
// it: a pending row (the run stopped before the task), or a running or
// interrupted one with nothing journaled for the task, says nothing about
// it, so the search goes on to the next ancestor.
func (e *engine) lastRow(taskID string) *cache.Task {
	if e.j == nil {
		return nil
	}
	for _, runID := range e.lineage {
		f := e.factsOf(runID)
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

// findCompleted is cache.FindCompleted over the lineage, memoized: the
// resume plan and the run look up the same identities, and the lineage's
// runs do not change while this one runs.
func (e *engine) findCompleted(identity string) (*cache.Unit, bool, error) {
	if u, ok := e.found[identity]; ok {
		return u, u != nil, nil
	}
	u, ok, err := e.j.FindCompleted(e.lineage, identity)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		u = nil
	}
	if e.found == nil {
		e.found = map[string]*cache.Unit{}
	}
	e.found[identity] = u
	return u, ok, nil
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

func (e *engine) chainStartOf(taskID string) chainStart {
	row := e.lastRow(taskID)
	if row == nil {
		return chainStart{}
	}
	if row.Status == cache.TaskBlocked {
		return chainStart{blocked: true}
	}
	f := e.factsOf(row.RunID)
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

// gateReplayable reports whether journaled gate g may stand in for running
// the task's gate cmd now: not with --reverify, and only for the same
// command (a changed --verify or verify block asks another question). A
// carried-over agent failure has no command to re-run and always replays.
func (e *engine) gateReplayable(g cache.Gate, cmd string) bool {
	if g.Command == agentGate {
		return true
	}
	return !e.o.Reverify && g.Command == cmd
}

// errNeedsLive aborts a replay batch: the task turned out to need a live
// agent call or gate, which must not run inside an uncommitted batch (its
// journal rows have to be durable before it starts).
var errNeedsLive = errors.New("loop: the task needs a live call")

// replayGroup caps how many planned replays share one journal transaction:
// big enough that commits stop mattering, small enough that the progress
// display (events are handed over at commit) never lags visibly.
const replayGroup = 64

// runTasks runs the task at i or, when the resume plan expects it and the
// tasks after it to replay, that stretch of up to replayGroup tasks inside
// one journal transaction: their lookups and rows (task, units, gates,
// events) commit once instead of a dozen times per task, which is most of a
// fully cached resume's time. Should a task need anything live after all,
// the batch rolls back (nothing outside the journal happened yet) and the
// stretch runs again one task at a time, unbatched. Events reach the
// observer only once their batch has committed, so a rolled-back attempt
// is never seen. It returns how many tasks it ran and the last one's result.
func (e *engine) runTasks(ctx context.Context, i int, planned []PlannedTask) (int, taskResult, error) {
	replay := map[string]bool{}
	if !e.o.Reverify {
		for _, p := range planned {
			replay[p.Task] = p.Action == ActionReplay
		}
	}
	n := 0
	for i+n < len(e.sel.Tasks) && n < replayGroup && replay[e.sel.Tasks[i+n].ID] {
		n++
	}
	if n == 0 {
		res, err := e.runTask(ctx, i, e.sel.Tasks[i])
		return 1, res, err
	}
	j, held := e.j, []Event{}
	var res taskResult
	ran := 0
	e.held = &held
	err := j.Batch(false, func(b *cache.Journal) error {
		e.j = b
		for ran = 0; ran < n; {
			var err error
			res, err = e.runTask(ctx, i+ran, e.sel.Tasks[i+ran])
			ran++
			if err != nil || res.status == cache.TaskBlocked && e.s.OnBlocked == "stop" {
				return err
			}
		}
		return nil
	})
	e.j, e.held = j, nil
	switch {
	case errors.Is(err, errNeedsLive):
		for ran = 0; ran < n; {
			res, err = e.runTask(ctx, i+ran, e.sel.Tasks[i+ran])
			ran++
			if err != nil || res.status == cache.TaskBlocked && e.s.OnBlocked == "stop" {
				break
			}
		}
		return ran, res, err
	case err != nil:
		return ran, res, err
	}
	for _, ev := range held {
		e.obs.Event(ev)
	}
	return ran, res, nil
}
