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
	var ps []Problem
	add := func(kind, run, f string, a ...any) {
		ps = append(ps, Problem{Kind: kind, RunID: run, Detail: fmt.Sprintf(f, a...)})
	}
	runs, err := j.ListRuns()
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	for _, r := range runs {
		units, err := j.Units(r.ID)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		for _, u := range units {
			if u.Status == UnitCompleted {
				if digest != nil {
					if got := digest(u.Preimage); got != u.Identity {
						add("identity", r.ID, "unit %s: preimage digests to %s, row says %s", u.UnitID, got, u.Identity)
					}
				}
				if u.Result == "" {
					add("blob", r.ID, "unit %s: completed without a result blob", u.UnitID)
				}
			}
			for _, b := range []struct{ name, h string }{{"prompt", u.Prompt}, {"stdout", u.Stdout}, {"stderr", u.Stderr}, {"result", u.Result}} {
				if b.h != "" && !j.blobs.Has(b.h) {
					add("blob", r.ID, "unit %s: %s blob %s is missing", u.UnitID, b.name, b.h)
				}
			}
			if u.Replayed() {
				orig, err := j.GetUnit(u.ReplayedFromRun, u.ReplayedFromUnit)
				switch {
				case err != nil:
					add("replay", r.ID, "unit %s: replayed from %s/%s, which is not journaled", u.UnitID, u.ReplayedFromRun, u.ReplayedFromUnit)
				case orig.Status != u.Status || orig.Replayed() || orig.Identity != u.Identity:
					add("replay", r.ID, "unit %s: replayed from %s/%s, which is not a live unit of the same identity and status", u.UnitID, u.ReplayedFromRun, u.ReplayedFromUnit)
				}
			}
			if r.Finished() && u.Status == UnitRunning {
				add("unit", r.ID, "unit %s is still running in a finished run", u.UnitID)
			}
		}
		if r.Finished() {
			tasks, err := j.Tasks(r.ID)
			if err != nil {
				return nil, fmt.Errorf("check: %w", err)
			}
			for _, t := range tasks {
				if t.Status == TaskRunning {
					add("task", r.ID, "task %s is still running in a finished run", t.TaskID)
				}
			}
		}
		as, err := j.AheadCalls(r.ID)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		for _, a := range as {
			if !j.blobs.Has(a.Result) {
				add("ahead", r.ID, "call made ahead %s: result blob %s is missing", a.UnitID, a.Result)
			}
			if a.SettledBy == "" {
				continue
			}
			us, err := j.queryUnits(`WHERE run_id = ? AND identity = ?`, a.SettledBy, a.Identity)
			if err != nil {
				return nil, fmt.Errorf("check: %w", err)
			}
			if len(us) == 0 {
				add("ahead", r.ID, "call made ahead %s: settled by run %s, which has no unit of its identity", a.UnitID, a.SettledBy)
			}
		}
		bs, err := j.Boundaries(r.ID)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		for i, b := range bs {
			if b.Seq != i {
				add("boundary", r.ID, "boundary seq %d where %d was expected", b.Seq, i)
				break
			}
		}
	}
	return ps, nil
}
