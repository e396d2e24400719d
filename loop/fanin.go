package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/travel"
	"github.com/implloop/implloop/unit"
)

// Workers' results, gathered (implloop work; the worker package drives
// it).
//
// A worker does one task of the plan in a run of its own (Options.Task),
// from its input tree: the results of the tasks it waits for
// (InputDeps), merged onto the plan's base tree in plan order
// (InputTree), with their artifacts given (Options.Artifacts) so that its
// units' identities are those a serial run computes. The fan-in is an
// ordinary run of the whole plan from the base: a task replays across
// runs from the tree it finds (acrossruns.go), or, when a trusted run did
// the task from the input tree this run computes for it from the results
// it replayed so far (mergedAcross), its work is merged into the tree with
// git's three-way merge (base: the tree the worker started from), as a
// call made ahead under --jobs is. A conflict is a failed attempt: the
// next one runs live, on the merged tree, with the conflicting paths as
// feedback. Every gate runs on the merged tree.
//
// A chain of attempts that ended blocked replays too (acrossChain): its
// attempts count against --max-attempts, so that the run blocks where a
// serial run with the same agent answers would, with no agent call.

// fanIn is what a run keeps to replay workers' results.
type fanIn struct {
	// results: per task replayed across runs, the tree its run left it
	// in (the result its dependents' workers started from).
	results  map[string]string
	base     string // the tree of the run's first boundary ("" until read)
	deps     map[string][]string
	baseRead bool
}

// InputDeps are, per task, the tasks whose results its input tree merges:
// those it waits for (extractor.After), in plan order, less those skip
// says do not run (checked in the plan).
func InputDeps(tasks []extractor.Task, skip func(extractor.Task) bool) map[string][]string {
	after := extractor.After(tasks)
	pos := make(map[string]int, len(tasks))
	skipped := map[string]bool{}
	for i, t := range tasks {
		pos[t.ID] = i
		if skip != nil && skip(t) {
			skipped[t.ID] = true
		}
	}
	out := make(map[string][]string, len(tasks))
	for _, t := range tasks {
		var ds []string
		for _, d := range after[t.ID] {
			if !skipped[d] {
				ds = append(ds, d)
			}
		}
		slices.SortFunc(ds, func(a, b string) int { return pos[a] - pos[b] })
		out[t.ID] = ds
	}
	return out
}

// InputTree is a task's input tree: results (the trees its dependencies'
// runs left them in, in plan order) merged one by one onto base (the
// plan's base tree) with git's three-way merge, base being the merge base
// of each. Conflicts name the paths of the first merge that did not go
// cleanly (the tree is then "").
func InputTree(ctx context.Context, root, base string, results []string) (tree string, conflicts []string, err error) {
	tree = base
	for _, r := range results {
		m, err := boundary.MergeTrees(ctx, root, base, tree, r)
		if err != nil {
			return "", nil, err
		}
		if len(m.Conflicts) > 0 {
			return "", m.Conflicts, nil
		}
		tree = m.Tree
	}
	return tree, nil, nil
}

// Result is what a run made of one task, for a worker building on it.
type Result struct {
	Status cache.TaskStatus
	// Artifact is the identity of the task's final unit when it is done
	// ("" when done with no agent call).
	Artifact string
	From, To cache.Boundary // the boundaries around the task
	Trust    travel.Trust
	// PlanSHA256 is the plan the run read.
	PlanSHA256 string
}

// TaskResult is what run runID of j made of task taskID.
func TaskResult(j *cache.Journal, runID, taskID string) (Result, error) {
	l := &lineage{j: j}
	f := l.factsOf(runID)
	row, ok := f.tasks[taskID]
	if !ok {
		return Result{}, fmt.Errorf("run %s has no task %s", runID, taskID)
	}
	r := Result{Status: row.Status}
	if run, err := j.GetRun(runID); err == nil {
		r.PlanSHA256 = run.PlanSHA256
	}
	if row.Status == cache.TaskDone {
		r.Artifact = f.final[taskID]
	}
	var err error
	if r.From, r.To, err = l.taskBoundaries(runID, taskID); err != nil {
		return r, err
	}
	r.Trust, err = travel.TrustOfRun(j, runID)
	return r, err
}

// baseTree is the tree of this run's first boundary.
func (e *engine) baseTree() string {
	f := &e.gather
	if !f.baseRead {
		f.baseRead = true
		if bs, err := e.j.Boundaries(e.runID); err == nil && len(bs) > 0 {
			f.base = bs[0].Tree
		}
	}
	return f.base
}

// inputTree is the tree a worker would have done t from, given the
// results this run replayed so far; not ok when one of its dependencies
// has none (it ran live here, say) or they do not merge.
func (e *engine) inputTree(ctx context.Context, t extractor.Task) (string, bool) {
	f := &e.gather
	base := e.baseTree()
	if base == "" {
		return "", false
	}
	if f.deps == nil {
		f.deps = InputDeps(e.sel.Tasks, e.skips)
	}
	var results []string
	for _, d := range f.deps[t.ID] {
		r, ok := f.results[d]
		if !ok {
			return "", false
		}
		results = append(results, r)
	}
	tree, conflicts, err := InputTree(ctx, e.o.RepoRoot, base, results)
	if err != nil || len(conflicts) > 0 {
		return "", false
	}
	return tree, true
}

// mergedAcross is acrossRuns for a task no run did from this run's tree:
// a trusted run that did it from its input tree (inputTree), whose work
// is then merged into the tree (replayAcross).
func (e *engine) mergedAcross(ctx context.Context, t extractor.Task, facts unit.Facts, units []unit.Unit) (*acrossRun, bool) {
	if e.prev.Commit == "" || e.j == nil || e.o.Fresh {
		return nil, false
	}
	input, ok := e.inputTree(ctx, t)
	if !ok || input == e.prev.Tree {
		return nil, false
	}
	return e.acrossMatch(t, facts, units, input, func(a *acrossRun) bool {
		a.merge = true
		return true
	})
}

// noteResult keeps the result of task t when its last attempt (a)
// replayed across runs: the tree that run left the task in.
func (e *engine) noteResult(t extractor.Task, ts *taskState, a attemptRun) {
	if !a.crossed || ts.across == nil {
		return
	}
	if e.gather.results == nil {
		e.gather.results = map[string]string{}
	}
	e.gather.results[t.ID] = ts.across.to.Tree
}

// mergeAcross merges the work of a's task (its boundaries there) into
// the tree: "" when it merged, else why not (the attempt failed).
func (e *engine) mergeAcross(ctx context.Context, a *acrossRun) (written []string, failure string, err error) {
	m, err := boundary.MergeTreesInto(ctx, e.o.RepoRoot, a.from.Tree, e.prev.Commit, a.to.Tree)
	switch {
	case err != nil:
		return nil, "", err
	case len(m.Conflicts) > 0:
		return nil, fmt.Sprintf("its work, done by another run from its dependencies' results, conflicts with the tasks merged before it in %s: this attempt runs again on the merged tree",
			strings.Join(m.Conflicts, ", ")), nil
	case len(m.Refused) > 0:
		return nil, fmt.Sprintf("its work could not be written over paths changed meanwhile: %s", strings.Join(m.Refused, ", ")), nil
	}
	return m.Written, "", nil
}

// onlyTask narrows the selection to Options.Task (a worker's run).
func (e *engine) onlyTask() error {
	if e.o.Task == "" {
		return nil
	}
	for _, t := range e.sel.Tasks {
		if t.ID == e.o.Task {
			e.sel.Tasks = []extractor.Task{t}
			return nil
		}
	}
	return fmt.Errorf("plan %s has no task %s", e.s.Plan, e.o.Task)
}

// ReadPlan reads the plan at path and selects all its tasks, as a run
// does (a lint error is a *PlanError).
func ReadPlan(path string) (*extractor.Selection, error) { return loadPlan(path, "") }

// gatherable reports whether a trusted run did t's first unit (units[0])
// elsewhere: under --jobs such a task is not called ahead with its wave,
// since at its turn its work may be merged in from that run (mergedAcross)
// for nothing.
func (e *engine) gatherable(units []unit.Unit) bool {
	if len(units) == 0 || e.j == nil || e.o.Fresh {
		return false
	}
	c, ok, err := e.j.CompletedElsewhere(units[0].Identity, e.runID)
	return err == nil && ok && c.Attempt == 1 && e.trustOf(c.RunID).Trusted
}
