package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/files"
	"github.com/implloop/implloop/report"
	"github.com/implloop/implloop/settings"
	"github.com/implloop/implloop/travel"
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
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode("implloop.inputs\x00v1\x00" + identity.Version)
	for _, r := range unit.Roles() {
		sum := sha256.Sum256(r.Template())
		_ = enc.Encode([]string{r.Name, hex.EncodeToString(sum[:])})
	}
	_ = enc.Encode(digestedSettings(s))
	_ = enc.Encode(sel)
	return hex.EncodeToString(h.Sum(nil))
}

// digestedSettings are the settings as the inputs digest sees them: those
// the table of settings marks hashed by neither (when a run stops, what it
// tells, how safely its calls run) at their zero value, and the agent
// CLI's version and the sandbox's tool (recorded, never hashed) left out.
// The sandbox's flag names are left out of Flags too; the other unhashed
// settings' flag names stay, as the digest was first defined: changing
// what it covers would make every journaled run look changed.
func digestedSettings(s Settings) Settings {
	var zero Settings
	for _, st := range settings.All() {
		if st.Hashed == settings.Neither {
			st.Copy(&s, &zero)
		}
	}
	s.AgentVersion, s.SandboxTool = "", ""
	s.Flags = slices.DeleteFunc(slices.Clone(s.Flags), func(f string) bool { return strings.HasPrefix(f, "sandbox") })
	return s
}

// upToDate answers a resume whose parent left everything as it is now:
// the work tree is the tree of its last boundary, and either the parent
// ended DONE and its inputs digest (inputsDigest) equals this resume's,
// or the resume plan replays every task in range as the parent ended it
// (replaysWhole). Such a resume would replay every unit and every gate and
// end as its parent did, so none is journaled: the answer is the parent's, with no agent called,
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
	if err != nil || !parent.Finished() || parent.Inputs == "" {
		return nil
	}
	switch report.Verdict(parent.Verdict) {
	case report.Done, report.Partial, report.Blocked:
	default:
		return nil // interrupted: its running task runs again
	}
	// A lineage with a run the trust rule does not trust is a handover:
	// the full resume says so (lineageWarnings) and runs the gates it
	// must, never the parent's verdict taken as is.
	ids, err := j.LineageIDs(parent.ID)
	if err != nil {
		return nil
	}
	for _, id := range ids {
		if t, err := travel.TrustOfRun(j, id); err != nil || !t.Trusted {
			return nil
		}
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
	// The same inputs and a DONE parent: every unit and gate would replay.
	// Otherwise (a PARTIAL parent resumed for its done tasks only, plan
	// bytes no identity sees) the resume plan says it.
	dec := report.Decide(tasks)
	if (parent.Inputs != inputs || dec.Verdict != report.Done) && !e.replaysWhole(j, parent.ID, snap, tasks) {
		return nil
	}
	out := &Outcome{RunID: parent.ID, ParentID: parent.ID, Verdict: parent.Verdict, ParentVerdict: parent.Verdict, NoOp: true, UpToDate: true, Headline: dec.Headline()}
	if md, _ := report.Paths(j.Dir(), parent.ID); files.IsFile(md) {
		out.ReportPath = md
	}
	ev := Event{Type: EvNothingChanged, Time: e.now().UTC(), RunID: parent.ID, Plan: e.s.Plan, PlanSHA: e.sel.PlanSHA256,
		Verdict: out.Verdict, Done: intp(dec.Done), Count: dec.Counted, Message: out.ReportPath}
	e.obs.Event(ev)
	return out
}

// replaysWhole reports whether a resume of parent, whose inputs differ
// from this one's (the plan's bytes, a setting no identity covers), would
// still replay every unit and every gate and end each task as the parent
// did (tasks): the resume plan, made read-only against the tree now (snap,
// the parent's last tree), has only tasks the parent had, each replayed
// with nothing run live (its gate included) or skipped as before (a
// narrower --task-range than the parent's leaves its other tasks as
// they were, its verdict standing, as a resume run in full would). Such a
// resume used to be journaled, and then say that nothing changed; once
// per `resume --run OLD`. The engine's journal and lineage are left as
// they were found.
func (e *engine) replaysWhole(j *cache.Journal, parentID string, snap boundary.Snapshot, tasks []cache.Task) bool {
	lin, err := newLineage(j, parentID)
	if err != nil {
		return false
	}
	savedJ, savedLin, savedWork := e.j, e.lineage, e.work
	defer func() { e.j, e.lineage, e.work = savedJ, savedLin, savedWork }()
	e.j, e.lineage = j, lin
	e.loadWorkCheck(snap)
	if e.work.treeChanged() {
		return false
	}
	planned, err := e.plan(snap.Tree)
	if err != nil || len(planned) == 0 {
		return false
	}
	before := make(map[string]cache.TaskStatus, len(tasks))
	for _, t := range tasks {
		before[t.TaskID] = t.Status
	}
	for _, p := range planned {
		st, ok := before[p.Task]
		switch {
		case !ok:
			return false
		case p.Action == ActionReplay && len(p.Reasons) == 0 && p.From != "" && st == cache.TaskDone:
		case p.Action == ActionSkip && st == cache.TaskSkipped:
		default:
			return false
		}
	}
	return true
}
