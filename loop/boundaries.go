package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
// never a block (the user may commit, edit or restore between runs).
func (e *engine) boundary(ctx context.Context, afterTask string, first bool) error {
	snap, err := e.take(ctx, nil)
	if err != nil {
		return err
	}
	var verdict []byte
	msg := ""
	if first && e.o.Parent != "" {
		if pb, ok, err := e.j.LastBoundary(e.o.Parent); err == nil && ok {
			var prev boundary.Snapshot
			if json.Unmarshal(pb.Snapshot, &prev) == nil {
				// The parent's snapshot does not know the content now of its
				// dirty paths that are clean now: take again, tracking them.
				snap, err = e.take(ctx, prev.PathNames())
				if err != nil {
					return err
				}
				v := guard.Compare(prev, snap)
				verdict, _ = json.Marshal(v)
				// Between the runs the user is the one changing things: a
				// path back at HEAD is their choice, never a block, so the
				// guard's BLOCKED prefix would mislead here.
				msg = "since run " + e.o.Parent + ": " + strings.TrimPrefix(v.Summary(), "BLOCKED: ")
				if v.Blocked() {
					msg += " (changed between the runs: information, not a block)"
				}
			}
		}
	}
	if err := e.putBoundary(afterTask, snap, verdict); err != nil {
		return err
	}
	e.prev = snap
	e.emit(Event{Type: EvBoundary, Head: snap.Head, Dirty: intp(len(snap.Paths)), Message: msg})
	return nil
}

func (e *engine) take(ctx context.Context, track []string) (boundary.Snapshot, error) {
	// The seq the next PutBoundary will get; counted here rather than by
	// loading every boundary of the run (snapshots included) per task.
	opts := []boundary.Option{boundary.WithSalvage(e.runID, e.boundaries)}
	if len(track) > 0 {
		opts = append(opts, boundary.WithTrack(track...))
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
	snap, err := e.take(ctx, e.prev.PathNames())
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
