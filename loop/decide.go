package loop

import (
	"context"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/unit"
)

// Replay or live: the one decision.
//
// Whether something journaled stands in for an agent call, or for a gate,
// is decided here and nowhere else, as go-task's fingerprinter answers
// "up to date?" for every caller: the resume plan (planner.chain: a
// resume's, a dry run's, `implloop watch`'s and `implloop check`'s), the
// runner (runAttempt, judge), --jobs (startWave: which calls are made
// ahead) all ask decide for a unit and decideGate for a gate, and
// `implloop explain` and the report read the words they journaled. What
// comes before a unit's decision is decided once per task, also in one
// place each: how its chain of attempts begins (startOf, resume.go:
// recheck its gate, carry a fix, or from which attempt), and whether a
// replayed task's work is still in the tree (checkWork, work.go: a
// restore first, or with --rerun-lost live, which decide reads through
// mustRun).

// choice is what decide says a unit comes to.
type choice int

const (
	// choiceLive: the agent is called (reasons say why).
	choiceLive choice = iota
	// choiceReplay: a completed unit of the lineage with its identity (or
	// the identity a fallback agent or model of the chain gave it) stands
	// in: hit.
	choiceReplay
	// choiceReplayFailure: a failed unit of the lineage that the task's
	// chain of attempts went on from replays as that failure (hit), its
	// agent failure (gate) carried as the next attempt's feedback.
	choiceReplayFailure
	// choiceTakeAhead: a call made ahead (--jobs) is taken instead of
	// making it: this run's, made with its wave, or one a run of the
	// lineage journaled when it returned (its `ahead` table) and never
	// reached the turn of. Journaled as a live unit, no new call.
	choiceTakeAhead
	// choiceAcross: the task's whole chain of attempts replays across runs
	// (acrossruns.go): across. Only the first unit of attempt 1.
	choiceAcross
)

// decision is decide's answer for one unit.
type decision struct {
	choice  choice
	hit     *cache.Unit // choiceReplay, choiceReplayFailure: the unit that stands in
	gate    cache.Gate  // choiceReplayFailure: the agent failure the chain went on from
	across  *acrossRun  // choiceAcross
	reasons []string    // choiceLive, choiceTakeAhead: why it is not a replay
}

// decideAt is where a unit is decided: the tree before its task ("" when
// it is not known: then no replay across runs), and, for the runner,
// accept, which may refuse a run to replay across from (its work cannot
// be read), and merge, the run's context, with which a task no run did
// from this tree may have a worker's result merged in instead
// (mergedAcross, fanin.go: it reads and merges trees, so only the runner
// asks). quiet leaves the reasons out (startWave only needs the choice).
type decideAt struct {
	tree   string
	accept func(*acrossRun) bool
	merge  context.Context
	quiet  bool
}

// decide says what unit i of the attempt (facts, units) of task t comes
// to in pass p, and why. In order: a completed twin in the lineage
// replays (unless its work is lost and --rerun-lost asked for the agent);
// a failure the chain went on from replays as that failure; a call made
// ahead is taken; the first unit of a first attempt replays across runs
// when another trusted run did the task from this tree with the same
// identities; anything else runs live.
func (p *pass) decide(t extractor.Task, facts unit.Facts, units []unit.Unit, i int, at decideAt) (decision, error) {
	e, u := p.e, units[i]
	if !e.work.mustRun(t.ID) {
		h, ok, err := e.findDone(t, facts, u)
		if err != nil {
			return decision{}, err
		}
		if ok {
			return decision{choice: choiceReplay, hit: h}, nil
		}
	}
	if f, g, ok := e.failedChain(t, u); ok {
		return decision{choice: choiceReplayFailure, hit: f, gate: g}, nil
	}
	d := decision{choice: choiceLive}
	_, adopt := e.lineage.aheadCall(u.Identity)
	switch {
	case e.early[u.Identity] != nil || adopt:
		d.choice = choiceTakeAhead
	case i == 0:
		if a, ok := e.acrossMatch(t, facts, units, at.tree, at.accept); ok {
			return decision{choice: choiceAcross, across: a}, nil
		}
		if at.merge != nil {
			if a, ok := e.mergedAcross(at.merge, t, facts, units); ok {
				return decision{choice: choiceAcross, across: a}, nil
			}
		}
	}
	if !at.quiet {
		d.reasons = e.liveWhy(p, t, u, at.tree)
	}
	return d, nil
}

// gateChoice is what decideGate says a gate comes to.
type gateChoice int

const (
	gateLive   gateChoice = iota // the gate runs now (why says why)
	gateNone                     // the task has no gate: the attempt passes
	gateReplay                   // the journaled gate g stands in
)

// gateDecision is decideGate's answer.
type gateDecision struct {
	choice gateChoice
	g      cache.Gate
	why    string
}

// decideGate says what the gate of task t's attempt comes to when every
// unit of the attempt replayed from the lineage (hit, the last of them):
// the gate journaled after hit stands in while it asks the same question
// of the same tree (gateStands), else the gate runs live, and a task
// without a gate passes.
func (p *pass) decideGate(t extractor.Task, attempt int, hit *cache.Unit) gateDecision {
	e := p.e
	cmd := e.gateCommand(t)
	var g *cache.Gate
	if jg, ok := e.lineage.journaledGate(hit.RunID, t.ID, attempt); ok {
		g = &jg
	}
	stands, why := e.gateStands(g, cmd)
	if e.work != nil && e.work.freshGate[t.ID] {
		// Its work was found gone and written back: ask again.
		stands, why = false, "its work was written back: its gate runs live"
	}
	switch {
	case stands:
		return gateDecision{choice: gateReplay, g: *g}
	case cmd == "":
		return gateDecision{choice: gateNone}
	}
	return gateDecision{choice: gateLive, why: why}
}

// gateStands says whether gate g, journaled by an earlier run (nil: none
// finished), may stand in for running the task's gate cmd now, and if not
// why the gate runs live. A carried agent failure has no command to run
// again and always stands; a gate stands only for the same command (a
// changed --verify or verify block asks another question), not with
// --reverify, and only while the tree is the one it judged (the content
// the parent left: a changed tree is asked again).
func (e *engine) gateStands(g *cache.Gate, cmd string) (bool, string) {
	switch {
	case g != nil && g.Command == agentGate:
		return true, ""
	case e.reverify() != "":
		return false, e.reverify()
	case g == nil:
		return false, "its gate never finished: the gate runs live"
	case g.Command != cmd:
		return false, "its gate command changed: the gate runs live"
	case e.work.treeChanged():
		return false, e.work.changedReason()
	}
	return true, ""
}

// gatesStand reports whether every journaled gate with the command the
// task has now stands in (gateStands): no --reverify, and the tree is as
// the parent left it. Then a task the plan replays runs nothing live, and
// a stretch of them may share a journal transaction (runTasks); a resume
// may be answered without a run (upToDate).
func (e *engine) gatesStand() bool {
	return e.reverify() == "" && !e.work.treeChanged()
}

// reverify is why every journaled gate runs live again ("" when they
// need not): --reverify asked for it. The one place the option is read;
// everything above asks here.
func (e *engine) reverify() string {
	if e.o.Reverify {
		return "--reverify: its gate runs live"
	}
	return ""
}

// asksSame reports whether gate g, journaled in another run, asks the
// question the task's gate cmd asks now, so that its feedback may be
// carried across runs (acrossChain): the same command, and no --reverify
// (which asks every gate again, so a gate before the last cannot be
// carried: it would have to judge a tree nobody has).
func (e *engine) asksSame(g cache.Gate, cmd string) bool {
	return cmd != "" && g.Command == cmd && e.reverify() == ""
}
