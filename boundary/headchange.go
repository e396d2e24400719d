package boundary

import (
	"strings"
)

// HeadChange is what Take found out about a HEAD move, given the previous
// boundary's HEAD (WithPrevHead). It is set only when HEAD moved.
type HeadChange struct {
	// Prev is the previous boundary's HEAD.
	Prev string `json:"prev"`
	// Ancestor: Prev is an ancestor of the current HEAD (new commits on
	// top, a fast-forward): nothing committed was taken away.
	Ancestor bool `json:"ancestor,omitempty"`
	// ReachableFrom names a branch, tag or remote-tracking branch that
	// still contains Prev when it is not an ancestor of the current HEAD
	// (a branch switch): its commits are not lost.
	ReachableFrom string `json:"reachable_from,omitempty"`
	// Rewritten: Prev is neither an ancestor of HEAD nor reachable from a
	// ref (reset to an older commit, amend, rebase, a deleted branch).
	Rewritten bool `json:"rewritten,omitempty"`
	// ForkPoint is the merge base of Prev and HEAD ("" when they share no
	// history), set when Rewritten.
	ForkPoint string `json:"fork_point,omitempty"`
	// Dropped lists, when Rewritten, every path the dropped commits
	// changed (ForkPoint..Prev) whose content at Prev differs from HEAD's:
	// the content the rewrite may have taken away.
	Dropped []DroppedPath `json:"dropped,omitempty"`
	// Pinned is the ref that keeps Prev from gc: the run's ref (WithRun),
	// whose previous boundary commit has Prev as a parent.
	Pinned string `json:"pinned,omitempty"`
	// Unknown says why the facts above could not be read (a missing
	// object, git failing); the guard then only reports the move.
	Unknown string `json:"unknown,omitempty"`
}

// DroppedPath is one path a rewrite of HEAD changed back.
type DroppedPath struct {
	Path string `json:"path"`
	// Prev is the path's content in the dropped commit (the previous HEAD).
	Prev Blob `json:"prev"`
	// Fork is its content at the fork point: what the dropped commits
	// started from.
	Fork Blob `json:"fork"`
}

// headChange fills in snap.HeadChange and returns the paths to track (with
// their content at HEAD, from the tree diff).
func (t *taker) headChange(snap *Snapshot) map[string]Blob {
	prev, cur := t.o.prev.Head, snap.Head
	hc := &HeadChange{Prev: prev}
	snap.HeadChange = hc
	empty := t.g.emptyTree()
	curTree := cur
	if cur == "" {
		curTree = empty
	}
	switch {
	case prev == "":
		hc.Ancestor = true // the first commit: nothing before it
	case cur == "":
		// HEAD unborn now (an orphan branch, a deleted ref).
	default:
		ok, err := t.isAncestor(prev, cur)
		if err != nil {
			hc.Unknown = err.Error()
			return nil
		}
		hc.Ancestor = ok
	}
	from := prev
	if from == "" {
		from = empty
	}
	// The paths the move changed, with their content at HEAD now: tracked,
	// so that work committed at a new path is found there (moved).
	diff, err := t.diffTree(from, curTree)
	if err != nil {
		hc.Unknown = err.Error()
		return nil
	}
	track := make(map[string]Blob, len(diff))
	for _, d := range diff {
		track[d.path] = d.b
	}
	if hc.Ancestor {
		return track
	}
	ref, err := t.containedIn(prev)
	if err != nil {
		hc.Unknown = err.Error()
		return track
	}
	if ref != "" {
		hc.ReachableFrom = ref
		return track
	}
	hc.Rewritten = true
	if cur != "" {
		mb, err := t.mergeBase(prev, cur)
		if err != nil {
			hc.Unknown = err.Error()
			return track
		}
		hc.ForkPoint = mb
	}
	fork := hc.ForkPoint
	if fork == "" {
		fork = empty
	}
	dropped, err := t.diffTree(fork, prev)
	if err != nil {
		hc.Unknown = err.Error()
		return track
	}
	for _, d := range dropped {
		if now, ok := track[d.path]; !ok || now.Same(d.b) {
			continue // HEAD still holds the dropped commit's content
		}
		hc.Dropped = append(hc.Dropped, DroppedPath{Path: d.path, Prev: d.b, Fork: d.a})
	}
	if t.o.run != "" && t.o.prev.Commit != "" {
		hc.Pinned = RunRef(t.o.run)
	}
	return track
}

func (t *taker) isAncestor(a, b string) (bool, error) {
	_, err := t.gitOut("merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

func (t *taker) mergeBase(a, b string) (string, error) {
	out, err := t.gitOut("merge-base", a, b)
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil // no common history
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// containedIn returns a branch, tag or remote-tracking branch containing
// commit, "" when none does.
func (t *taker) containedIn(commit string) (string, error) {
	out, err := t.gitOut("for-each-ref", "--count=1", "--contains="+commit,
		"--format=%(refname:short)", "refs/heads/", "refs/tags/", "refs/remotes/")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// gitOut runs git in the work tree and returns its stdout.
func (t *taker) gitOut(args ...string) ([]byte, error) {
	out, _, err := t.g.run(t.readEnv, nil, args...)
	return out, err
}

type treeDiff struct {
	path string
	a, b Blob // content in the first and the second tree
}

// diffTree lists the paths whose content differs between two tree-ishes,
// recursively, renames not detected, implloop's own files left out.
func (t *taker) diffTree(a, b string) ([]treeDiff, error) {
	changes, err := t.g.diffTree(t.readEnv, a, b, false)
	if err != nil {
		return nil, err
	}
	var res []treeDiff
	for _, c := range changes {
		if t.excluded(c.Path) {
			continue
		}
		res = append(res, treeDiff{path: c.Path, a: c.Before, b: c.After})
	}
	return res, nil
}
