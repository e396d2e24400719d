// Package guard decides, from two boundary snapshots, whether a task threw
// away earlier uncommitted work.
//
// # Rules
//
// For each path dirty at the earlier boundary, with worktree content w and
// HEAD content h there, take its content c at the later boundary (the
// worktree content if it is dirty then, else its content at the later HEAD,
// else absent):
//
//   - c == w: preserved. Still dirty: untouched; clean: committed as-is.
//   - c == h != w: discarded. The task blocks, whether or not HEAD moved:
//     content proves the loss, a HEAD move cannot hide it.
//   - anything else: changed further (normal work), committed or not.
//
// Content is a git object id plus a mode, so a reverted executable bit is a
// discard too; absent is a content of its own, so deleting a new file and
// undoing a deletion are discards. A HEAD move with nothing discarded is a
// concern, not a block. So is a task that left HEAD and the worktree exactly
// as they were ("no changes"), and a conflicted entry. A blank HEAD (unborn)
// on either side changes nothing in the comparison: it never disarms it.
//
// Compare is pure: the later snapshot must carry the HEAD content of the
// earlier dirty paths that are clean by then (boundary.WithTrack). A path
// whose content cannot be known from the snapshots is reported as unverified
// (a concern), never guessed.
package guard

import (
	"fmt"
	"strings"

	"github.com/implloop/implloop/boundary"
)

// Outcome is what happened to one earlier-dirty path.
type Outcome string

// The outcomes of one path.
const (
	Untouched  Outcome = "untouched"  // still dirty with the same content
	Committed  Outcome = "committed"  // clean now, and HEAD holds its content
	Changed    Outcome = "changed"    // content changed further
	Discarded  Outcome = "discarded"  // back to its base: the work is lost
	Unverified Outcome = "unverified" // its content now is unknown
)

// PathResult is the comparison for one path dirty at the earlier boundary.
type PathResult struct {
	Path    string          `json:"path"`
	Outcome Outcome         `json:"outcome"`
	Was     boundary.Blob   `json:"was"`  // w: worktree content at the earlier boundary
	Base    boundary.Blob   `json:"base"` // h: HEAD content at the earlier boundary
	Now     boundary.Blob   `json:"now"`  // c: content at the later boundary
	Clean   bool            `json:"clean,omitempty"`
	Status  boundary.Status `json:"status"` // at the earlier boundary
}

// ConcernKind names a concern.
type ConcernKind string

// The concerns a verdict can raise.
const (
	ConcernHeadMoved  ConcernKind = "head-moved"
	ConcernNoChanges  ConcernKind = "no-changes"
	ConcernConflicted ConcernKind = "conflicted"
	ConcernUnverified ConcernKind = "unverified"
)

// Concern is worth a look but does not block.
type Concern struct {
	Kind    ConcernKind `json:"kind"`
	Path    string      `json:"path,omitempty"`
	Message string      `json:"message"`
}

// Verdict is the guard's decision for one pair of boundaries.
type Verdict struct {
	PrevHead  string `json:"prev_head"`
	CurHead   string `json:"cur_head"`
	HeadMoved bool   `json:"head_moved"`
	// Paths has one result per path dirty at the earlier boundary, in path
	// order.
	Paths []PathResult `json:"paths"`
	// Lost lists the discarded paths with what boundary.Restore needs.
	Lost []boundary.LostContent `json:"lost,omitempty"`
	// Counts of Paths by outcome.
	Untouched  int       `json:"untouched"`
	Committed  int       `json:"committed"`
	Changed    int       `json:"changed"`
	Discarded  int       `json:"discarded"`
	Unverified int       `json:"unverified"`
	Concerns   []Concern `json:"concerns,omitempty"`
}

// Blocked reports whether the verdict blocks the task: something was
// discarded.
func (v Verdict) Blocked() bool { return len(v.Lost) > 0 }

// Compare applies the guard's rules to an earlier and a later snapshot.
func Compare(prev, cur boundary.Snapshot) Verdict {
	v := Verdict{PrevHead: prev.Head, CurHead: cur.Head, HeadMoved: prev.Head != cur.Head}
	for _, p := range prev.Paths {
		r := PathResult{Path: p.Path, Was: p.Worktree, Base: p.Head, Status: p.Status}
		now, dirty, known := cur.Content(p.Path)
		if !known && !dirty && prev.Head != "" && prev.Head == cur.Head {
			// Clean now under the same HEAD: its content is that HEAD's,
			// which the earlier boundary recorded as h.
			now, known = p.Head, true
		}
		r.Now, r.Clean = now, !dirty
		switch {
		case !known || (now.Present() && !now.Known()):
			r.Outcome = Unverified
			v.Unverified++
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernUnverified, Path: p.Path,
				Message: fmt.Sprintf("%s: its content now is unknown, so the guard cannot tell whether it was kept", p.Path)})
		case now.Same(p.Worktree):
			if dirty {
				r.Outcome = Untouched
				v.Untouched++
			} else {
				r.Outcome = Committed
				v.Committed++
			}
		case now.Same(p.Head):
			r.Outcome = Discarded
			v.Discarded++
			lc := boundary.LostContent{Path: p.Path, Lost: p.Worktree, Base: p.Head}
			if p.Salvaged != "" && p.Salvaged != p.Worktree.Hash {
				lc.Raw = p.Salvaged
			}
			v.Lost = append(v.Lost, lc)
		default:
			r.Outcome = Changed
			v.Changed++
		}
		v.Paths = append(v.Paths, r)
	}
	if v.HeadMoved && !v.Blocked() {
		v.Concerns = append(v.Concerns, Concern{Kind: ConcernHeadMoved,
			Message: fmt.Sprintf("HEAD moved %s -> %s (implloop never commits)", short(prev.Head), short(cur.Head))})
	}
	if sameState(prev, cur) {
		v.Concerns = append(v.Concerns, Concern{Kind: ConcernNoChanges,
			Message: "no changes: HEAD and the worktree are exactly as they were"})
	}
	for _, e := range cur.Paths {
		if e.Status == boundary.StatusConflicted {
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernConflicted, Path: e.Path,
				Message: fmt.Sprintf("%s: unresolved conflict (%s)", e.Path, e.XY)})
		}
	}
	return v
}

// sameState reports whether HEAD and every dirty path's content are exactly
// as they were.
func sameState(prev, cur boundary.Snapshot) bool {
	if prev.Head != cur.Head || len(prev.Paths) != len(cur.Paths) {
		return false
	}
	for i := range prev.Paths {
		a, b := prev.Paths[i], cur.Paths[i]
		if a.Path != b.Path || a.Worktree != b.Worktree {
			return false
		}
	}
	return true
}

// Summary is the verdict in one line, e.g.
// "HEAD moved a1b2c3d -> c3d4e5f: 9 paths committed as-is; 1 path changed further".
func (v Verdict) Summary() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s %s", n, plural(n, "path", "paths"), what))
		}
	}
	add(v.Discarded, "discarded")
	add(v.Committed, "committed as-is")
	add(v.Untouched, "kept uncommitted")
	add(v.Changed, "changed further")
	add(v.Unverified, "unverified")
	body := strings.Join(parts, "; ")
	if body == "" {
		body = "no earlier uncommitted work"
	}
	var head string
	switch {
	case v.HeadMoved:
		head = fmt.Sprintf("HEAD moved %s -> %s", short(v.PrevHead), short(v.CurHead))
	default:
		head = "HEAD unchanged at " + short(v.CurHead)
	}
	s := head + ": " + body
	for _, c := range v.Concerns {
		if c.Kind == ConcernNoChanges {
			s += "; no changes"
		}
	}
	if v.Blocked() {
		s = "BLOCKED: " + s
	}
	return s
}

func short(h string) string {
	if h == "" {
		return "(unborn)"
	}
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
