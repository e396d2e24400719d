package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/report"
	"github.com/implloop/implloop/unit"
)

// inputsDigest is the digest of everything a run's unit identities are
// computed from, apart from the tree: the identity scheme (its version and
// every role's instructions), the settings (without the agent CLI's
// version, which is never hashed), and the plan as this implloop read it
// (the selection: tasks, preamble, front matter, and the sha256 of the
// bytes). It is journaled with every run (cache.Run.Inputs).
//
// It is deliberately stricter than the identities: a plan edit that
// normalization forgives (trailing blanks, CRLF) changes the digest, and
// so does a newer implloop that reads the same bytes into other tasks.
// A changed digest only means the resume is planned in full, unit by unit,
// which still replays everything whose identity is unchanged.
func inputsDigest(sel *extractor.Selection, s Settings) string {
	s.AgentVersion = ""
	// When a run stops and what it tells, not what a call is asked.
	s.MaxWait, s.MaxCost, s.MaxTokens, s.MaxTaskCost, s.Notify = 0, 0, 0, 0, ""
	// The sandbox changes how the calls run, not what they are asked.
	s.Sandbox, s.SandboxAllow, s.SandboxNetwork, s.SandboxGates, s.SandboxTool = false, nil, "", false, ""
	s.Flags = slices.DeleteFunc(slices.Clone(s.Flags), func(f string) bool { return strings.HasPrefix(f, "sandbox") })
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode("implloop.inputs\x00v1\x00" + identity.Version)
	for _, r := range unit.Roles() {
		sum := sha256.Sum256(r.Template())
		_ = enc.Encode([]string{r.Name, hex.EncodeToString(sum[:])})
	}
	_ = enc.Encode(s)
	_ = enc.Encode(sel)
	return hex.EncodeToString(h.Sum(nil))
}

// upToDate answers a resume whose parent left everything as it is now:
// the parent ended DONE, its inputs digest (inputsDigest) equals this
// resume's, and the work tree is the tree of its last boundary. Such a
// resume would replay every unit and every gate and end as its parent did,
// so none is journaled: the answer is the parent's, with no agent called,
// no boundary taken, and nothing written (the tree is snapshotted the way
// `implloop status` does it, into temporary objects).
//
// It returns nil whenever any of that is not certain (an older journal,
// another run holding the work tree's lock, a parent journaled before
// inputs digests, a boundary that cannot be read): the resume then runs in
// full, which decides the same thing the long way.
func (e *engine) upToDate(ctx context.Context, inputs string) *Outcome {
	j, err := cache.OpenReadOnly(e.o.RepoRoot)
	if err != nil {
		return nil
	}
	defer j.Close()
	// A journal an older implloop kept in the work tree is moved by the
	// next writing command; a lock held means a run is changing things.
	if j.Dir() != j.Dirs().State || lockHeld(j.Dirs().Lock) {
		return nil
	}
	parent, err := j.GetRun(e.o.Parent)
	if err != nil || !parent.Finished() || parent.Verdict != string(report.Done) || parent.Inputs == "" || parent.Inputs != inputs {
		return nil
	}
	b, ok, err := j.LastBoundary(parent.ID)
	if err != nil || !ok || b.Tree == "" {
		return nil
	}
	snap, err := boundary.Take(ctx, e.o.RepoRoot, boundary.WithBoundaryIndex(), boundary.WithTreeOnly(), boundary.WithCompare(b.Tree), boundary.WithExclude(e.excludes()...))
	if err != nil || snap.Tree != b.Tree || len(snap.Problems) > 0 {
		return nil
	}
	tasks, err := j.TaskStatuses(parent.ID)
	if err != nil {
		return nil
	}
	dec := report.Decide(tasks)
	if dec.Verdict != report.Done {
		return nil
	}
	out := &Outcome{RunID: parent.ID, ParentID: parent.ID, Verdict: parent.Verdict, ParentVerdict: parent.Verdict, NoOp: true, UpToDate: true, Headline: dec.Headline()}
	if md, _ := report.Paths(j.Dir(), parent.ID); fileExists(md) {
		out.ReportPath = md
	}
	ev := Event{Type: EvNothingChanged, Time: e.now().UTC(), RunID: parent.ID, Plan: e.s.Plan, PlanSHA: e.sel.PlanSHA256,
		Verdict: out.Verdict, Done: intp(dec.Done), Count: dec.Counted, Message: out.ReportPath}
	e.obs.Event(ev)
	return out
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func fileOrDirExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
