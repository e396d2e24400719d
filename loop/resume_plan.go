package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/implloop/implloop/boundary"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/unit"
)

// Actions of a planned task.
const (
	ActionReplay = "replay" // every unit replays from the journal
	ActionLive   = "live"   // at least one unit runs live
	ActionSkip   = "skip"   // checked in the plan
	ActionGate   = "gate"   // was blocked: its gate runs first
	// ActionAcross: its attempts replay across runs (acrossruns.go):
	// another run did it from the same tree with the same identities (in
	// one attempt or several, whose failed gates replay as journaled),
	// and its work is written in, no agent call; the final gate, if any,
	// runs live.
	ActionAcross = "across"
)

// plan is the resume plan: per task, replay or live and why. It follows
// each task's chain of journaled attempts (a replayed unit's journaled gate
// decides whether the next attempt is needed) up to the first unit that
// would run live. It reads the journal and writes nothing.
//
// A task planned live gets as its artifact the identity of the unit it
// would dispatch first (exact when its gate passes on that attempt), so its
// dependents are planned with it, as the run will compute them; a task
// whose gate runs live may come out otherwise, and its dependents are
// marked as such. The planner has a pass of its own (see pass): the run's
// starts from no artifacts and records what actually happens.
//
// tree is the tree before the first task, when it is known and the run
// will start from it ("" otherwise): a task that would run live but that
// another run did from the tree it will start from is planned to replay
// across runs (ActionAcross), as the run will decide. The tree is followed
// from task to task while it is certain: a skipped task or one replayed
// from the lineage leaves it as it is, one replayed across runs leaves the
// tree that run's task left (its live gate taken to leave the tree as it
// found it, which the tasks planned on that say); anything else live (a
// call, another gate) ends it.
func (e *engine) plan(tree string) ([]PlannedTask, error) {
	p := &planner{pass: newPass(e, true), mayChange: map[string]string{}, tree: tree}
	return p.plan()
}

// planner makes the resume plan: a pass of its own over the tasks, which
// takes the decisions the run takes (startOf, why) and remembers which
// tasks may come out otherwise than planned.
type planner struct {
	*pass
	// mayChange: task id -> why its artifact may come out otherwise than
	// planned (its gate runs live), for its dependents' reasons.
	mayChange map[string]string
	// tree: the tree before the next task, while it is certain ("" once
	// it is not); see plan.
	tree string
	// gated: the first task replayed across runs whose gate runs live
	// since the tree was last certain: tree is the one its work left,
	// taken to be what its gate leaves too ("" when none).
	gated string
}

func (pl *planner) plan() ([]PlannedTask, error) {
	e := pl.e
	var out []PlannedTask
	for _, t := range e.sel.Tasks {
		p := PlannedTask{Task: t.ID, Title: t.Title}
		switch {
		case e.skips(t):
			p.Action = ActionSkip
			p.Reasons = []string{"checked in the plan"}
		default:
			st, err := pl.startOf(t)
			if err != nil {
				return nil, err
			}
			switch st.kind {
			case startFixed:
				p.Action, p.From, p.Reasons = ActionReplay, st.carry.RunID, st.reasons
			case startRecheck:
				p.Action, p.Reasons = ActionGate, st.reasons
				pl.mayChange[t.ID] = "the gate of dependency " + t.ID + " runs first"
			default:
				if err := pl.chain(t, &p, st.attempt, st.feedback); err != nil {
					return nil, err
				}
				if len(st.reasons) > 0 {
					p.Reasons = append(append([]string(nil), st.reasons...), p.Reasons...)
				}
			}
			if p.Action == ActionReplay || p.Action == ActionGate {
				p.Reasons = append(p.Reasons, pl.mayRerun(t)...)
			}
			if why := e.tickedBy(t.ID); why != "" {
				p.Reasons = append([]string{why}, p.Reasons...)
			}
		}
		switch {
		case p.Action == ActionSkip, p.Action == ActionAcross:
		case p.Action == ActionReplay && pl.mayChange[t.ID] == "":
		default:
			pl.tree, pl.gated = "", "" // a call or a gate runs: what it leaves is not known
		}
		out = append(out, p)
	}
	return out, nil
}

// chain plans task t's chain of attempts from attempt, with feedback:
// each attempt's units as decide says, then its gate as decideGate says,
// up to the first unit or gate that would run live, or the gate that
// passes.
func (pl *planner) chain(t extractor.Task, p *PlannedTask, attempt int, feedback string) error {
	e := pl.e
	// Artifacts of dependencies are only known once they ran in this run;
	// the plan assumes replayed dependencies keep their identities.
	for range 1000 {
		facts := unit.Facts{Attempt: attempt, GateFeedback: feedback, Artifacts: pl.artifacts(t)}
		units, err := unit.WorkList(t, e.unitParams(t), facts)
		if err != nil {
			return err
		}
		var hit *cache.Unit
		var carried *cache.Gate // the chain replays a failure here
		for i := 0; i < len(units) && carried == nil; i++ {
			d, err := pl.decide(t, facts, units, i, decideAt{tree: pl.tree})
			if err != nil {
				return err
			}
			switch d.choice {
			case choiceReplay:
				hit = d.hit
				pl.art[t.ID] = d.hit.Identity
			case choiceReplayFailure:
				hit, carried = d.hit, &d.gate
			case choiceAcross:
				pl.planAcross(t, p, d.across)
				return nil
			default:
				pl.planLive(t, p, units, d.reasons)
				return nil
			}
		}
		if hit == nil {
			p.Action = ActionLive
			return nil
		}
		if carried != nil {
			attempt, feedback = attempt+1, carried.Feedback
			continue
		}
		p.Action, p.From = ActionReplay, cmp.Or(hit.ReplayedFromRun, hit.RunID)
		g := pl.decideGate(t, attempt, hit)
		switch {
		case g.choice == gateNone:
			return nil
		case g.choice == gateLive:
			p.Reasons = []string{g.why}
			pl.mayChange[t.ID] = "the gate of dependency " + t.ID + " runs live"
			return nil
		case g.g.Passed:
			return nil
		}
		attempt, feedback = attempt+1, g.g.Feedback
	}
	return errors.New("plan: attempt chain too long")
}

// planLive plans task t live from the attempt of units (a call, or a call
// made ahead taken at its turn), for reasons: its artifact is taken to be
// its last unit's, as if its gate passed on that attempt.
func (pl *planner) planLive(t extractor.Task, p *PlannedTask, units []unit.Unit, reasons []string) {
	p.Action, p.Reasons = ActionLive, reasons
	if len(p.Reasons) == 0 {
		p.Reasons = []string{"never ran"}
	}
	pl.art[t.ID] = units[len(units)-1].Identity
	pl.live[t.ID] = true
}

// planAcross plans task t to replay across runs from chain a: the tree
// after it is the one that run's task left, its gate (if any) runs live.
func (pl *planner) planAcross(t extractor.Task, p *PlannedTask, a *acrossRun) {
	p.Action, p.From = ActionAcross, a.origin.ID
	p.Reasons = []string{acrossReason(pl.e, a)}
	if pl.gated != "" {
		p.Reasons = append(p.Reasons, "if the gate of task "+pl.gated+" leaves the tree as it did in that run")
	}
	pl.art[t.ID], pl.tree = a.final(), a.to.Tree
	if pl.e.gateCommand(t) != "" {
		p.Reasons = append(p.Reasons, "its gate runs live")
		pl.mayChange[t.ID] = "the gate of dependency " + t.ID + " runs live"
		// That run's boundary after the task was taken after its gate:
		// this gate is taken to leave the tree as that one did, as the
		// run's waves take it.
		pl.gated = cmp.Or(pl.gated, t.ID)
	}
}

// acrossReason is why a task is planned across runs (chain a): whose
// work it is and why it is trusted.
func acrossReason(e *engine, a *acrossRun) string {
	trust := " (" + trustPhrase(a.trust) + ")"
	if n := len(a.attempts); n > 1 {
		return fmt.Sprintf("%s did it from this tree with the same identities, in %d attempts%s: they replay, each failure as journaled, and its work is written in, no agent call",
			a.who(e), n, trust)
	}
	return fmt.Sprintf("%s did it from this tree with the same identities%s: its work is written in, no agent call", a.who(e), trust)
}

// dryRun computes the work list without writing anything: the journal is
// opened read-only (or not at all when there is none), no lock, no
// boundary, no agent.
func (e *engine) dryRun(ctx context.Context) (*Outcome, error) {
	out := &Outcome{ParentID: e.o.Parent}
	tree := "" // the tree the run would start from, for plan
	j, err := cache.OpenReadOnly(e.o.RepoRoot)
	switch {
	case errors.Is(err, cache.ErrNoJournal):
		if e.o.Parent != "" {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		e.j, e.lineage = j, &lineage{j: j}
		defer j.Close()
	}
	if e.o.Parent != "" {
		parent, err := e.j.GetRun(e.o.Parent)
		if err != nil {
			return nil, err
		}
		out.ParentVerdict = parent.Verdict
		if e.lineage, err = newLineage(e.j, parent.ID); err != nil {
			return nil, err
		}
		e.warnLineage()
		// The tree now, as the resume will see it, without writing
		// anything (a temporary index and object directory).
		opts := []boundary.Option{boundary.WithExclude(e.excludes()...)}
		if tree := e.parentTree(); tree != "" {
			opts = append(opts, boundary.WithCompare(tree))
		}
		now, err := boundary.Take(ctx, e.o.RepoRoot, opts...)
		if err != nil {
			return nil, fmt.Errorf("boundary: %w", err)
		}
		e.loadWorkCheck(now)
		tree = e.acrossTree(now.Tree)
		e.agentTicks(ctx)
	} else if e.j != nil {
		// A fresh run may replay across runs from its first task: the
		// tree now says whether it will (read-only, as above). Unreadable,
		// the list is made without it: its tasks are planned live.
		if now, err := boundary.Take(ctx, e.o.RepoRoot, boundary.WithExclude(e.excludes()...)); err == nil {
			tree = now.Tree
		}
	}
	if out.Plan, err = e.plan(tree); err != nil {
		return out, err
	}
	return out, e.checkWork(ctx, out.Plan)
}

// acrossTree is the tree a resume's plan may predict replays across runs
// from (see plan): now, when it is the tree the parent left; "" when it
// changed since, as work the resume writes back changes it on the way.
func (e *engine) acrossTree(now string) string {
	if e.work.treeChanged() {
		return ""
	}
	return now
}

// mayRerun marks a task planned to replay whose dependency's gate runs
// live (--reverify, a changed gate command, a task blocked before), or
// that depends on such a task: should that gate fail, the dependency runs
// again with a new artifact, and this task with it.
func (pl *planner) mayRerun(t extractor.Task) []string {
	var out []string
	for _, d := range t.Deps {
		if why := pl.mayChange[d]; why != "" {
			out = append(out, "may re-run: "+why)
		}
	}
	if len(out) > 0 && pl.mayChange[t.ID] == "" {
		pl.mayChange[t.ID] = "dependency " + t.ID + " may re-run"
	}
	return out
}
