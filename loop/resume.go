package loop

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/unit"
)

// agentGate is the command a gate row carries when no gate ran because the
// agent call itself failed: the failure is the next attempt's feedback.
const agentGate = cache.AgentFailed

// A pass goes through the plan's tasks in order and decides, for each,
// how it starts and why a unit runs live. There are two: the resume
// plan's (planner, resume_plan.go), which says what will run, and the
// run's own (engine.run), which records what did. The decisions are the
// pass's methods, so the plan and the run make them by the same code;
// each pass keeps its own record of what its tasks came to, which is what
// their dependents' identities are built on.
type pass struct {
	e    *engine
	art  map[string]string // task id -> identity of its final unit (planned: of the one it would dispatch first)
	live map[string]bool   // task id -> dispatched live (planned live)
	// planning: the resume plan's pass, whose reasons speak of what will
	// run rather than of what ran.
	planning bool
}

func newPass(e *engine, planning bool) *pass {
	return &pass{e: e, art: map[string]string{}, live: map[string]bool{}, planning: planning}
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
func (p *pass) startOf(t extractor.Task) (taskStart, error) {
	e := p.e
	gateCmd := e.gateCommand(t)
	st := e.lineage.chainStartOf(t.ID)
	switch {
	case st.blocked && gateCmd != "":
		if again, err := p.guardBlockedAndChanged(t); err != nil || again {
			// Its gate passed when it blocked: a recheck passes again and
			// says nothing of the edit. As any task whose inputs changed,
			// it runs (decide says why).
			return taskStart{kind: startChain, attempt: 1,
				reasons: []string{"was blocked by the guard, and the task changed since: it starts over"}}, err
		}
		return taskStart{kind: startRecheck, attempt: e.lineage.lastAttempt(t.ID),
			reasons: []string{"was blocked: its gate runs first; new attempts only if it still fails"}}, nil
	case st.blocked:
		// No gate can say it was fixed. After an agent failure the attempts
		// go on from the last one, its failure carried over as feedback
		// (and journaled, so the next resume starts the same way); after a
		// discard the chain replays and the task is done.
		if g, ok, err := e.lineage.lastGate(t.ID); err == nil && ok && g.Command == agentGate && !g.Passed {
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
		now, err := p.standIn(t, g.Attempt, g.Feedback)
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
	if stands, _ := e.gateStands(&g, gateCmd); stands || gateCmd == "" {
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
func (p *pass) standIn(t extractor.Task, attempt int, feedback string) (string, error) {
	units, err := unit.WorkList(t, p.e.unitParams(t), unit.Facts{Attempt: attempt + 1, GateFeedback: feedback, Artifacts: p.artifacts(t)})
	if err != nil || len(units) == 0 {
		return "", err
	}
	return units[len(units)-1].Identity, nil
}

// guardBlockedAndChanged reports whether task t, blocked where it last
// ran, was blocked by the guard (its last gate passed: it discarded
// work) and its inputs changed since: the identity its first attempt's
// unit has now, as any agent or model of the chain makes it, is not that
// of the closest first attempt the lineage journaled. False when the
// lineage journaled no first attempt of it, nothing to compare with.
func (p *pass) guardBlockedAndChanged(t extractor.Task) (bool, error) {
	e := p.e
	if g, ok, err := e.lineage.lastGate(t.ID); err != nil || !ok || !g.Passed {
		return false, err
	}
	facts := unit.Facts{Attempt: 1, Artifacts: p.artifacts(t)}
	units, err := unit.WorkList(t, e.unitParams(t), facts)
	if err != nil || len(units) == 0 {
		return false, err
	}
	c, found, err := e.lineage.closestUnit(t.ID, units[0].Role, 1)
	if err != nil || !found || c.Attempt != 1 {
		return false, err
	}
	ids, err := e.identitiesOf(t, facts, units[0])
	return err == nil && !slices.Contains(ids, c.Identity), err
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
		if e.gatesStand() {
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
	// Calls made ahead journal themselves as they return (journalCall),
	// never inside the batch: its statements could wait on them.
	e.jmu.Lock()
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
	e.jmu.Unlock()
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
func (p *pass) depReasons(t extractor.Task, old []string) []string {
	had := make(map[string]bool, len(old))
	for _, a := range old {
		had[a] = true
	}
	var out []string
	for _, d := range t.Deps {
		a := p.depArtifact(d)
		if a != "" && !had[a] {
			out = append(out, depReason(d, p.live[d], p.planning))
		}
	}
	return out
}
