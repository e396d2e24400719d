package cache

import (
	"fmt"
)

// Problem is one broken invariant found by Check.
type Problem struct {
	Kind   string `json:"kind"` // identity, blob, task, unit, boundary, replay, ahead
	RunID  string `json:"run_id"`
	Detail string `json:"detail"`
}

func (p Problem) String() string { return p.Kind + ": run " + p.RunID + ": " + p.Detail }

// Check verifies the journal's invariants and returns every violation:
//   - a completed unit's stored preimage digests to its identity (digest is
//     identity.DigestCanonical; nil skips this check: cache imports nothing
//     of implloop's, so the caller passes it in);
//   - a completed unit's result blob, and every other blob a unit names,
//     is in the blob store;
//   - a replayed unit points at a live unit with its identity and status
//     (completed, or failed: a failure replayed inside an attempt chain);
//   - a finished run has no running task or unit;
//   - a run's boundary seqs are 0, 1, 2, ... without gaps;
//   - a call made ahead (AheadCall) names a stored result blob, and once
//     settled, the run that settled it has a unit of its identity.
//
// An error means the check itself could not run.
func (j *Journal) Check(digest func(canonical []byte) string) ([]Problem, error) {
	c := &checker{j: j, digest: digest}
	runs, err := j.ListRuns()
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	for _, r := range runs {
		for _, step := range []func(Run) error{c.units, c.tasks, c.aheadCalls, c.boundaries} {
			if err := step(r); err != nil {
				return nil, fmt.Errorf("check: %w", err)
			}
		}
	}
	return c.ps, nil
}

// checker gathers the problems Check finds, one run and one table at a
// time.
type checker struct {
	j      *Journal
	digest func(canonical []byte) string
	ps     []Problem
}

func (c *checker) add(kind, run, f string, a ...any) {
	c.ps = append(c.ps, Problem{Kind: kind, RunID: run, Detail: fmt.Sprintf(f, a...)})
}

// units checks a run's units: identities, the blobs they name, what a
// replay points at, and that none is running in a finished run.
func (c *checker) units(r Run) error {
	units, err := c.j.Units(r.ID)
	if err != nil {
		return err
	}
	for _, u := range units {
		if u.Status == UnitCompleted {
			if c.digest != nil {
				if got := c.digest(u.Preimage); got != u.Identity {
					c.add("identity", r.ID, "unit %s: preimage digests to %s, row says %s", u.UnitID, got, u.Identity)
				}
			}
			if u.Result == "" {
				c.add("blob", r.ID, "unit %s: completed without a result blob", u.UnitID)
			}
		}
		for _, b := range []struct{ name, h string }{{"prompt", u.Prompt}, {"stdout", u.Stdout}, {"stderr", u.Stderr}, {"result", u.Result}} {
			if b.h != "" && !c.j.blobs.Has(b.h) {
				c.add("blob", r.ID, "unit %s: %s blob %s is missing", u.UnitID, b.name, b.h)
			}
		}
		if u.Replayed() {
			orig, err := c.j.GetUnit(u.ReplayedFromRun, u.ReplayedFromUnit)
			switch {
			case err != nil:
				c.add("replay", r.ID, "unit %s: replayed from %s/%s, which is not journaled", u.UnitID, u.ReplayedFromRun, u.ReplayedFromUnit)
			case orig.Status != u.Status || orig.Replayed() || orig.Identity != u.Identity:
				c.add("replay", r.ID, "unit %s: replayed from %s/%s, which is not a live unit of the same identity and status", u.UnitID, u.ReplayedFromRun, u.ReplayedFromUnit)
			}
		}
		if r.Finished() && u.Status == UnitRunning {
			c.add("unit", r.ID, "unit %s is still running in a finished run", u.UnitID)
		}
	}
	return nil
}

// tasks checks that a finished run has no running task.
func (c *checker) tasks(r Run) error {
	if !r.Finished() {
		return nil
	}
	tasks, err := c.j.Tasks(r.ID)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Status == TaskRunning {
			c.add("task", r.ID, "task %s is still running in a finished run", t.TaskID)
		}
	}
	return nil
}

// aheadCalls checks a run's calls made ahead: the result blob is kept, and
// the run said to have settled one has a unit of its identity.
func (c *checker) aheadCalls(r Run) error {
	as, err := c.j.AheadCalls(r.ID)
	if err != nil {
		return err
	}
	for _, a := range as {
		if !c.j.blobs.Has(a.Result) {
			c.add("ahead", r.ID, "call made ahead %s: result blob %s is missing", a.UnitID, a.Result)
		}
		if a.SettledBy == "" {
			continue
		}
		us, err := c.j.queryUnits(`WHERE run_id = ? AND identity = ?`, a.SettledBy, a.Identity)
		if err != nil {
			return err
		}
		if len(us) == 0 {
			c.add("ahead", r.ID, "call made ahead %s: settled by run %s, which has no unit of its identity", a.UnitID, a.SettledBy)
		}
	}
	return nil
}

// boundaries checks that a run's boundary seqs run 0, 1, 2, ... without
// gaps.
func (c *checker) boundaries(r Run) error {
	bs, err := c.j.Boundaries(r.ID)
	if err != nil {
		return err
	}
	for i, b := range bs {
		if b.Seq != i {
			c.add("boundary", r.ID, "boundary seq %d where %d was expected", b.Seq, i)
			break
		}
	}
	return nil
}
