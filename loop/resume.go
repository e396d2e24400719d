package loop

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/unit"
)

// agentGate is the command a gate row carries when no gate ran because the
// agent call itself failed: the failure is the next attempt's feedback.
const agentGate = cache.AgentFailed

// runFacts is what one run of the lineage journaled, per task: the lowest
// and highest attempt of its units, the identity of its final completed
// unit, and its gates by attempt. Loaded once per run, so a resume of a
// long plan costs three queries per run, not three per task.
type runFacts struct {
	tasks   map[string]cache.Task
	minUnit map[string]int
	maxUnit map[string]int
	// final is the identity of the last completed unit of the highest
	// attempt that has one: the task's artifact when the run did it.
	final   map[string]string
	finalAt map[string]int // the attempt of final
	gates   map[string][]cache.Gate
}

// factsOf loads (once) what run runID journaled.
func (e *engine) factsOf(runID string) *runFacts {
	if f, ok := e.facts[runID]; ok {
		return f
	}
	f := &runFacts{tasks: map[string]cache.Task{}, minUnit: map[string]int{}, maxUnit: map[string]int{},
		final: map[string]string{}, finalAt: map[string]int{}, gates: map[string][]cache.Gate{}}
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

// lastAttempt is the highest attempt journaled for the task in the lineage.
func (e *engine) lastAttempt(taskID string) int {
	last := 0
	for _, id := range e.lineage {
		last = max(last, e.factsOf(id).maxUnit[taskID])
	}
	return last
}

// lineageArtifact is the artifact the lineage holds for a task that does
// not run in this run (checked in the plan, or out of --task-range): the
// identity of the final unit of its done row in the nearest run of the
// lineage that did it; "" when none did, or when it was done with no agent
// call (fixed outside the loop), as it would be had it run here.
func (e *engine) lineageArtifact(taskID string) string {
	if e.j == nil {
		return ""
	}
	for _, runID := range e.lineage {
		f := e.factsOf(runID)
		if row, ok := f.tasks[taskID]; ok && row.Status == cache.TaskDone {
			return f.final[taskID]
		}
	}
	return ""
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

// startKind is how a task's chain of attempts begins in this run.
type startKind int

const (
	// startChain follows the chain of attempts from attempt, feedback:
	// each unit replays when its identity completed in the lineage.
	startChain startKind = iota
	// startRecheck runs the task's gate live first (journaled under
	// attempt): done with no agent call if it passes, else attempt+1 with
	// its feedback.
	startRecheck
	// startFixed replays "fixed outside the loop": the journaled passing
	// recheck is carried over and the task is done, no agent call.
	startFixed
)

// taskStart is where and how a task begins in this run. The resume plan
// and the run both take it from startOf, so they cannot disagree.
type taskStart struct {
	kind     startKind
	attempt  int
	feedback string
	// carry is a journaled gate this run carries over before it starts:
	// a carried-over agent failure, or a replayed recheck.
	carry *cache.Gate
	// reasons say, for the resume plan, why the task starts this way.
	reasons []string
}

// startOf says how task t begins in this run (see chainStart).
func (e *engine) startOf(t extractor.Task) (taskStart, error) {
	gateCmd := e.gateCommand(t)
	st := e.chainStartOf(t.ID)
	switch {
	case st.blocked && gateCmd != "":
		return taskStart{kind: startRecheck, attempt: e.lastAttempt(t.ID),
			reasons: []string{"was blocked: its gate runs first; new attempts only if it still fails"}}, nil
	case st.blocked:
		// No gate can say it was fixed. After an agent failure the attempts
		// go on from the last one, its failure carried over as feedback
		// (and journaled, so the next resume starts the same way); after a
		// discard the chain replays and the task is done.
		if g, ok, err := e.j.LastGate(e.lineage, t.ID); err == nil && ok && g.Command == agentGate && !g.Passed {
			return taskStart{kind: startChain, attempt: g.Attempt + 1, feedback: g.Feedback, carry: g}, nil
		}
		return taskStart{kind: startChain, attempt: 1}, nil
	case st.recheck == nil:
		return taskStart{kind: startChain, attempt: 1}, nil
	}
	g := *st.recheck
	if g.Passed {
		// A fix outside the loop stands in for the task only as long as
		// the task is the one that was fixed: the unit that would have run
		// next must still have the identity it had then.
		now, err := e.standIn(t, g.Attempt, g.Feedback)
		if err != nil {
			return taskStart{}, err
		}
		switch {
		case g.StandsFor == "" && gateCmd != "":
			// Journaled before the identity was kept: ask the gate again.
			return taskStart{kind: startRecheck, attempt: g.Attempt,
				reasons: []string{"fixed outside the loop before (no identity journaled): its gate runs first; new attempts only if it fails"}}, nil
		case g.StandsFor != "" && g.StandsFor != now:
			return taskStart{kind: startChain, attempt: 1,
				reasons: []string{"fixed outside the loop before, but the task changed since: it starts over"}}, nil
		}
	}
	if e.gateReplayable(g, gateCmd) || gateCmd == "" {
		if g.Passed {
			return taskStart{kind: startFixed, carry: &g,
				reasons: []string{"fixed outside the loop before: its gate passed, no agent call"}}, nil
		}
		return taskStart{kind: startChain, attempt: g.Attempt + 1, feedback: g.Feedback, carry: &g}, nil
	}
	return taskStart{kind: startRecheck, attempt: g.Attempt,
		reasons: []string{"its gate runs first (--reverify or a changed gate command); new attempts only if it fails"}}, nil
}

// standIn is the identity a passing recheck of task t at attempt stands in
// for: that of the final unit of the next attempt, with the gate's output
// as its feedback. The recheck journals it; a later resume recomputes it
// and replays the fix only while the two agree.
func (e *engine) standIn(t extractor.Task, attempt int, feedback string) (string, error) {
	units, err := unit.WorkList(t, e.unitParams(t), unit.Facts{Attempt: attempt + 1, GateFeedback: feedback, Artifacts: e.artifacts(t)})
	if err != nil || len(units) == 0 {
		return "", err
	}
	return units[len(units)-1].Identity, nil
}

// gateReplayable reports whether journaled gate g may stand in for running
// the task's gate cmd now: not with --reverify, and only for the same
// command (a changed --verify or verify block asks another question). A
// carried-over agent failure has no command to re-run and always replays.
func (e *engine) gateReplayable(g cache.Gate, cmd string) bool {
	if g.Command == agentGate {
		return true
	}
	// A gate's verdict is about the tree it judged: once the tree's
	// content differs from the parent's last boundary, it is asked again.
	return !e.o.Reverify && g.Command == cmd && !e.work.treeChanged()
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
	// Built on the first call: the plan does not change during the run,
	// and rebuilding it per call was quadratic in the number of tasks.
	if e.replay == nil {
		e.replay = make(map[string]bool, len(planned))
		// Batches only help when nothing runs live: not with
		// --reverify, nor when the tree changed (replayed gates run).
		if !e.o.Reverify && !e.work.treeChanged() {
			for _, p := range planned {
				e.replay[p.Task] = p.Action == ActionReplay
			}
		}
	}
	replay := e.replay
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

// sameAsParent reports whether every task of this run (rows) ended as it
// did in the parent: a resume in which a task the parent left blocked,
// pending or interrupted is now done (its repair replayed, say) changed
// something, even with nothing live. A task the parent has no row for is a
// change too.
func (e *engine) sameAsParent(rows []cache.Task) bool {
	parent, err := e.j.Tasks(e.o.Parent)
	if err != nil {
		return false
	}
	before := make(map[string]cache.TaskStatus, len(parent))
	for _, t := range parent {
		before[t.TaskID] = t.Status
	}
	for _, t := range rows {
		if s, ok := before[t.TaskID]; !ok || s != t.Status {
			return false
		}
	}
	return true
}

// heldBy says why task t must not run now, "" when it may: a declared
// dependency that runs in this run did not end done (blocked, or itself
// held), so what t would build on is not there. With --on-blocked
// continue such a task stays pending; the next resume plans it as usual.
func (e *engine) heldBy(t extractor.Task) string {
	var why []string
	for _, d := range t.Deps {
		if !e.runsHere(d) {
			continue
		}
		switch st := e.status[d]; st {
		case cache.TaskDone:
		case "":
			why = append(why, "dependency "+d+" did not run")
		default:
			why = append(why, "dependency "+d+" is "+string(st))
		}
	}
	return strings.Join(why, "; ")
}

// depReasons names the dependencies of t whose artifacts are not among
// old (the artifacts of the closest journaled unit): "dependency 1 runs
// live", "dependency 2 changed". Nil when none can be named.
func (e *engine) depReasons(t extractor.Task, old []string) []string {
	had := make(map[string]bool, len(old))
	for _, a := range old {
		had[a] = true
	}
	var out []string
	for _, d := range t.Deps {
		a := e.depArtifact(d)
		if a != "" && !had[a] {
			out = append(out, depReason(d, e.liveDep[d], e.planning))
		}
	}
	return out
}
