package boundary

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReviewBoundaryHeadIsPrevBoundary: an agent resets HEAD to the
// previous boundary commit; the next boundary's parents (that boundary,
// then HEAD) are one commit twice. git commit-tree writes it once (the
// id git gives the boundary); the in-process writer must too.
func TestReviewBoundaryHeadIsPrevBoundary(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "base\n")
	r.commitAll("init")
	s1 := r.take(WithRun("r-1"), WithLabel("before task 1"))
	r.git("reset", "-q", "--hard", s1.Commit)
	s2 := r.take(WithRun("r-1"), WithPrev(s1), WithLabel("after task 1"))
	if got := strings.Fields(r.git("rev-list", "--parents", "-n", "1", s2.Commit)); len(got) != 2 || got[1] != s1.Commit {
		t.Errorf("boundary 2's parents %q, want boundary 1 %s once", got[1:], s1.Commit)
	}
	if out := r.git("fsck", "--strict", "--no-dangling", "--no-progress"); out != "" {
		t.Errorf("git fsck: %s", out)
	}
}

// TestReviewBoundaryHeadNamesATag: HEAD names an annotated tag (an agent
// writes its id into .git/HEAD; `git rev-parse HEAD` is the tag). readHead
// reads it unpeeled, and the boundary commit, written in process, named
// the tag as a parent: a commit git commit-tree refuses to write ("is not
// a valid 'commit' object"), on which `git rev-list`, `git gc` and a push
// of the run's ref then fail ("Object ... not a commit"); a tree's id in
// .git/HEAD did the same. Before gitobj such a boundary went to git
// commit-tree (outside a watcher's boundaries). The Writer now checks the
// types and leaves such a commit to git, which refuses it.
func TestReviewBoundaryHeadNamesATag(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "base\n")
	r.commitAll("init")
	r.git("tag", "-a", "-m", "t", "v1")
	tag := strings.TrimSpace(r.git("rev-parse", "v1"))
	// git update-ref refuses a tag on a branch; HEAD detached at it is
	// one write of .git/HEAD away.
	if err := os.WriteFile(filepath.Join(r.dir, ".git", "HEAD"), []byte(tag+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Take(t.Context(), r.dir, WithRun("r-1"), WithLabel("b"))
	if err != nil {
		return // refusing is fine
	}
	for _, l := range strings.Split(r.git("cat-file", "commit", s.Commit), "\n") {
		p, ok := strings.CutPrefix(l, "parent ")
		if !ok {
			continue
		}
		if typ := strings.TrimSpace(r.git("cat-file", "-t", p)); typ != "commit" {
			t.Errorf("boundary %s names a %s (%s) as a parent", s.Commit, typ, p)
		}
	}
}
