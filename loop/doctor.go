package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
)

// Finding is one thing Doctor found: how bad it is, what it concerns, what
// is wrong and how to repair it.
type Finding struct {
	// Severity is "error" (something implloop promises is broken: a
	// journal invariant, a ref to nothing), "warning" (worth repairing:
	// a run's snapshots open to git gc) or "info" (as it should be after
	// something a user may do on purpose, said so nobody wonders).
	Severity string `json:"severity"`
	Area     string `json:"area"` // journal, refs, boundary-index
	Run      string `json:"run,omitempty"`
	Problem  string `json:"problem"`
	Repair   string `json:"repair,omitempty"`
}

// DoctorReport is what Doctor found in a work tree's implloop state.
type DoctorReport struct {
	Journal  string    `json:"journal"` // the journal's directory
	Runs     int       `json:"runs"`
	Refs     int       `json:"refs"`
	Findings []Finding `json:"findings"`
}

// Errors counts the findings of severity error.
func (r DoctorReport) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == "error" {
			n++
		}
	}
	return n
}

// Doctor checks the implloop state of the work tree at repoRoot and says
// what is wrong and how to repair it: the journal's invariants
// (cache.Journal.Check: identities, blobs, replays, finished runs,
// boundary sequences), every run's boundary commits and refs, refs no run
// of the journal knows, and the private boundary index against git's
// objects. It only reads: the journal is opened read-only and git is
// asked, never told.
func Doctor(ctx context.Context, repoRoot string) (DoctorReport, error) {
	var r DoctorReport
	dirs, err := cache.StateDir(repoRoot)
	if err != nil {
		return r, err
	}
	r.Journal = dirs.State
	j, err := cache.OpenReadOnly(repoRoot)
	switch {
	case errors.Is(err, cache.ErrNoJournal):
		r.Findings = append(r.Findings, Finding{Severity: "info", Area: "journal",
			Problem: "no journal yet: nothing has run in this repository"})
		return r, doctorGit(ctx, repoRoot, nil, &r)
	case errors.Is(err, cache.ErrOlderSchema):
		r.Findings = append(r.Findings, Finding{Severity: "info", Area: "journal",
			Problem: "the journal was written by an older implloop; its invariants are checked once it is upgraded",
			Repair:  "nothing to do: the next run or resume upgrades it (or 'implloop pull' does)"})
		return r, nil
	case errors.Is(err, cache.ErrNewerSchema):
		r.Findings = append(r.Findings, Finding{Severity: "error", Area: "journal",
			Problem: "the journal was written by a newer implloop", Repair: "upgrade implloop"})
		return r, nil
	case err != nil:
		return r, err
	}
	defer j.Close()
	problems, err := j.Check(identity.DigestCanonical)
	if err != nil {
		return r, err
	}
	for _, p := range problems {
		r.Findings = append(r.Findings, Finding{Severity: "error", Area: "journal", Run: p.RunID,
			Problem: p.Kind + ": " + p.Detail, Repair: journalRepair[p.Kind]})
	}
	runs, err := j.ListRuns()
	if err != nil {
		return r, err
	}
	r.Runs = len(runs)
	last := map[string]string{} // run -> its last boundary commit
	for _, run := range runs {
		b, ok, err := j.LastBoundary(run.ID)
		if err != nil {
			return r, err
		}
		if ok && b.Commit != "" {
			last[run.ID] = b.Commit
		}
	}
	return r, doctorGit(ctx, repoRoot, last, &r)
}

// journalRepair says what to do about a broken journal invariant, by its
// kind (cache.Problem.Kind).
var journalRepair = map[string]string{
	"identity": "a unit row was changed after it was journaled: its replays cannot be trusted; resume with --run of an earlier run, or start the plan afresh with 'implloop run PLAN --fresh'",
	"blob":     "the blob store lost files (objects/ under the journal's directory): those units cannot replay and run live on the next resume; nothing else is affected",
	"replay":   "a replayed unit names an original the journal does not hold: resume from the run that did the work ('implloop resume --run ID')",
	"task":     "a finished run still has a running task: the run was killed while it finished; resume it ('implloop resume --run ID')",
	"unit":     "a finished run still has a running unit: the run was killed while it finished; resume it ('implloop resume --run ID')",
	"boundary": "a run's boundaries are not numbered 0, 1, 2, ...: its task effects and the guard's verdicts may be wrong; resume from an earlier run",
	"ahead":    "a call made ahead (--jobs) is journaled inconsistently: resume the run; its task runs live if the call cannot be taken",
}

// doctorGit checks the git side: each run's last boundary commit (last:
// run -> commit) and its ref, implloop's refs, and the boundary index.
func doctorGit(ctx context.Context, repoRoot string, last map[string]string, r *DoctorReport) error {
	ids := make([]string, 0, len(last))
	for _, c := range last {
		ids = append(ids, c)
	}
	st, err := boundary.Inspect(ctx, repoRoot, ids)
	if err != nil {
		return err
	}
	r.Refs = len(st.Refs)
	runRef := map[string]boundary.StateRef{}
	for _, ref := range st.Refs {
		if run, ok := strings.CutPrefix(ref.Name, boundary.RunRefPrefix); ok {
			runRef[run] = ref
		}
		if ref.Missing {
			r.Findings = append(r.Findings, Finding{Severity: "error", Area: "refs", Run: refRun(ref.Name),
				Problem: fmt.Sprintf("%s points at %s, which the repository does not have", ref.Name, ref.Target),
				Repair:  "delete the ref: git update-ref -d " + ref.Name})
			continue
		}
		if run := refRun(ref.Name); run != "" && last != nil {
			if _, known := last[run]; !known && !slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Run == run && f.Area == "refs" }) {
				r.Findings = append(r.Findings, Finding{Severity: "warning", Area: "refs", Run: run,
					Problem: fmt.Sprintf("%s belongs to run %s, which this journal does not hold", ref.Name, run),
					Repair:  "if the run was pushed by a teammate, 'implloop pull' imports it; to forget it: git for-each-ref --format='delete %(refname)' 'refs/implloop/*/" + run + "' | git update-ref --stdin"})
			}
		}
	}
	runs := make([]string, 0, len(last))
	for run := range last {
		runs = append(runs, run)
	}
	slices.Sort(runs)
	for _, run := range runs {
		commit := last[run]
		_, hasRef := runRef[run]
		switch {
		case st.Missing[commit]:
			r.Findings = append(r.Findings, Finding{Severity: "info", Area: "refs", Run: run,
				Problem: "its boundary commits are gone (its refs were deleted and git gc collected them: a forgotten run)",
				Repair:  "nothing to do: show --diff, restore and replays across runs cannot use it; its tasks run live when a resume needs them"})
		case !hasRef:
			r.Findings = append(r.Findings, Finding{Severity: "warning", Area: "refs", Run: run,
				Problem: "no " + boundary.RunRef(run) + ": its boundary commits are open to git gc",
				Repair:  "git update-ref " + boundary.RunRef(run) + " " + commit})
		}
	}
	if st.Index.Missing > 0 {
		r.Findings = append(r.Findings, Finding{Severity: "info", Area: "boundary-index",
			Problem: fmt.Sprintf("the private boundary index names %d object(s) git no longer has (a gc after a run was forgotten)", st.Index.Missing),
			Repair:  "nothing to do: the next boundary seeds it again from the real index (or remove " + st.Index.Path + ")"})
	}
	return nil
}

// refRun is the run id a ref of implloop's belongs to:
// refs/implloop/<kind>/<run>[/...]; "" for one that names no run (seals).
func refRun(name string) string {
	rest, ok := strings.CutPrefix(name, "refs/implloop/")
	if !ok {
		return ""
	}
	kind, rest, ok := strings.Cut(rest, "/")
	if !ok || kind == "seals" || kind == "claims" {
		return ""
	}
	run, _, _ := strings.Cut(rest, "/")
	return run
}
