package boundary

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// DroppedRefPrefix is where Take pins a previous HEAD commit that a task
// rewrote away (reset, amend, rebase) and that no branch or tag still holds:
// refs/implloop/dropped/<run>/<seq>.
const DroppedRefPrefix = "refs/implloop/dropped/"

// DroppedRef returns the ref pinning the commit dropped before boundary seq
// of run.
func DroppedRef(run string, seq int) string {
	return DroppedRefPrefix + run + "/" + strconv.Itoa(seq)
}

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
	// Pinned is the ref Take wrote to keep Prev from gc (with WithSalvage).
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

// WithPrevHead gives Take the previous boundary's HEAD. When HEAD has moved
// since, Take records what the move did (Snapshot.HeadChange), tracks the
// paths the move changed (as WithTrack does), and, when the previous HEAD
// was rewritten away, lists what the dropped commits held and, with
// WithSalvage, pins the previous HEAD under DroppedRef. When HEAD did not
// move, it costs nothing.
func WithPrevHead(prev string) Option {
	return func(o *options) { o.prevHead, o.prevGiven = prev, true }
}

// headChange fills in snap.HeadChange and returns the paths to track (with
// their content at HEAD, from the tree diff).
func (t *taker) headChange(snap *Snapshot, o *options) map[string]Blob {
	prev, cur := o.prevHead, snap.Head
	hc := &HeadChange{Prev: prev}
	snap.HeadChange = hc
	empty := t.emptyTree()
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
	if o.salvageWant {
		name := DroppedRef(o.salvageRun, o.salvageSeq)
		if err := t.pin(name, prev); err != nil {
			t.problems = append(t.problems, fmt.Sprintf("pinning %s at %s: %v", prev, name, err))
		} else {
			hc.Pinned = name
		}
	}
	return track
}

// emptyTree is the id of the empty tree in this repository's hash.
func (t *taker) emptyTree() string {
	h := t.newHash()
	h.Write([]byte("tree 0\x00"))
	return fmt.Sprintf("%x", h.Sum(nil))
}

func (t *taker) isAncestor(a, b string) (bool, error) {
	_, err := runGit(t.ctx, t.gitPath, t.root, nil, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return false, nil
	}
	return false, err
}

func (t *taker) mergeBase(a, b string) (string, error) {
	out, err := runGit(t.ctx, t.gitPath, t.root, nil, "merge-base", a, b)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return "", nil // no common history
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// containedIn returns a branch, tag or remote-tracking branch containing
// commit, "" when none does.
func (t *taker) containedIn(commit string) (string, error) {
	out, err := runGit(t.ctx, t.gitPath, t.root, nil, "for-each-ref", "--count=1", "--contains="+commit,
		"--format=%(refname:short)", "refs/heads/", "refs/tags/", "refs/remotes/")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

type treeDiff struct {
	path string
	a, b Blob // content in the first and the second tree
}

// diffTree lists the paths whose content differs between two tree-ishes,
// recursively, renames not detected.
func (t *taker) diffTree(a, b string) ([]treeDiff, error) {
	out, err := runGit(t.ctx, t.gitPath, t.root, nil, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--no-ext-diff", a, b)
	if err != nil {
		return nil, err
	}
	var res []treeDiff
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		meta := string(fields[i])
		path := string(fields[i+1])
		// ":100644 100644 <a> <b> M"
		f := strings.Fields(strings.TrimPrefix(meta, ":"))
		if len(f) < 5 {
			return nil, fmt.Errorf("git diff-tree in %s: cannot parse %q", t.root, meta)
		}
		ma, err1 := strconv.ParseUint(f[0], 8, 32)
		mb, err2 := strconv.ParseUint(f[1], 8, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("git diff-tree in %s: cannot parse %q", t.root, meta)
		}
		d := treeDiff{path: path}
		if ma != 0 {
			d.a = Blob{Hash: f[2], Mode: Mode(ma)}
		}
		if mb != 0 {
			d.b = Blob{Hash: f[3], Mode: Mode(mb)}
		}
		if Excluded(path) {
			continue
		}
		res = append(res, d)
	}
	return res, nil
}

// pin points ref name at commit.
func (t *taker) pin(name, commit string) error {
	repo, err := t.repository()
	if err != nil {
		return err
	}
	return repo.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), plumbing.NewHash(commit)))
}
