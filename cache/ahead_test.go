package cache

import (
	"strings"
	"testing"
	"time"
)

// TestAheadCalls: a call made ahead is found by a resume's lineage while
// it is unsettled and its result blob is stored, nearest run first; once
// settled (with the unit the settling run journaled) it is not, and the
// invariant check holds throughout. A sibling run's is never found.
func TestAheadCalls(t *testing.T) {
	j := openT(t, newRepo(t))
	grand := mustRun(t, j, "")
	parent := mustRun(t, j, grand.ID)
	sibling := mustRun(t, j, grand.ID)
	u := unitFor(parent.ID, "2", 1, "two")
	res, err := j.PutBlob([]byte(`{"ExitCode":0}`))
	if err != nil {
		t.Fatal(err)
	}
	ahead := func(run string, at time.Time) AheadCall {
		return AheadCall{RunID: run, UnitID: u.UnitID, TaskID: "2", Role: "implement", Attempt: 1, Identity: u.Identity,
			Preimage: u.Preimage, Result: res, Base: strings.Repeat("b", 40), Tree: strings.Repeat("c", 40),
			StartedAt: at, FinishedAt: at.Add(time.Second)}
	}
	now := time.Now()
	for _, a := range []AheadCall{ahead(grand.ID, now), ahead(parent.ID, now.Add(time.Minute)), ahead(sibling.ID, now.Add(time.Hour))} {
		if err := j.PutAhead(a); err != nil {
			t.Fatal(err)
		}
	}
	bad := ahead(parent.ID, now)
	bad.UnitID, bad.Result = "3/implement~a1", strings.Repeat("0", 64)
	if err := j.PutAhead(bad); err == nil {
		t.Error("a call made ahead without a stored result was journaled")
	}
	checkClean(t, j)

	lineage := []string{parent.ID, grand.ID}
	a, ok, err := j.FindAhead(lineage, u.Identity)
	if err != nil || !ok || a.RunID != parent.ID || a.Tree != strings.Repeat("c", 40) || !a.FinishedAt.Equal(now.Add(time.Minute+time.Second).Truncate(time.Millisecond)) {
		t.Fatalf("found %+v %v %v, want the parent's", a, ok, err)
	}
	// The resume journals the unit and settles the parent's call.
	resume := mustRun(t, j, parent.ID)
	ru := u
	ru.RunID = resume.ID
	complete(t, j, ru)
	if err := j.SettleAhead(parent.ID, u.UnitID, resume.ID); err != nil {
		t.Fatal(err)
	}
	if a, ok, _ := j.FindAhead(lineage, u.Identity); !ok || a.RunID != grand.ID {
		t.Errorf("after the parent's was settled: %+v %v, want the grandparent's", a, ok)
	}
	if _, ok, _ := j.FindAhead([]string{resume.ID}, u.Identity); ok {
		t.Error("found outside the lineage")
	}
	checkClean(t, j)
	if err := j.SettleAhead(grand.ID, u.UnitID, sibling.ID); err != nil {
		t.Fatal(err)
	}
	ps, err := j.Check(testDigest)
	if err != nil || len(ps) != 1 || ps[0].Kind != "ahead" {
		t.Errorf("settled by a run without its unit: %v %v, want one ahead problem", ps, err)
	}
}
