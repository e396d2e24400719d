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
//   - c == h != w, or c == i != w where i is the index content there
//     (`git checkout -- path` and `git restore path` restore from the
//     index), w being neither h nor i: discarded. The task blocks, whether
//     or not HEAD moved: content proves the loss, a HEAD move cannot hide it.
//   - discarded by those rules, but w is now at another path: moved (a
//     rename; a concern, not a block). w counts as there when a path that is
//     dirty at the later boundary holds it in the worktree, or a path the
//     later snapshot tracked (or, under the same HEAD, an earlier-dirty path
//     now clean at h) holds it, with the same id and the same mode. The old
//     side of an earlier rename whose new side moved back to it (a rename
//     undone) is moved too: nothing was lost.
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
// (a concern), never guessed. Taken with boundary.WithPrevHead, the later
// snapshot also tracks every path a HEAD move changed, so content moved to
// a new path and committed is found there (moved).
//
// # HEAD rewritten
//
// When the later snapshot's HeadChange says the earlier HEAD was rewritten
// away (not an ancestor of the later HEAD, on no branch or tag), each path
// the dropped commits changed is judged too, with p its content in the
// dropped commit and f at the fork point: kept when the path holds p,
// moved when another path does, discarded (blocks, restorable: p is in the
// object store and the commit is pinned) when the path went back to f, and
// changed otherwise. A rewrite that loses nothing is a concern
// (head-rewritten); a move to a commit a branch still holds is a branch
// switch (a concern; only the dirty paths are judged).
//
// # Ignored, not lost
//
// A path that left the later snapshot because a new ignore rule covers it,
// while its file is still on disk, is not a loss: boundary.Take finds it on
// disk and keeps it in the snapshot (KeptIgnored), so it compares as
// untouched, with an "ignored" concern.
//
// # Submodules and nested repositories
//
// The outer tree records a submodule (or a repository nested in the work
// tree) as the commit checked out in it: work uncommitted inside it is
// invisible there. The snapshots carry the nested repositories' own
// snapshots (boundary.Nested), and Compare applies the same rules inside
// each one that had uncommitted work at the earlier boundary. When both
// were committed in that repository (its own boundaries), what was
// discarded in there blocks like any discard, named from the outer root
// (PathResult.Nested, LostContent.Repo), and restore writes it back from
// that repository. Between read-only snapshots it is a "submodule"
// concern naming the paths; so is a nested repository that is gone. A
// submodule moved to another commit is a change of the outer path like
// any other: undoing that blocks, and restore names the commit to check
// out.
//
// # Kept beside the tree
//
// The snapshots may keep the plan and the user's ignored files
// (boundary.Keep). An ignored file the earlier boundary kept that is gone
// from disk is discarded (moved, when its content is at another path):
// it blocks, and restore writes its raw bytes back. The plan deleted, or
// rewritten beyond its boxes, is discarded too; ticks alone (the caller
// says so with PlanTicksOnly, having read both versions) are a
// plan-ticked concern. A wholly ignored directory or an ignored file over
// the limits, listed but not stored, removed is an ignored-removed
// concern.
//
// # Ignore rules
//
// A later snapshot whose ignore rules differ from its run's
// (boundary.Snapshot.RulesChanged) raises an ignore-rules concern when
// they changed since the earlier one: the snapshots go on with the run's
// rules, so nothing was hidden from the guard.
package guard

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/internal/bytepath"
	"github.com/implloop/implloop/internal/words"
)

// Outcome is what happened to one earlier-dirty path.
type Outcome string

// The outcomes of one path.
const (
	Untouched  Outcome = "untouched"  // still dirty with the same content
	Committed  Outcome = "committed"  // clean now, and HEAD holds its content
	Changed    Outcome = "changed"    // content changed further
	Discarded  Outcome = "discarded"  // back to its base: the work is lost
	Moved      Outcome = "moved"      // gone from here, but its content lives at another path
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
	// RevertedTo says, for a discarded path, what it was reverted to:
	// "head" (h) or "index" (the earlier boundary's index content).
	RevertedTo string `json:"reverted_to,omitempty"`
	// MovedTo is, for a moved path, where its earlier content lives now.
	MovedTo string `json:"moved_to,omitempty"`
	// MovedFrom is set on the old side of an earlier rename that was
	// undone: the new side whose content came back here.
	MovedFrom string `json:"moved_from,omitempty"`
	// Nested is set on a path inside a submodule or nested repository
	// (its path from the outer root): Path is from the outer root too.
	Nested string `json:"nested,omitempty"`
	// InCommit is set on a path judged because HEAD was rewritten: the
	// dropped commit (the earlier HEAD) whose content Was is. Base is then
	// the content at the fork point, what the rewrite went back to.
	InCommit string `json:"in_commit,omitempty"`
}

// ConcernKind names a concern.
type ConcernKind string

// The concerns a verdict can raise.
const (
	ConcernHeadMoved  ConcernKind = "head-moved"
	ConcernNoChanges  ConcernKind = "no-changes"
	ConcernConflicted ConcernKind = "conflicted"
	ConcernUnverified ConcernKind = "unverified"
	ConcernMoved      ConcernKind = "moved"
	// HEAD was rewritten (reset to an older commit, amend, rebase) and
	// the dropped commits' content is all still there.
	ConcernHeadRewritten ConcernKind = "head-rewritten"
	// HEAD moved to another line of history while a branch or tag still
	// holds the earlier HEAD (git switch, git checkout BRANCH).
	ConcernBranchSwitch ConcernKind = "branch-switch"
	// A path became ignored (a new .gitignore or info/exclude rule) while
	// it still holds its content on disk: nothing lost, the boundaries
	// keep following it (boundary.Snapshot.KeptIgnored).
	ConcernIgnored ConcernKind = "ignored"
	// Uncommitted work inside a submodule or nested repository was
	// discarded (or the repository is gone). The boundaries record a
	// submodule's commit, not its work tree: it cannot be restored.
	ConcernSubmodule ConcernKind = "submodule"
	// Boxes of the plan were ticked (or unticked) during the task: such a
	// tick does not mark a task done.
	ConcernPlanTicked ConcernKind = "plan-ticked"
	// An ignored directory or file implloop listed but did not keep (too
	// big, or a wholly ignored directory) was removed.
	ConcernIgnoredRemoved ConcernKind = "ignored-removed"
	// The ignore rules (.gitignore files, info/exclude,
	// core.excludesFile) differ from the run's: the boundaries go on with
	// the run's (boundary.Snapshot.RulesChanged).
	ConcernIgnoreRules ConcernKind = "ignore-rules"
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
	// HeadRewritten: the earlier HEAD is no longer an ancestor of the
	// later one, nor held by any branch or tag (boundary.HeadChange).
	HeadRewritten bool `json:"head_rewritten,omitempty"`
	// Pinned is the ref keeping the dropped commit from gc.
	Pinned string `json:"pinned,omitempty"`
	// Paths has one result per path dirty at the earlier boundary, and,
	// when HEAD was rewritten, one per path the dropped commits changed
	// whose content HEAD no longer holds (InCommit set), in path order.
	Paths []PathResult `json:"paths"`
	// Lost lists the discarded paths with what boundary.Restore needs.
	Lost []boundary.LostContent `json:"lost,omitempty"`
	// Counts of Paths by outcome.
	Untouched  int       `json:"untouched"`
	Committed  int       `json:"committed"`
	Changed    int       `json:"changed"`
	Discarded  int       `json:"discarded"`
	Moved      int       `json:"moved"`
	Unverified int       `json:"unverified"`
	Concerns   []Concern `json:"concerns,omitempty"`
}

// Blocked reports whether the verdict blocks the task: something was
// discarded.
func (v Verdict) Blocked() bool { return len(v.Lost) > 0 }

// Option tells Compare what it cannot know from the snapshots alone.
type Option func(*compareOptions)

type compareOptions struct {
	planTicks bool
}

// PlanTicksOnly says that the plan's change between the two boundaries
// (Snapshot.Plan) is only boxes ticked or unticked: the caller read both
// versions. Such a change is a concern (plan-ticked), not a discard.
func PlanTicksOnly() Option { return func(o *compareOptions) { o.planTicks = true } }

// Compare applies the guard's rules to an earlier and a later snapshot.
func Compare(prev, cur boundary.Snapshot, opts ...Option) Verdict {
	var o compareOptions
	for _, opt := range opts {
		opt(&o)
	}
	v := Verdict{PrevHead: prev.Head, CurHead: cur.Head, HeadMoved: prev.Head != cur.Head}
	where := &locator{prev: prev, cur: cur}
	for _, p := range prev.Paths {
		v.Paths = append(v.Paths, where.judge(p))
	}
	undoneRenames(prev, v.Paths)
	hc := cur.HeadChange
	if hc != nil && (hc.Prev != prev.Head || !v.HeadMoved) {
		hc = nil // recorded against another HEAD: not this pair's
	}
	if hc != nil && hc.Rewritten {
		v.HeadRewritten, v.Pinned = true, hc.Pinned
		v.Paths = where.dropped(v.Paths, hc)
	}
	kept := append(where.ignored(), where.plan(o.planTicks)...)
	if len(kept) > 0 {
		v.Paths = append(v.Paths, kept...)
		sort.SliceStable(v.Paths, func(i, j int) bool { return v.Paths[i].Path < v.Paths[j].Path })
	}
	for _, r := range v.Paths {
		v.tally(prev, r)
	}
	n := len(v.Concerns)
	v.keptConcerns(prev, cur)
	v.nested(prev, cur)
	v.stateConcerns(prev, cur, hc, len(kept) > 0 || len(v.Concerns) > n)
	return v
}

// ignored judges the user's ignored files the earlier boundary kept
// (boundary.Snapshot.Ignored): one still on disk was kept, or changed
// further (reported only then); one gone from disk was discarded, unless
// its content is at another path now (moved). A later snapshot that kept
// nothing (no WithKeep) judges nothing.
func (l *locator) ignored() []PathResult {
	pi, ci := l.prev.Ignored, l.cur.Ignored
	if pi == nil || ci == nil {
		return nil
	}
	var out []PathResult
	for _, f := range pi.Files {
		r := PathResult{Path: f.Path, Was: f.Blob, Status: boundary.StatusIgnored}
		if c, ok := ci.File(f.Path); ok {
			if c.Blob.Same(f.Blob) {
				continue
			}
			r.Now, r.Outcome = c.Blob, Changed
			out = append(out, r)
			continue
		}
		if ci.Listed(f.Path) {
			continue // still on disk, over a limit now
		}
		r.Outcome = Discarded
		if to, ok := l.elsewhere(f.Path, f.Blob); ok {
			r.Outcome, r.MovedTo = Moved, to
		} else {
			for _, c := range ci.Files {
				if c.Path != f.Path && c.Blob.Same(f.Blob) {
					r.Outcome, r.MovedTo = Moved, c.Path
					break
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// plan judges the plan file the boundaries kept (boundary.Snapshot.Plan):
// deleted, or rewritten beyond its boxes (ticks, which the caller tells
// with PlanTicksOnly), it is discarded: the plan is the user's, and its
// bytes are kept to be restored. Ticks alone are a change with a concern.
func (l *locator) plan(ticks bool) []PathResult {
	pp, cp := l.prev.Plan, l.cur.Plan
	if pp == nil || cp == nil || pp.Path != cp.Path || !pp.Blob.Present() || !pp.Blob.Known() || !cp.Blob.Known() || cp.Blob.Same(pp.Blob) {
		return nil // not kept on one side (unreadable), or kept as it was
	}
	r := PathResult{Path: pp.Path, Was: pp.Blob, Now: cp.Blob, Status: boundary.StatusPlan, Outcome: Discarded}
	if cp.Blob.Present() {
		r.Base = cp.Blob // what it was rewritten to: restore may overwrite it
		if ticks {
			r.Outcome = Changed
		}
	}
	return []PathResult{r}
}

// judge is what became of path p of the previous boundary: its outcome by
// the rules of the package doc, a discard found elsewhere a move.
func (l *locator) judge(p boundary.Entry) PathResult {
	r := PathResult{Path: p.Path, Was: p.Worktree, Base: p.Head, Status: p.Status}
	now, dirty, known := l.content(p)
	r.Now, r.Clean = now, !dirty
	switch {
	case !known || (now.Present() && !now.Known()):
		r.Outcome = Unverified
	case now.Same(p.Worktree):
		if dirty {
			r.Outcome = Untouched
		} else {
			r.Outcome = Committed
		}
	case now.Same(p.Head):
		r.Outcome, r.RevertedTo = Discarded, "head"
	case p.Status != boundary.StatusConflicted && now.Same(p.Index) && !p.Worktree.Same(p.Head):
		// Restored from the index (git checkout -- path, git restore
		// path): the worktree work that was never staged is gone. A
		// conflicted entry has no stage-0 index content to compare.
		r.Outcome, r.RevertedTo = Discarded, "index"
	default:
		r.Outcome = Changed
	}
	if r.Outcome == Discarded {
		if to, ok := l.elsewhere(p.Path, p.Worktree); ok {
			r.Outcome, r.RevertedTo, r.MovedTo = Moved, "", to
		}
	}
	return r
}

// undoneRenames turns back into moves the discards of paths whose earlier
// rename was undone. The old side of an earlier rename is discarded by the
// rules when the rename is undone (its deletion is undone); but if the new
// side's content moved back to it, nothing was lost, and restoring the
// deletion alone would remove the only copy in the worktree.
func undoneRenames(prev boundary.Snapshot, paths []PathResult) {
	for i := range paths {
		r := &paths[i]
		e, _ := prev.Lookup(r.Path)
		if r.Outcome != Discarded || e.RenamedTo == "" || r.Was.Present() {
			continue
		}
		for _, o := range paths {
			// The new side's content is back here (it may be at a copy
			// too, which elsewhere may have found first).
			if o.Path == e.RenamedTo && o.Outcome == Moved && (o.MovedTo == r.Path || r.Now.Same(o.Was)) {
				r.Outcome, r.RevertedTo, r.MovedFrom = Moved, "", o.Path
				break
			}
		}
	}
}

// tally counts path result r, with its concern, and a discard's lost
// content as Restore will write it back.
func (v *Verdict) tally(prev boundary.Snapshot, r PathResult) {
	switch r.Outcome {
	case Untouched:
		v.Untouched++
	case Committed:
		v.Committed++
	case Changed:
		v.Changed++
	case Unverified:
		v.Unverified++
		v.Concerns = append(v.Concerns, Concern{Kind: ConcernUnverified, Path: r.Path,
			Message: fmt.Sprintf("%s: its content now is unknown, so the guard cannot tell whether it was kept", r.Path)})
	case Moved:
		v.Moved++
		if r.MovedTo != "" {
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernMoved, Path: r.Path,
				Message: fmt.Sprintf("%s moved to %s", r.Path, r.MovedTo)})
		}
	case Discarded:
		v.Discarded++
		if r.InCommit != "" {
			// Committed content: the blob is in the object store, and
			// the dropped commit is pinned.
			v.Lost = append(v.Lost, boundary.LostContent{Path: r.Path, Lost: r.Was, Base: r.Base})
			return
		}
		if r.Status == boundary.StatusIgnored || r.Status == boundary.StatusPlan {
			// Kept beside the tree as raw bytes: written back as they were.
			v.Lost = append(v.Lost, boundary.LostContent{Path: r.Path, Lost: r.Was, Raw: r.Was.Hash, Base: r.Base})
			return
		}
		p, _ := prev.Lookup(r.Path)
		lc := boundary.LostContent{Path: p.Path, Lost: p.Worktree, Base: p.Head}
		switch r.RevertedTo {
		case "index":
			// What the path was reverted to: Restore may overwrite it.
			lc.Base = p.Index
		case "fork":
			lc.Base = r.Now
		}
		v.Lost = append(v.Lost, lc)
	}
}

// stateConcerns are the concerns about the pair as a whole: a HEAD that
// moved, nothing changed, paths ignored now, nested repositories and
// unresolved conflicts.
func (v *Verdict) stateConcerns(prev, cur boundary.Snapshot, hc *boundary.HeadChange, keptChanged bool) {
	if v.HeadMoved && !v.Blocked() {
		v.Concerns = append(v.Concerns, headConcern(prev, cur, hc, v.Paths))
	}
	if !keptChanged && sameState(prev, cur) {
		v.Concerns = append(v.Concerns, Concern{Kind: ConcernNoChanges,
			Message: "no changes: HEAD and the worktree are exactly as they were"})
	}
	for _, p := range cur.KeptIgnored {
		v.Concerns = append(v.Concerns, Concern{Kind: ConcernIgnored, Path: p,
			Message: fmt.Sprintf("%s is ignored now; its content is still on disk and implloop keeps it in its boundaries", p)})
	}
	for _, e := range cur.Paths {
		if e.Status == boundary.StatusConflicted {
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernConflicted, Path: e.Path,
				Message: fmt.Sprintf("%s: unresolved conflict (%s)", e.Path, e.XY)})
		}
	}
}

// keptConcerns are the concerns about what the boundaries keep beside
// their trees: the plan's boxes ticked during the task (a tick made inside
// a task does not mark a task done), and ignored content that was only
// listed (a wholly ignored directory, a file over a limit) removed.
func (v *Verdict) keptConcerns(prev, cur boundary.Snapshot) {
	for _, r := range v.Paths {
		if r.Status == boundary.StatusPlan && r.Outcome == Changed {
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernPlanTicked, Path: r.Path, Message: fmt.Sprintf(
				"boxes in the plan (%s) were ticked or unticked during the task: a tick made inside a task does not mark a task done", r.Path)})
		}
	}
	if len(cur.RulesChanged) > 0 && !slices.Equal(prev.RulesChanged, cur.RulesChanged) {
		v.Concerns = append(v.Concerns, Concern{Kind: ConcernIgnoreRules, Message: fmt.Sprintf(
			"the ignore rules changed during the task (%s): implloop goes on deciding what is ignored with the rules the run started with, so nothing the new rules hide leaves its sight",
			strings.Join(cur.RulesChanged, "; "))})
	}
	pi, ci := prev.Ignored, cur.Ignored
	if pi == nil || ci == nil {
		return
	}
	for _, d := range pi.Dirs {
		if !slices.Contains(ci.Dirs, d) {
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernIgnoredRemoved, Path: d, Message: fmt.Sprintf(
				"%s/ (ignored) was removed: implloop lists a wholly ignored directory, it does not keep its content", d)})
		}
	}
	for _, s := range pi.Skipped {
		if _, kept := ci.File(s); !kept && !slices.Contains(ci.Skipped, s) {
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernIgnoredRemoved, Path: s, Message: fmt.Sprintf(
				"%s (ignored) was removed: it was over the limits of what implloop keeps, so its content cannot be restored", s)})
		}
	}
}

// nested applies the rules inside each submodule or nested repository
// that had uncommitted work at the earlier boundary (boundary.Nested).
// When both boundaries committed its tree in that repository (its own
// boundaries, taken with the outer one's), what was discarded in it blocks
// like any discard, and restore writes it back from there
// (LostContent.Repo); the path results carry the repository (Nested).
// Otherwise (read-only snapshots) it is a concern naming the paths. A
// nested repository that is gone is a concern.
func (v *Verdict) nested(prev, cur boundary.Snapshot) {
	for _, pn := range prev.Nested {
		if len(pn.Paths) == 0 {
			continue
		}
		what := "nested repository "
		if pn.Submodule {
			what = "submodule "
		}
		cn, ok := cur.NestedAt(pn.Path)
		if !ok {
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernSubmodule, Path: pn.Path, Message: fmt.Sprintf(
				"%s%s: it had uncommitted work (%s) and is no longer a repository there", what, pn.Path, dirtyList(pn.Snapshot, pn.PathNames()))})
			continue
		}
		nv := Compare(pn.Snapshot, cn.Snapshot)
		kept := pn.Commit != "" && cn.Commit != ""
		if len(nv.Lost) > 0 && kept {
			for _, r := range nv.Paths {
				if r.Outcome != Discarded {
					continue
				}
				r.Path, r.Nested = pn.Path+"/"+r.Path, below(pn.Path, r.Nested)
				v.Paths = append(v.Paths, r)
				v.Discarded++
			}
			for _, l := range nv.Lost {
				l.Path, l.Repo = pn.Path+"/"+l.Path, below(pn.Path, l.Repo)
				v.Lost = append(v.Lost, l)
			}
			sort.SliceStable(v.Paths, func(i, j int) bool { return v.Paths[i].Path < v.Paths[j].Path })
		} else if len(nv.Lost) > 0 {
			lost := make([]string, len(nv.Lost))
			for i, l := range nv.Lost {
				lost[i] = l.Path
			}
			v.Concerns = append(v.Concerns, Concern{Kind: ConcernSubmodule, Path: pn.Path, Message: fmt.Sprintf(
				"%s%s: uncommitted work in it was discarded: %s (its boundaries were not committed there: restore cannot bring them back)",
				what, pn.Path, dirtyList(pn.Snapshot, lost))})
		}
		for _, c := range nv.Concerns {
			if c.Kind == ConcernSubmodule {
				// One level down: its path is relative to this one.
				c.Message = strings.Replace(c.Message, " "+c.Path+": ", " "+pn.Path+"/"+c.Path+": ", 1)
				c.Path = pn.Path + "/" + c.Path
				v.Concerns = append(v.Concerns, c)
			}
		}
	}
}

// dirtyList names paths of s's dirty set with their status there:
// "lib.txt (modified), new.txt (untracked)".
func dirtyList(s boundary.Snapshot, paths []string) string {
	parts := make([]string, len(paths))
	for i, p := range paths {
		parts[i] = p
		if e, ok := s.Lookup(p); ok {
			parts[i] += " (" + string(e.Status) + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// headConcern is the concern a HEAD move with nothing lost raises.
func headConcern(prev, cur boundary.Snapshot, hc *boundary.HeadChange, paths []PathResult) Concern {
	switch {
	case hc != nil && hc.ReachableFrom != "":
		to := "detached HEAD at " + short(cur.Head)
		if cur.Branch != "" {
			to = "branch " + cur.Branch
		}
		return Concern{Kind: ConcernBranchSwitch, Message: fmt.Sprintf(
			"HEAD switched to %s: the earlier HEAD %s is still on %s, so no commit was lost (implloop never commits)",
			to, short(prev.Head), hc.ReachableFrom)}
	case hc != nil && hc.Rewritten:
		msg := fmt.Sprintf("HEAD rewritten: %s is no longer an ancestor of %s; its content is kept", short(prev.Head), short(cur.Head))
		changed := 0
		for _, r := range paths {
			if r.InCommit != "" && r.Outcome != Committed && r.Outcome != Moved {
				changed++
			}
		}
		if changed > 0 {
			msg = fmt.Sprintf("HEAD rewritten: %s is no longer an ancestor of %s; %d of its paths changed further",
				short(prev.Head), short(cur.Head), changed)
		}
		if hc.Pinned != "" {
			msg += " (the old commit is kept at " + hc.Pinned + ")"
		}
		return Concern{Kind: ConcernHeadRewritten, Message: msg}
	}
	msg := fmt.Sprintf("HEAD moved %s -> %s (implloop never commits)", short(prev.Head), short(cur.Head))
	if hc != nil && hc.Unknown != "" {
		msg += "; whether commits were dropped is unknown: " + hc.Unknown
	}
	return Concern{Kind: ConcernHeadMoved, Message: msg}
}

// dropped judges what a rewrite of HEAD took away (hc.Dropped: the paths
// the dropped commits changed whose content HEAD no longer holds). A path
// dirty at the earlier boundary already has a result: it is discarded too
// when it holds the fork point's content now and its work is nowhere else.
// For any other path, its content in the dropped commit is kept when the
// path holds it now or another path does (moved), and lost when the path
// went back to the fork point's content: the rewrite undid it.
func (l *locator) dropped(paths []PathResult, hc *boundary.HeadChange) []PathResult {
	at := make(map[string]int, len(paths))
	for i, r := range paths {
		at[r.Path] = i
	}
	for _, d := range hc.Dropped {
		if i, ok := at[d.Path]; ok {
			r := &paths[i]
			if r.Outcome == Changed && r.Now.Same(d.Fork) {
				if _, found := l.elsewhere(r.Path, r.Was); !found {
					r.Outcome, r.RevertedTo = Discarded, "fork"
				}
			}
			continue
		}
		r := PathResult{Path: d.Path, Was: d.Prev, Base: d.Fork, InCommit: hc.Prev}
		now, dirty, known := l.cur.Content(d.Path)
		r.Now, r.Clean = now, !dirty
		switch {
		case !known || (now.Present() && !now.Known()):
			r.Outcome = Unverified
		case now.Same(d.Prev) && dirty:
			r.Outcome = Untouched // git reset --soft or --mixed: kept in the worktree
		case now.Same(d.Prev):
			r.Outcome = Committed
		case now.Same(d.Fork):
			r.Outcome, r.RevertedTo = Discarded, "fork"
			if to, ok := l.elsewhere(d.Path, d.Prev); ok {
				r.Outcome, r.RevertedTo, r.MovedTo = Moved, "", to
			}
		default:
			r.Outcome = Changed
		}
		paths = append(paths, r)
	}
	sort.SliceStable(paths, func(i, j int) bool { return paths[i].Path < paths[j].Path })
	return paths
}

// locator answers where content is at the later boundary.
type locator struct {
	prev, cur boundary.Snapshot
	byHash    map[string][]located // built on first use
}

type located struct {
	path string
	blob boundary.Blob
}

// content is the earlier-dirty path p's content at the later boundary.
func (l *locator) content(p boundary.Entry) (now boundary.Blob, dirty, known bool) {
	now, dirty, known = l.cur.Content(p.Path)
	if !known && !dirty && l.prev.Head != "" && l.prev.Head == l.cur.Head {
		// Clean now under the same HEAD: its content is that HEAD's,
		// which the earlier boundary recorded as h.
		now, known = p.Head, true
	}
	return now, dirty, known
}

// elsewhere reports a path other than path that holds w at the later
// boundary: a dirty path's worktree content, a tracked path's HEAD content,
// or an earlier-dirty path's inferred content (clean under the same HEAD).
// Equality is Blob.Same: id and mode. Paths clean at the later boundary
// and neither tracked nor earlier-dirty are not seen (Compare reads no
// HEAD tree).
func (l *locator) elsewhere(path string, w boundary.Blob) (string, bool) {
	if !w.Present() || !w.Known() {
		return "", false
	}
	if l.byHash == nil {
		l.byHash = map[string][]located{}
		add := func(p string, b boundary.Blob) {
			if b.Present() && b.Known() {
				l.byHash[b.Hash] = append(l.byHash[b.Hash], located{p, b})
			}
		}
		for _, e := range l.cur.Paths {
			add(e.Path, e.Worktree)
		}
		tracked := make([]string, 0, len(l.cur.Tracked))
		for p := range l.cur.Tracked {
			tracked = append(tracked, p)
		}
		sort.Strings(tracked)
		for _, p := range tracked {
			add(p, l.cur.Tracked[p])
		}
		for _, e := range l.prev.Paths {
			if _, in := l.cur.Tracked[e.Path]; in {
				continue
			}
			if b, dirty, known := l.content(e); known && !dirty {
				add(e.Path, b)
			}
		}
	}
	for _, c := range l.byHash[w.Hash] {
		if c.path != path && c.blob.Same(w) {
			return c.path, true
		}
	}
	return "", false
}

// sameState reports whether HEAD and every dirty path's content are exactly
// as they were, inside nested repositories too.
func sameState(prev, cur boundary.Snapshot) bool {
	if prev.Head != cur.Head || len(prev.Paths) != len(cur.Paths) {
		return false
	}
	for _, pn := range prev.Nested {
		if cn, ok := cur.NestedAt(pn.Path); !ok && len(pn.Paths) > 0 || ok && !sameState(pn.Snapshot, cn.Snapshot) {
			return false
		}
	}
	for _, cn := range cur.Nested {
		if _, ok := prev.NestedAt(cn.Path); !ok && len(cn.Paths) > 0 {
			return false
		}
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
			parts = append(parts, words.Count(n, "path")+" "+what)
		}
	}
	add(v.Discarded, "discarded")
	add(v.Moved, "moved")
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
	case v.HeadRewritten:
		head = fmt.Sprintf("HEAD rewritten %s -> %s", short(v.PrevHead), short(v.CurHead))
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
	return words.ShortCommit(h)
}

// MarshalJSON writes the result with its paths' base64 twins when they
// are not valid UTF-8 (see internal/bytepath).
func (r PathResult) MarshalJSON() ([]byte, error) {
	type plain PathResult
	b, err := json.Marshal(plain(r))
	return bytepath.AppendTwins(b, err, r.paths()...)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *PathResult) UnmarshalJSON(data []byte) error {
	type plain PathResult
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*r = PathResult(p)
	return bytepath.ReadTwins(data, r.paths()...)
}

func (r *PathResult) paths() []bytepath.Field {
	return []bytepath.Field{{Name: "path", Path: &r.Path}, {Name: "moved_to", Path: &r.MovedTo}, {Name: "moved_from", Path: &r.MovedFrom}}
}

// below is nested repository inner ("" its top) of the repository at dir,
// named from the one that holds dir.
func below(dir, inner string) string {
	if inner == "" {
		return dir
	}
	return dir + "/" + inner
}
