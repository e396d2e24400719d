package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/guard"
)

type guardResult struct {
	// lost are the paths the task discarded: its own (attribute.go),
	// then those carried to its turn (carried, with carriedWhy). aheadWhy
	// says why its own are its while calls made ahead ran.
	lost                 []string
	carried              []string
	aheadWhy, carriedWhy string
	concerns             []string
	// vanished says what of implloop's own record disappeared during the
	// task (boundary.Snapshot.Vanished): it blocks the task.
	vanished []string
	// kinds says what a lost path was when it was not a file of the tree
	// (lostKinds): BLOCKED.md names it so.
	kinds map[string]string
	// noChanges is the "no changes" concern's message when it is among
	// concerns ("" otherwise): afterTask drops it for a task whose work an
	// earlier run did and left in the tree.
	noChanges string
}

// lostKinds names the lost paths of v that were not files of the tree:
// "ignored" (an ignored file implloop kept), "plan" (the plan file),
// "submodule:<path>" (a file inside that submodule or nested repository).
func lostKinds(v guard.Verdict) map[string]string {
	var out map[string]string
	for _, r := range v.Paths {
		kind := ""
		switch {
		case r.Outcome != guard.Discarded:
		case r.Nested != "":
			kind = "submodule:" + r.Nested
		case r.Status == boundary.StatusIgnored || r.Status == boundary.StatusPlan:
			kind = string(r.Status)
		}
		if kind != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[r.Path] = kind
		}
	}
	return out
}

// keepSettings is what the run's boundaries keep beside their trees: the
// plan file (when it is in the repository) and the user's ignored files
// within the repository's limits (git config implloop.keep*), read once.
func (e *engine) keepSettings(ctx context.Context) boundary.Keep {
	if e.keep == nil {
		k := e.knownKeep()
		if k == nil {
			kk, err := boundary.KeepSettings(ctx, e.o.RepoRoot)
			if err != nil {
				e.emit(Event{Type: EvConcern, Message: "ignored files are not kept: " + err.Error()})
				kk = boundary.Keep{}
			}
			k = &kk
		}
		if ex := e.excludes(); len(ex) > 0 {
			k.Plan = ex[0]
		}
		e.keep = k
	}
	return *e.keep
}

// planTicks tells the guard whether the plan's change between prev and
// cur (both kept) is only boxes ticked or unticked, which it reads from
// the kept bytes: such a change is a concern, anything else a discard.
func (e *engine) planTicks(ctx context.Context, prev, cur boundary.Snapshot) []guard.Option {
	pp, cp := prev.Plan, cur.Plan
	if pp == nil || cp == nil || !pp.Blob.Present() || !cp.Blob.Present() || pp.Blob.Same(cp.Blob) {
		return nil
	}
	a, err := boundary.ReadBlob(ctx, e.o.RepoRoot, pp.Blob.Hash)
	if err != nil {
		return nil
	}
	b, err := boundary.ReadBlob(ctx, e.o.RepoRoot, cp.Blob.Hash)
	if err != nil {
		return nil
	}
	if bytes.Equal(untick(a), untick(b)) {
		return []guard.Option{guard.PlanTicksOnly()}
	}
	return nil
}

// boxRE is a task-list box at the start of a list item: "- [x] ",
// "  * [ ] ", "1. [X] ".
var boxRE = regexp.MustCompile(`(?m)^([ \t>]*(?:[-*+]|[0-9]+[.)])[ \t]+\[)[ xX](\])`)

// untick is the plan with every box unticked: two plans that differ only
// by ticks are equal after it.
func untick(b []byte) []byte { return boxRE.ReplaceAll(b, []byte("${1} ${2}")) }

// firstBoundary takes B0. On a resume it compares B0 with the parent's
// last boundary and reports what happened between the runs: information
// only, never a block (the user may commit, edit or restore between runs)
// -- unless the parent stopped without finishing a task (killed: no code
// ran to guard it). Then the discards since the parent's last boundary are
// that task's, and they block the resume before anything is dispatched
// (e.resumeBlocked).
func (e *engine) firstBoundary(ctx context.Context) error {
	// The parent's last boundary is read first, so that B0 is taken once:
	// tracking the parent's dirty paths (its snapshot does not know their
	// content now when they are clean now), and chained to the parent's
	// boundary commit.
	pb, prev := e.parentBoundary(ctx)
	var track []string
	if prev != nil {
		track = prev.PathNames()
	}
	var compare []boundary.Option
	if prev != nil && prev.Tree != "" {
		compare = append(compare, boundary.WithCompare(prev.Tree))
	}
	snap, err := e.take(ctx, track, prev, "before the first task", compare...)
	if err != nil {
		return err
	}
	e.knownRulesChanged(snap)
	var block *blockInfo
	var verdict *guard.Verdict
	msg := ""
	if prev != nil {
		msg, verdict, block = e.betweenRuns(*pb, *prev, snap)
	}
	if err := e.putBoundary("", snap, verdict); err != nil {
		return err
	}
	e.prev = snap
	e.emit(Event{Type: EvBoundary, Head: snap.Head, Dirty: intp(len(snap.Paths)), Message: msg})
	if block == nil {
		return nil
	}
	e.blocks = append(e.blocks, *block)
	if err := writeBlocked(e.o.RepoRoot, e.blocks); err != nil {
		return err
	}
	e.blockedWrote, e.resumeBlocked = true, true
	e.emit(Event{Type: EvBlocked, Task: block.TaskID, Title: block.Title, Message: block.Reason, Paths: block.Lost})
	return nil
}

// parentBoundary is the parent's last boundary and its snapshot; nil on a
// fresh run, or when it cannot be read (said as a concern).
func (e *engine) parentBoundary(ctx context.Context) (*cache.Boundary, *boundary.Snapshot) {
	if e.o.Parent == "" {
		return nil, nil
	}
	b, ok, err := e.j.LastBoundary(e.o.Parent)
	if err != nil || !ok {
		return nil, nil
	}
	p, err := e.loadBoundary(ctx, *b)
	if err != nil {
		e.emit(Event{Type: EvConcern, Message: fmt.Sprintf("run %s's last boundary cannot be read (%v): what changed between the runs is not checked", e.o.Parent, err)})
		return nil, nil
	}
	return b, &p
}

// betweenRuns compares B0 (snap) with the parent's last boundary pb
// (prev): what the boundary event says, the verdict to journal and, when
// the parent left a task unfinished whose discards these are, the block.
func (e *engine) betweenRuns(pb cache.Boundary, prev, snap boundary.Snapshot) (string, *guard.Verdict, *blockInfo) {
	v := guard.Compare(prev, snap)
	unfinished, hasUnfinished := e.unfinishedTask(e.o.Parent, pb.AfterTask)
	journaled := v
	if !(v.Blocked() && hasUnfinished) {
		// Information only: what the user discarded between the runs
		// was their choice, so restore must not offer it back (its
		// Lost list is what `implloop restore` reads). The per-path
		// outcomes and counts stay in the record.
		journaled.Lost = nil
	}
	// A blocking verdict is journaled with its Lost list: implloop
	// restore --run <this run> finds it.
	if v.Blocked() && hasUnfinished {
		msg := "since run " + e.o.Parent + ": " + v.Summary() +
			fmt.Sprintf(" (task %s of run %s never finished, so these are its discards)", unfinished.TaskID, e.o.Parent)
		var lost []string
		for _, l := range v.Lost {
			lost = append(lost, l.Path)
		}
		block := &blockInfo{RunID: e.runID, PlanPath: e.s.Plan, TaskID: unfinished.TaskID, Title: unfinished.Title,
			Attempts: unfinished.Attempts, Lost: lost, Unfinished: e.o.Parent,
			Reason: fmt.Sprintf("run %s stopped without finishing task %s, and since its last boundary uncommitted work was discarded: %s",
				e.o.Parent, unfinished.TaskID, shownPaths(lost))}
		return msg, &journaled, block
	}
	// Between the runs the user is the one changing things: a path back
	// at HEAD is their choice, never a block, so the guard's BLOCKED
	// prefix would mislead here.
	msg := "since run " + e.o.Parent + ": " + strings.TrimPrefix(v.Summary(), "BLOCKED: ")
	if v.Blocked() {
		msg += " (changed between the runs: not a block; the resume plan says what is written back)"
	}
	return msg, &journaled, nil
}

// unfinishedTask returns the task the parent run left running or
// interrupted with no boundary taken after it (the parent's last boundary,
// lastAfter, is not that task's): a run killed mid-task. A task interrupted
// with Ctrl-C has its boundary taken at the interrupt (guardInterrupted),
// so it does not count.
func (e *engine) unfinishedTask(parent, lastAfter string) (cache.Task, bool) {
	rows, err := e.j.Tasks(parent)
	if err != nil {
		return cache.Task{}, false
	}
	for _, r := range rows {
		if (r.Status == cache.TaskRunning || r.Status == cache.TaskInterrupted) && r.TaskID != lastAfter {
			return r, true
		}
	}
	return cache.Task{}, false
}

// guardInterrupted runs the guard for the task an interrupt cut short
// (its agent's process group already killed, its row marked interrupted):
// a boundary, compared with the one before the task. Lost
// paths go on the task's row and into BLOCKED.md; the status stays
// interrupted. The run's context is cancelled by then, so the boundary gets
// a context of its own.
func (e *engine) guardInterrupted(ctx context.Context) error {
	rows, err := e.j.Tasks(e.runID)
	if err != nil {
		return err
	}
	var row *cache.Task
	for i := range rows {
		if rows[i].Status == cache.TaskInterrupted {
			row = &rows[i]
			break
		}
	}
	if row == nil {
		return nil // stopped between tasks: nothing ran since the last boundary
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	// A task interrupted before any of its units started (a worker's
	// run whose agent call waited for a push that failed for good,
	// Options.BeforeLive) made no change: not a concern.
	units, err := e.j.Units(e.runID)
	if err != nil {
		return err
	}
	started := slices.ContainsFunc(units, func(u cache.Unit) bool { return u.TaskID == row.TaskID })
	r, err := e.takeBoundary(gctx, row.TaskID, !started, "after task "+row.TaskID+" (interrupted)")
	if err != nil {
		return err
	}
	row.Concerns = append(row.Concerns, r.concerns...)
	if len(r.lost) > 0 {
		row.LostPaths = r.lost
		row.BlockReason = "interrupted, after it discarded work of earlier tasks: " + shownPaths(r.lost)
	}
	if err := e.j.PutTask(*row); err != nil {
		return err
	}
	for _, c := range r.concerns {
		e.emit(Event{Type: EvConcern, Task: row.TaskID, Message: c})
	}
	if len(r.lost) == 0 {
		return nil
	}
	b := blockInfo{RunID: e.runID, PlanPath: e.s.Plan, TaskID: row.TaskID, Title: row.Title, Attempts: row.Attempts,
		Reason: row.BlockReason, Lost: r.lost, LostKinds: r.kinds, Interrupted: true}
	e.blocks = append(e.blocks, b)
	if err := writeBlocked(e.o.RepoRoot, e.blocks); err != nil {
		return err
	}
	e.blockedWrote = true
	e.emit(Event{Type: EvBlocked, Task: row.TaskID, Title: row.Title, Message: row.BlockReason, Paths: r.lost})
	return nil
}

// loadBoundary rebuilds a journaled boundary's snapshot: from its commit,
// or, for a row journaled before boundaries were commits, from the
// snapshot JSON it holds.
func (e *engine) loadBoundary(ctx context.Context, b cache.Boundary) (boundary.Snapshot, error) {
	if b.Commit == "" {
		var p boundary.Snapshot
		err := json.Unmarshal(b.Snapshot, &p)
		return p, err
	}
	return boundary.Load(ctx, e.o.RepoRoot, boundary.Snapshot{Head: b.Head, Tree: b.Tree, Commit: b.Commit, Ref: boundary.RunRef(b.RunID)}, e.excludes()...)
}

// excludes are the paths boundaries leave out: the plan file, when it is
// in the repository.
func (e *engine) excludes() []string {
	rel := filepath.ToSlash(filepath.Clean(e.s.Plan))
	if filepath.IsAbs(e.s.Plan) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	return []string{rel}
}

// take takes a boundary: the work tree committed on the run's ref
// (refs/implloop/runs/<run>). track are the paths whose HEAD content the
// guard needs; prev, when given, is the boundary the snapshot will be
// compared with: the new commit's first parent, and the one a HEAD move
// is judged against. The plan file is left out of the snapshot.
func (e *engine) take(ctx context.Context, track []string, prev *boundary.Snapshot, label string, more ...boundary.Option) (boundary.Snapshot, error) {
	e.prevAt, e.takenAt = e.takenAt, e.now()
	opts := append([]boundary.Option{boundary.WithRun(e.runID), boundary.WithLabel(label)}, more...)
	opts = append(opts, boundary.WithExclude(e.excludes()...), boundary.WithKeep(e.keepSettings(ctx)))
	if len(track) > 0 {
		opts = append(opts, boundary.WithTrack(track...))
	}
	if prev != nil {
		opts = append(opts, boundary.WithPrev(*prev))
	}
	opts = append(opts, e.watchOptions(ctx, prev)...)
	if prev == nil {
		opts = append(opts, e.knownRepo()...)
	}
	snap, err := boundary.Take(ctx, e.o.RepoRoot, opts...)
	if err != nil {
		return snap, fmt.Errorf("boundary: %w", err)
	}
	e.watched(snap)
	return snap, nil
}

// putBoundary journals a boundary: its commit, HEAD and the verdict, whose
// per-path results keep only the paths something happened to. The dirty
// set is not journaled (the commit holds it): a row costs the same at task
// 1,000 as at task 1.
func (e *engine) putBoundary(afterTask string, snap boundary.Snapshot, v *guard.Verdict) error {
	var verdict []byte
	if v != nil {
		j := *v
		j.Paths = nil
		for _, r := range v.Paths {
			if r.Outcome != guard.Untouched {
				j.Paths = append(j.Paths, r)
			}
		}
		verdict, _ = json.Marshal(j)
	}
	b := cache.Boundary{RunID: e.runID, AfterTask: afterTask, Head: snap.Head, Commit: snap.Commit, Tree: snap.Tree, Verdict: verdict}
	_, err := e.j.PutBoundary(b)
	if err == nil {
		e.boundaries++
	}
	return err
}

// takeBoundary takes the boundary after task taskID and runs the guard
// against the previous one. replayedOnly tasks made no change, so "no
// changes" is not worth a concern for them. A boundary that finds
// implloop's own record gone (the run's ref deleted or moved) blocks the
// task that did it, as a discard does.
func (e *engine) takeBoundary(ctx context.Context, taskID string, replayedOnly bool, label string) (guardResult, error) {
	snap, err := e.take(ctx, e.prev.PathNames(), &e.prev, label)
	if err != nil {
		return guardResult{}, err
	}
	if how := e.lock.Gone(); how != "" && e.j.Gone() == nil {
		// (With the journal gone, the lock file beside it went too: the
		// journal's block says what happened.)
		// A second run could have started beside this one, calling
		// every task again (Lock: the anchor kept it out).
		snap.Vanished = append(snap.Vanished, fmt.Sprintf("the work tree's lock file %s was %s", e.lock.Shown(), how))
	}
	v := guard.Compare(e.prev, snap, e.planTicks(ctx, e.prev, snap)...)
	var r guardResult
	own, aheadWhy := e.attributeLost(ctx, taskID, v.Lost)
	carried, carriedWhy := e.takeCarried(taskID)
	// Journaled with every discard seen here, and those carried here:
	// restore finds each at the boundary of a task it blocked.
	v.Lost = append(v.Lost, carried...)
	if err := e.putBoundary(taskID, snap, &v); err != nil {
		return guardResult{}, err
	}
	e.prev = snap
	for _, l := range own {
		r.lost = append(r.lost, l.Path)
	}
	for _, l := range carried {
		r.lost = append(r.lost, l.Path)
		r.carried = append(r.carried, l.Path)
	}
	r.aheadWhy, r.carriedWhy = aheadWhy, carriedWhy
	r.kinds = lostKinds(v)
	r.vanished = snap.Vanished
	for _, c := range v.Concerns {
		if replayedOnly && c.Kind == guard.ConcernNoChanges {
			continue
		}
		if c.Kind == guard.ConcernNoChanges {
			r.noChanges = c.Message
		}
		r.concerns = append(r.concerns, c.Message)
	}
	msg := v.Summary()
	if aheadWhy != "" {
		msg += "; " + aheadWhy
	}
	if len(snap.Vanished) > 0 {
		msg = "BLOCKED: implloop's record was tampered with: " + strings.Join(snap.Vanished, "; ") + "; " + strings.TrimPrefix(msg, "BLOCKED: ")
	}
	watched, _ := snap.WatchUsed()
	e.emit(Event{Type: EvBoundary, Task: taskID, Head: snap.Head, Dirty: intp(len(snap.Paths)), Message: msg, Watched: watched})
	return r, nil
}
