package loop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/guard"
	"github.com/implloop/implloop/internal/words"
)

// ActionRestore is a task whose units replay but whose work is no longer
// in the tree: it is written back from the boundary commits first.
const ActionRestore = "restore"

// workCheck is what a resume knows about the tree before it plans: how it
// differs from the parent's last boundary (a replayed gate stands only on
// an unchanged tree), and, per task the plan replays, what of its work is
// no longer there.
type workCheck struct {
	parent string
	// changed: the paths whose content now differs from the parent's last
	// boundary, with their content now. nil when the tree is as the
	// parent left it (or the parent's boundary is not a commit: nothing
	// to compare with).
	changed map[string]boundary.Blob
	// restores: per task planned ActionRestore, what to write back.
	restores map[string][]boundary.LostContent
	// rerun: tasks whose work is lost that run live (Options.RerunLost),
	// with the lost paths.
	rerun map[string][]string
	// freshGate: tasks whose work was found gone only as the run went
	// (recheckWork): their journaled gate judged a tree that is no more.
	freshGate map[string]bool
}

// mustRun reports whether task id runs live although its units would
// replay: its work is lost and --rerun-lost asked for that.
func (w *workCheck) mustRun(id string) bool { return w != nil && w.rerun[id] != nil }

// treeChanged reports whether the tree's content differs from the parent's
// last boundary (commits alone change no content; the plan file and
// implloop's own files are not in the snapshot).
func (w *workCheck) treeChanged() bool { return w != nil && len(w.changed) > 0 }

// changedReason is the resume plan's word for a gate that runs again.
func (w *workCheck) changedReason() string {
	return fmt.Sprintf("the tree changed since run %s (%s): its gate runs live", w.parent, words.Count(len(w.changed), "path"))
}

// parentTree is the tree of the parent's last boundary, "" when there is
// none to compare with (a fresh run, or a parent journaled before
// boundaries were commits).
func (e *engine) parentTree() string {
	if e.o.Parent == "" || e.j == nil {
		return ""
	}
	b, ok, err := e.j.LastBoundary(e.o.Parent)
	if err != nil || !ok {
		return ""
	}
	return b.Tree
}

// loadWorkCheck takes what the snapshot at the start of a resume (taken
// WithCompare(e.parentTree())) says changed since the parent's last
// boundary.
func (e *engine) loadWorkCheck(now boundary.Snapshot) {
	w := &workCheck{parent: e.o.Parent}
	e.work = w
	if len(now.Since) == 0 {
		return
	}
	w.changed = make(map[string]boundary.Blob, len(now.Since))
	for _, c := range now.Since {
		w.changed[c.Path] = c.After
	}
}

// checkWork turns the planned replays whose work is gone from the tree
// into restores. A task's work is its effect in the run that did it (the
// diff between the boundaries around it); for each path of it whose
// content changed since the parent's last boundary, the content now is
// the task's after-content (present), its before-content (lost: the task's
// work was undone or removed), or something else (changed further by the
// user or a later task: kept). Tasks are checked in plan order against the
// tree as the earlier restores will leave it, so a file two tasks wrote
// comes back as the later one left it.
//
// A path the guard saw a later task discard inside the lineage (task 2
// deletes task 1's file and blocks; the user fixes task 2 and resumes
// without `implloop restore`) is checked too, though the parent's last
// boundary already lacks it: the task that discarded it does not replay,
// so the replayed task's work must be in the tree without it. Its gate,
// and those of the replays after it, then run live: they judged a tree
// that is no more.
func (e *engine) checkWork(ctx context.Context, planned []PlannedTask) error {
	w := e.work
	if w == nil {
		return nil
	}
	discarded, last := e.lineageDiscards()
	if !w.treeChanged() && len(discarded) == 0 {
		return nil
	}
	jobs, effects, err := e.replayedEffects(ctx, planned, len(discarded) > 0, last)
	if err != nil {
		return err
	}
	now := make(map[string]boundary.Blob, len(w.changed))
	for p, b := range w.changed {
		now[p] = b
	}
	stale := false // a restore of work lost inside the lineage came before
	for i, jb := range jobs {
		cur := now
		if len(discarded) > 0 {
			cur = withDiscards(now, effects[i], effects[len(jobs)+i], discarded)
		}
		lost := lostWork(effects[i], cur, jb.discarded)
		p := &planned[jb.at]
		stale = w.lostInLineage(lost) || stale
		if stale {
			e.freshGate(p)
		}
		if len(lost) == 0 {
			continue
		}
		for _, l := range lost {
			now[l.Path] = l.Lost
		}
		e.planLost(p, lost)
	}
	return nil
}

// workJob is a replayed task whose work checkWork looks for: planned[at],
// its boundaries before and after in the run it replays from, and what
// the guard saw it throw away there (not its work: putting it back is
// the user's repair).
type workJob struct {
	at        int
	from, to  string
	discarded map[string]bool
}

// replayedEffects are the tasks planned to replay from a run with an
// effect of their own recorded, with their effects there; and, when work
// was discarded in the lineage (withLast), after them where the parent
// left each task's paths: its last boundary last against the boundary
// after the task.
func (e *engine) replayedEffects(ctx context.Context, planned []PlannedTask, withLast bool, last string) ([]workJob, [][]boundary.Change, error) {
	var jobs []workJob
	for i, p := range planned {
		if p.Action != ActionReplay || p.From == "" {
			continue
		}
		from, to, err := taskBoundaries(e.j, p.From, p.Task)
		if err != nil {
			continue // no effect of its own recorded (or before commits): nothing to check
		}
		jobs = append(jobs, workJob{at: i, from: from.Commit, to: to.Commit, discarded: discardedBy(to)})
	}
	pairs := make([][2]string, len(jobs), 2*len(jobs))
	for i, jb := range jobs {
		pairs[i] = [2]string{jb.from, jb.to}
	}
	if withLast {
		for _, jb := range jobs {
			pairs = append(pairs, [2]string{jb.to, last})
		}
	}
	effects, err := boundary.Effects(ctx, e.o.RepoRoot, pairs)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the effects of replayed tasks: %w", err)
	}
	return jobs, effects, nil
}

// lostInLineage reports whether a path of lost is one the tree did not
// change since the parent's last boundary: work discarded inside the
// lineage, written back.
func (w *workCheck) lostInLineage(lost []boundary.LostContent) bool {
	for _, l := range lost {
		if _, ok := w.changed[l.Path]; !ok {
			return true
		}
	}
	return false
}

// freshGate has the gate of planned task p run live (once): work
// discarded in the lineage is written back before it, so the tree its
// journaled gate judged is no more.
func (e *engine) freshGate(p *PlannedTask) {
	w := e.work
	if w.freshGate == nil {
		w.freshGate = map[string]bool{}
	}
	if e.gatedTask(p.Task) && !w.freshGate[p.Task] {
		w.freshGate[p.Task] = true
		if !w.treeChanged() {
			p.Reasons = append(p.Reasons, "work discarded in run "+w.parent+"'s lineage is written back: its gate runs live")
		}
	}
}

// planLost plans replayed task p, whose work lost is no longer in the
// tree: written back from its run's boundaries (a restore), or with
// --rerun-lost run live again.
func (e *engine) planLost(p *PlannedTask, lost []boundary.LostContent) {
	w := e.work
	var paths []string
	for _, l := range lost {
		paths = append(paths, l.Path)
	}
	p.Paths = paths
	if e.o.RerunLost {
		p.Action, p.From = ActionLive, ""
		p.Reasons = []string{"its work is no longer in the tree: " + shownPaths(paths) + "; --rerun-lost: it runs again"}
		if w.rerun == nil {
			w.rerun = map[string][]string{}
		}
		w.rerun[p.Task] = paths
		return
	}
	p.Action = ActionRestore
	p.Reasons = append([]string{"its work is no longer in the tree: " + shownPaths(paths) + "; written back from run " + p.From + "'s boundaries"}, p.Reasons...)
	if w.restores == nil {
		w.restores = map[string][]boundary.LostContent{}
	}
	w.restores[p.Task] = lost
}

// gatedTask reports whether task id of the selection has a gate.
func (e *engine) gatedTask(id string) bool {
	for _, t := range e.sel.Tasks {
		if t.ID == id {
			return e.gateCommand(t) != ""
		}
	}
	return false
}

// lineageDiscards lists the paths the guard saw a task discard in the
// runs the resume continues (their boundaries' verdicts), and the parent's
// last boundary commit: nil when there are none.
func (e *engine) lineageDiscards() (map[string]bool, string) {
	if e.j == nil || e.lineage == nil || len(e.lineage.runs) == 0 {
		return nil, ""
	}
	b, ok, err := e.j.LastBoundary(e.o.Parent)
	if err != nil || !ok || b.Commit == "" {
		return nil, ""
	}
	var out map[string]bool
	for _, run := range e.lineage.runs {
		lost, err := lostContent(e.j, run, "", nil)
		if err != nil {
			continue
		}
		for _, l := range lost {
			if out == nil {
				out = map[string]bool{}
			}
			out[l.Path] = true
		}
	}
	return out, b.Commit
}

// withDiscards is now (the content of the paths changed since the
// parent's last boundary) with the discarded paths of a task's effect
// added: their content at the parent's last boundary, read from toLast
// (the changes from the boundary after the task to it; a path not there
// holds what the task left).
func withDiscards(now map[string]boundary.Blob, effect, toLast []boundary.Change, discarded map[string]bool) map[string]boundary.Blob {
	var out map[string]boundary.Blob
	for _, c := range effect {
		if _, ok := now[c.Path]; ok || !discarded[c.Path] {
			continue
		}
		at := c.After
		for _, d := range toLast {
			if d.Path == c.Path {
				at = d.After
				break
			}
		}
		if out == nil {
			out = make(map[string]boundary.Blob, len(now)+1)
			for p, b := range now {
				out[p] = b
			}
		}
		out[c.Path] = at
	}
	if out == nil {
		return now
	}
	return out
}

// discardedBy is what the guard saw a task throw away in the boundary
// after it: not the task's work (putting it back was the user's repair).
func discardedBy(after cache.Boundary) map[string]bool {
	var v guard.Verdict
	if len(after.Verdict) == 0 || json.Unmarshal(after.Verdict, &v) != nil || len(v.Lost) == 0 {
		return nil
	}
	out := make(map[string]bool, len(v.Lost))
	for _, l := range v.Lost {
		out[l.Path] = true
	}
	return out
}

// lostWork is the part of a task's effect whose paths hold the task's
// before-content now (now: content of the paths that changed since; a path
// not in it is as it was, and skip lists paths not to judge). A path
// still holding the after-content, or changed further, keeps its work.
func lostWork(effect []boundary.Change, now map[string]boundary.Blob, skip map[string]bool) []boundary.LostContent {
	var lost []boundary.LostContent
	for _, c := range effect {
		cur, changed := now[c.Path]
		if !changed || skip[c.Path] || cur.Same(c.After) || !cur.Same(c.Before) {
			continue
		}
		lost = append(lost, boundary.LostContent{Path: c.Path, Lost: c.After, Base: c.Before})
	}
	return lost
}

// recheckWork checks a task the resume plan replays against the tree as
// the tasks before it in this run left it (the latest boundary), when a
// task ran live before it: the plan checked the tree at the start, and a
// live task may since have rewritten a file this task wrote after it
// (task 1 runs again and writes f.txt as it did, taking task 3's append
// away). Lost work found here is restored (or, with --rerun-lost, the task
// runs live), and the task's gate runs again.
func (e *engine) recheckWork(ctx context.Context, taskID string) error {
	p, ok := e.planned[taskID]
	if !ok || !e.sawLive || e.work == nil || (p.Action != ActionReplay && p.Action != ActionRestore) || p.From == "" {
		return nil
	}
	from, to, err := taskBoundaries(e.j, p.From, taskID)
	if err != nil || e.prev.Tree == "" {
		return nil // no effect of its own recorded: nothing to check
	}
	effects, err := boundary.Effects(ctx, e.o.RepoRoot, [][2]string{{from.Commit, to.Commit}})
	if err != nil {
		return fmt.Errorf("task %s: reading its work: %w", taskID, err)
	}
	since, err := boundary.Diff(ctx, e.o.RepoRoot, to.Commit, e.prev.Tree)
	if err != nil {
		return fmt.Errorf("task %s: comparing its work with the tree: %w", taskID, err)
	}
	now := make(map[string]boundary.Blob, len(since))
	for _, c := range since {
		if c.From != "" {
			now[c.From] = boundary.Blob{}
		}
		now[c.Path] = c.After
	}
	skip := discardedBy(to)
	for _, l := range e.work.restores[taskID] {
		if skip == nil {
			skip = map[string]bool{}
		}
		skip[l.Path] = true // already planned
	}
	lost := lostWork(effects[0], now, skip)
	if len(lost) == 0 {
		return nil
	}
	if e.held != nil {
		return errNeedsLive // inside a replay batch: run it on its own
	}
	var paths []string
	for _, l := range lost {
		paths = append(paths, l.Path)
	}
	if e.work.freshGate == nil {
		e.work.freshGate = map[string]bool{}
	}
	e.work.freshGate[taskID] = true
	note := "a task that ran live before it took its work away: " + shownPaths(paths)
	e.emit(Event{Type: EvConcern, Task: taskID, Message: note})
	if e.o.RerunLost {
		if e.work.rerun == nil {
			e.work.rerun = map[string][]string{}
		}
		e.work.rerun[taskID] = append(e.work.rerun[taskID], paths...)
		return nil
	}
	if e.work.restores == nil {
		e.work.restores = map[string][]boundary.LostContent{}
	}
	e.work.restores[taskID] = append(e.work.restores[taskID], lost...)
	return nil
}

// forgetLost drops, before a task that --rerun-lost runs again, its lost
// paths from the boundary the guard compares it with: that the user
// deleted or reverted them between the runs is exactly what the task is
// asked to redo, not earlier work it would discard.
func (e *engine) forgetLost(taskID string) {
	if e.work == nil || len(e.work.rerun[taskID]) == 0 {
		return
	}
	drop := map[string]bool{}
	for _, p := range e.work.rerun[taskID] {
		drop[p] = true
	}
	kept := make([]boundary.Entry, 0, len(e.prev.Paths))
	for _, en := range e.prev.Paths {
		if !drop[en.Path] {
			kept = append(kept, en)
		}
	}
	e.prev.Paths = kept
}

// restoreWork writes back the work of a task planned ActionRestore, before
// its units replay. Paths that hold something else than the task's
// before-content now (the user edited them) are left alone and reported.
func (e *engine) restoreWork(ctx context.Context, taskID string, ts *taskState) error {
	if e.work == nil {
		return nil
	}
	e.forgetLost(taskID)
	lost := e.work.restores[taskID]
	if len(lost) == 0 {
		return nil
	}
	done, left := writeBack(ctx, e.o.RepoRoot, lost)
	ts.restored = true
	e.sawRestore = true
	// The boundary before the task is the tree as the restore left it:
	// the guard must not judge the restore, which puts back on purpose
	// what changed between the runs (a deletion undone is a discard to
	// it), as the task's doing.
	snap, err := e.take(ctx, e.prev.PathNames(), &e.prev, "task "+taskID+"'s work restored")
	if err != nil {
		return err
	}
	if err := e.putBoundary("", snap, nil); err != nil {
		return err
	}
	e.prev = snap
	if len(done) > 0 {
		note := "its work was no longer in the tree; restored from the boundary commits: " + shownPaths(done)
		ts.row.Concerns = append(ts.row.Concerns, note)
		e.emit(Event{Type: EvRestored, Task: taskID, Paths: done, Message: note})
	}
	if len(left) > 0 {
		note := "left alone (changed since): " + shownPaths(left)
		ts.row.Concerns = append(ts.row.Concerns, note)
		e.emit(Event{Type: EvConcern, Task: taskID, Message: note})
	}
	return nil
}

// writeBack writes work back from the boundary commits (boundary.Restore,
// never forced) and sorts its paths: written, and left alone with why. A
// path Restore never came to (git could not be read, an interrupt) is
// left alone with Restore's error.
func writeBack(ctx context.Context, root string, work []boundary.LostContent) (done, left []string) {
	results, err := boundary.Restore(ctx, root, work, false)
	for _, r := range results {
		switch r.Action {
		case boundary.RestoreWritten, boundary.RestoreRemoved, boundary.RestoreUnchanged:
			done = append(done, r.Path)
		default:
			left = append(left, r.Path+" ("+r.Reason+")")
		}
	}
	for _, w := range work[min(len(results), len(work)):] {
		left = append(left, w.Path+" ("+firstLine(fmt.Sprint(err))+")")
	}
	return done, left
}
