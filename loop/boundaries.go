package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/guard"
)

type guardResult struct {
	lost     []string
	concerns []string
}

// boundary takes B0. On a resume it compares B0 with the parent's last
// boundary and reports what happened between the runs: information only,
// never a block (the user may commit, edit or restore between runs) --
// unless the parent stopped without finishing a task (killed: no code ran
// to guard it). Then the discards since the parent's last boundary are that
// task's, and they block the resume before anything is dispatched
// (e.resumeBlocked).
func (e *engine) boundary(ctx context.Context, afterTask string, first bool) error {
	// The parent's last boundary is read first, so that B0 is taken once:
	// tracking the parent's dirty paths (its snapshot does not know their
	// content now when they are clean now), and reusing its salvage.
	var pb *cache.Boundary
	var prev *boundary.Snapshot
	if first && e.o.Parent != "" {
		if b, ok, err := e.j.LastBoundary(e.o.Parent); err == nil && ok {
			var p boundary.Snapshot
			if json.Unmarshal(b.Snapshot, &p) == nil {
				pb, prev = b, &p
			}
		}
	}
	var track []string
	if prev != nil {
		track = prev.PathNames()
	}
	snap, err := e.take(ctx, track, prev)
	if err != nil {
		return err
	}
	var block *blockInfo
	var verdict []byte
	msg := ""
	if prev != nil {
		v := guard.Compare(*prev, snap)
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
		verdict, _ = json.Marshal(journaled)
		switch {
		case v.Blocked() && hasUnfinished:
			msg = "since run " + e.o.Parent + ": " + v.Summary() +
				fmt.Sprintf(" (task %s of run %s never finished, so these are its discards)", unfinished.TaskID, e.o.Parent)
			var lost []string
			for _, l := range v.Lost {
				lost = append(lost, l.Path)
			}
			block = &blockInfo{RunID: e.runID, PlanPath: e.s.Plan, TaskID: unfinished.TaskID, Title: unfinished.Title,
				Attempts: unfinished.Attempts, Lost: lost, Unfinished: e.o.Parent,
				Reason: fmt.Sprintf("run %s stopped without finishing task %s, and since its last boundary uncommitted work was discarded: %s",
					e.o.Parent, unfinished.TaskID, strings.Join(lost, ", "))}
		default:
			// Between the runs the user is the one changing things:
			// a path back at HEAD is their choice, never a block, so
			// the guard's BLOCKED prefix would mislead here.
			msg = "since run " + e.o.Parent + ": " + strings.TrimPrefix(v.Summary(), "BLOCKED: ")
			if v.Blocked() {
				msg += " (changed between the runs: information, not a block)"
			}
		}
	}
	if err := e.putBoundary(afterTask, snap, verdict); err != nil {
		return err
	}
	e.prev = snap
	e.emit(Event{Type: EvBoundary, Head: snap.Head, Dirty: intp(len(snap.Paths)), Message: msg})
	if block != nil {
		e.blocks = append(e.blocks, *block)
		if err := writeBlocked(e.o.RepoRoot, e.blocks); err != nil {
			return err
		}
		e.blockedWrote, e.resumeBlocked = true, true
		e.emit(Event{Type: EvBlocked, Task: block.TaskID, Title: block.Title, Message: block.Reason, Paths: block.Lost})
	}
	return nil
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
// a boundary, with salvage, compared with the one before the task. Lost
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
	r, err := e.takeBoundary(gctx, row.TaskID, false)
	if err != nil {
		return err
	}
	row.Concerns = append(row.Concerns, r.concerns...)
	if len(r.lost) > 0 {
		row.LostPaths = r.lost
		row.BlockReason = "interrupted, after it discarded work of earlier tasks: " + strings.Join(r.lost, ", ")
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
		Reason: row.BlockReason, Lost: r.lost, Interrupted: true}
	e.blocks = append(e.blocks, b)
	if err := writeBlocked(e.o.RepoRoot, e.blocks); err != nil {
		return err
	}
	e.blockedWrote = true
	e.emit(Event{Type: EvBlocked, Task: row.TaskID, Title: row.Title, Message: row.BlockReason, Paths: r.lost})
	return nil
}

// take snapshots the repository with salvage. track are the paths whose
// HEAD content the guard needs; prev, when given, is the boundary the
// snapshot will be compared with, so that a HEAD move is looked into and
// the files unchanged since it are not salvaged again (boundary.WithPrev).
func (e *engine) take(ctx context.Context, track []string, prev *boundary.Snapshot) (boundary.Snapshot, error) {
	// The seq the next PutBoundary will get; counted here rather than by
	// loading every boundary of the run (snapshots included) per task.
	opts := []boundary.Option{boundary.WithSalvage(e.runID, e.boundaries)}
	if len(track) > 0 {
		opts = append(opts, boundary.WithTrack(track...))
	}
	if prev != nil {
		opts = append(opts, boundary.WithPrev(*prev))
	}
	snap, err := boundary.Take(ctx, e.o.RepoRoot, opts...)
	if err != nil {
		return snap, fmt.Errorf("boundary: %w", err)
	}
	return snap, nil
}

func (e *engine) putBoundary(afterTask string, snap boundary.Snapshot, verdict []byte) error {
	sj, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	b := cache.Boundary{RunID: e.runID, AfterTask: afterTask, Head: snap.Head, Snapshot: sj, Verdict: verdict}
	if snap.Salvage != nil {
		b.SalvageRef = snap.Salvage.Ref
	}
	if _, err = e.j.PutBoundary(b); err == nil {
		e.boundaries++
	}
	return err
}

// takeBoundary takes the boundary after task taskID and runs the guard
// against the previous one. replayedOnly tasks made no change, so "no
// changes" is not worth a concern for them.
func (e *engine) takeBoundary(ctx context.Context, taskID string, replayedOnly bool) (guardResult, error) {
	snap, err := e.take(ctx, e.prev.PathNames(), &e.prev)
	if err != nil {
		return guardResult{}, err
	}
	v := guard.Compare(e.prev, snap)
	vj, _ := json.Marshal(v)
	if err := e.putBoundary(taskID, snap, vj); err != nil {
		return guardResult{}, err
	}
	e.prev = snap
	var r guardResult
	for _, l := range v.Lost {
		r.lost = append(r.lost, l.Path)
	}
	for _, c := range v.Concerns {
		if replayedOnly && c.Kind == guard.ConcernNoChanges {
			continue
		}
		r.concerns = append(r.concerns, c.Message)
	}
	e.emit(Event{Type: EvBoundary, Task: taskID, Head: snap.Head, Dirty: intp(len(snap.Paths)), Message: v.Summary()})
	return r, nil
}
