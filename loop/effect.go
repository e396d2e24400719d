package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/guard"
	"github.com/implloop/implloop/travel"
)

// Effect is what a task did to the work tree in one run: the difference
// between the boundary commit taken before it and the one taken after it.
type Effect struct {
	RunID  string `json:"run_id"`
	TaskID string `json:"task_id"`
	// From and To are the boundary commits before and after the task.
	From string `json:"from"`
	To   string `json:"to"`
	// Changes lists the paths the task changed, renames detected.
	Changes []boundary.Change `json:"changes"`
	// ReplayedIn is the run the effect was asked of, when the task
	// replayed there and RunID is the run that did its work.
	ReplayedIn string `json:"replayed_in,omitempty"`
}

// ErrNoEffect is a task that took no boundary of its own in the run: it
// was replayed whole, skipped, or never reached.
var ErrNoEffect = errors.New("no boundary after the task in this run")

// ErrLegacyBoundary is a run journaled before boundaries were commits.
var ErrLegacyBoundary = errors.New("the run was journaled before boundaries were commits")

// taskEffect is task taskID's effect in run runID, read from the journal
// and the boundary commits (read-only). When the task ran more than once
// in the run (interrupted, then guarded), the last boundary after it
// counts.
func taskEffect(ctx context.Context, j *cache.Journal, repoRoot, runID, taskID string) (*Effect, error) {
	from, to, err := taskBoundaries(j, runID, taskID)
	if err != nil {
		return nil, err
	}
	changes, err := boundary.Diff(ctx, repoRoot, from.Commit, to.Commit)
	if err != nil {
		return nil, fmt.Errorf("task %s of run %s: %w", taskID, runID, err)
	}
	if changes == nil {
		changes = []boundary.Change{}
	}
	return &Effect{RunID: runID, TaskID: taskID, From: from.Commit, To: to.Commit, Changes: changes}, nil
}

// taskDiff is task taskID's effect in run runID as git prints it: a
// diffstat, a patch, or both (read-only).
func taskDiff(ctx context.Context, j *cache.Journal, repoRoot, runID, taskID string, opts boundary.DiffOptions) ([]byte, error) {
	from, to, err := taskBoundaries(j, runID, taskID)
	if err != nil {
		return nil, err
	}
	return boundary.DiffText(ctx, repoRoot, from.Commit, to.Commit, opts)
}

// taskBoundaries are the boundaries around the task's last run in runID.
func taskBoundaries(j *cache.Journal, runID, taskID string) (from, to cache.Boundary, err error) {
	bs, err := j.Boundaries(runID)
	if err != nil {
		return from, to, err
	}
	return boundariesAround(bs, runID, taskID)
}

// boundariesAround are the boundaries around the task's last run among
// bs, run runID's boundaries in order.
func boundariesAround(bs []cache.Boundary, runID, taskID string) (from, to cache.Boundary, err error) {
	at := -1
	for i, b := range bs {
		if b.AfterTask == taskID && i > 0 {
			at = i
		}
	}
	if at < 0 {
		return from, to, fmt.Errorf("task %s of run %s: %w", taskID, runID, ErrNoEffect)
	}
	from, to = bs[at-1], bs[at]
	if from.Commit == "" || to.Commit == "" {
		return from, to, fmt.Errorf("task %s of run %s: %w", taskID, runID, ErrLegacyBoundary)
	}
	return from, to, nil
}

// NotLostError is a path asked of LostContent that the run did not lose.
type NotLostError struct{ Run, Path string }

func (e *NotLostError) Error() string { return fmt.Sprintf("run %s lost no path %q", e.Run, e.Path) }

// lostContent is the content the discard guard saw lost in run runID, read
// from the verdicts journaled with its boundaries: only task taskID's when
// it is not "", only paths (repo-relative) when any are given, each of
// which must have been lost (else a *NotLostError). The newest loss of a
// path wins: a path lost, restored and lost again comes back as it was the
// last time. Read-only; boundary.Restore writes it back.
//
// Content lost in a run the trust rule does not trust (pulled, not signed
// by an allowed signer) is never handed out to be written: an
// *UntrustedError.
func lostContent(j *cache.Journal, runID, taskID string, paths []string) ([]boundary.LostContent, error) {
	if t, err := travel.TrustOfRun(j, runID); err != nil {
		return nil, err
	} else if !t.Trusted {
		return nil, &UntrustedError{Run: runID, Trust: t}
	}
	bs, err := j.Boundaries(runID)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	latest := map[string]int{}
	var lost []boundary.LostContent
	for _, b := range bs {
		if taskID != "" && b.AfterTask != taskID {
			continue
		}
		var v guard.Verdict
		if len(b.Verdict) == 0 || json.Unmarshal(b.Verdict, &v) != nil {
			continue
		}
		for _, l := range v.Lost {
			if len(want) > 0 && !want[l.Path] {
				continue
			}
			if i, ok := latest[l.Path]; ok {
				lost[i] = l
				continue
			}
			latest[l.Path] = len(lost)
			lost = append(lost, l)
		}
	}
	for _, p := range paths {
		if _, ok := latest[p]; !ok {
			return nil, &NotLostError{Run: runID, Path: p}
		}
	}
	return lost, nil
}

// taskBefore is what writing the tree back to how it was before task
// taskID of run runID takes (restore --before): for each path the task
// changed, its content before the task as the content to write (absent: a
// file the task added, to remove), and its content after the task as the
// base a path may be overwritten from safely. A rename comes back as its
// two paths. Only paths when any are given (repo-relative), each of which
// the task must have changed (else a *NotChangedError). Read-only.
func taskBefore(ctx context.Context, j *cache.Journal, repoRoot, runID, taskID string, paths []string) ([]boundary.LostContent, error) {
	// The content before a task is that run's boundary too: written only
	// from a run the trust rule trusts (see LostContent).
	if t, err := travel.TrustOfRun(j, runID); err != nil {
		return nil, err
	} else if !t.Trusted {
		return nil, &UntrustedError{Run: runID, Trust: t}
	}
	eff, err := taskEffect(ctx, j, repoRoot, runID, taskID)
	if err != nil {
		return nil, err
	}
	var out []boundary.LostContent
	for _, c := range eff.Changes {
		if c.From != "" && c.From != c.Path {
			if c.Status == 'R' {
				out = append(out, boundary.LostContent{Path: c.From, Lost: c.Before})
			}
			out = append(out, boundary.LostContent{Path: c.Path, Base: c.After})
			continue
		}
		out = append(out, boundary.LostContent{Path: c.Path, Lost: c.Before, Base: c.After})
	}
	if len(paths) == 0 {
		return out, nil
	}
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	var kept []boundary.LostContent
	seen := map[string]bool{}
	for _, l := range out {
		if want[l.Path] {
			kept = append(kept, l)
			seen[l.Path] = true
		}
	}
	for _, p := range paths {
		if !seen[p] {
			return nil, &NotChangedError{Run: runID, Task: taskID, Path: p}
		}
	}
	return kept, nil
}

// NotChangedError is a path asked of TaskBefore that the task did not
// change.
type NotChangedError struct{ Run, Task, Path string }

func (e *NotChangedError) Error() string {
	return fmt.Sprintf("task %s of run %s did not change %q", e.Task, e.Run, e.Path)
}

// workRun is the run whose boundaries hold task taskID's work, for a task
// that replayed in run runID (and so took no boundary of its own there):
// the run that made the call its last replayed unit stands in for. ok is
// false when the task has no replayed unit in runID.
func workRun(j *cache.Journal, runID, taskID string) (string, bool, error) {
	units, err := j.Units(runID)
	if err != nil {
		return "", false, err
	}
	from := ""
	for _, u := range units {
		if u.TaskID == taskID && u.Replayed() {
			from = u.ReplayedFromRun
		}
	}
	return from, from != "" && from != runID, nil
}
