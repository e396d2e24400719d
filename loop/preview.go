package loop

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/plan"
)

// Preview is a dry run (see [Options.DryRun]) against plan bytes src
// instead of the file on disk: `implloop watch` previews the bytes it just
// read, `implloop check` the staged bytes of the index. o.Settings.Plan
// stays the plan's path (it is part of a unit's context with
// --plan-context full). Like a dry run it opens the journal read-only and
// writes nothing. Lint errors in src are a *PlanError.
func Preview(o Options, src []byte) (*Outcome, error) {
	o.DryRun = true
	o.Observer = nil // a preview's events go nowhere: its result is the Outcome
	e := newEngine(o)
	if err := e.readPlan(func(path string) (*extractor.Selection, error) { return selectBytes(path, src, e.s.TaskRange) }); err != nil {
		return nil, err
	}
	return e.dryRun(context.Background())
}

// selectBytes is loadPlan for bytes already read.
func selectBytes(path string, src []byte, taskRange string) (*extractor.Selection, error) {
	p, diags := plan.Parse(path, src)
	var errs []string
	for _, d := range plan.Errors(diags) {
		errs = append(errs, d.String())
	}
	if len(errs) > 0 {
		return nil, &PlanError{Path: path, Diagnostics: errs}
	}
	r, err := extractor.ParseRange(taskRange)
	if err != nil {
		return nil, &RangeError{Err: err}
	}
	return extractor.Select(p, r)
}

// PreviewResume is what a resume of run would do with the plan bytes src
// at planPath (repo-relative, as journaled): a Preview with the run's
// settings (SettingsOf, validated).
func PreviewResume(repoRoot string, run *cache.Run, planPath string, src []byte) (*Outcome, error) {
	s, err := SettingsOf(run, planPath)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return Preview(Options{Settings: s, RepoRoot: repoRoot, Parent: run.ID}, src)
}

// LatestRunsByPlan maps each plan path the journal knows inside the
// repository (repo-relative, forward slashes) to its latest run made
// here (a pulled run is never what a resume continues by default). No
// journal: no plans. Read-only.
func LatestRunsByPlan(repoRoot string) (map[string]cache.Run, error) {
	out := map[string]cache.Run{}
	j, err := cache.OpenReadOnly(repoRoot)
	if errors.Is(err, cache.ErrNoJournal) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer j.Close()
	runs, err := j.ListRuns() // newest first
	if err != nil {
		return nil, err
	}
	pulled, err := j.PulledRuns()
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if _, ok := pulled[r.ID]; ok {
			continue
		}
		if filepath.IsAbs(r.PlanPath) {
			continue // outside the repository: never staged here
		}
		p := filepath.ToSlash(filepath.Clean(r.PlanPath))
		if _, ok := out[p]; !ok {
			out[p] = r
		}
	}
	return out, nil
}

// RunToResume is the run a resume would continue: ref (an id or a unique
// prefix) when given, else the latest run of the plan at planPath
// (repo-relative, as journaled). cache.ErrNoJournal when nothing ran yet,
// cache.ErrNotFound when there is no such run. Read-only.
func RunToResume(repoRoot, planPath, ref string) (*cache.Run, error) {
	j, err := cache.OpenReadOnly(repoRoot)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	if ref != "" {
		return j.ResolveRun(ref)
	}
	return j.LatestRun(planPath)
}
