package gitobj

import (
	"strings"
	"testing"
	"time"
)

// TestReviewDuplicateParent: git commit-tree drops a parent named twice
// ("duplicate parent ... ignored"); the Writer must write the commit git
// writes (a boundary whose HEAD is the previous boundary, say after an
// agent's `git reset --hard` to it, names that commit twice).
func TestReviewDuplicateParent(t *testing.T) {
	r, rp := repo(t)
	w := Open(rp)
	mustInProcess(t, w)
	tree, _ := w.Tree(ctx, nil)
	p1 := gitIn(t, rp.Dir, "one\n", nil, "commit-tree", tree)
	p2 := gitIn(t, rp.Dir, "two\n", nil, "commit-tree", tree)
	when := time.Unix(1700000000, 0).UTC()
	who := Ident{"implloop", "implloop@localhost", when}
	env := []string{"GIT_AUTHOR_NAME=implloop", "GIT_AUTHOR_EMAIL=implloop@localhost", "GIT_AUTHOR_DATE=@" + stamp(when),
		"GIT_COMMITTER_NAME=implloop", "GIT_COMMITTER_EMAIL=implloop@localhost", "GIT_COMMITTER_DATE=@" + stamp(when)}
	for _, ps := range [][]string{{p1, p1}, {p1, p2, p1}, {p2, p1, p2, p2}} {
		got, err := w.Commit(ctx, Commit{Tree: tree, Parents: ps, Author: who, Committer: who, Message: "m\n"})
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"commit-tree", tree}
		for _, p := range ps {
			args = append(args, "-p", p)
		}
		if want := gitIn(t, rp.Dir, "m\n", env, args...); got != want {
			t.Errorf("parents %v: %s, git commit-tree says %s\n%s", ps, got, want, gitIn(t, rp.Dir, "", nil, "cat-file", "commit", got))
		}
	}
	fsck(t, r)
}

// TestReviewParentAndTreeTypes: git commit-tree peels a parent that is an
// annotated tag to its commit and refuses a parent that is not a commit
// (or a tree that is not a tree); the Writer checks only that the object
// exists, so it writes a commit git would never write: a tag's id as a
// parent, or a tree as a parent. boundary's readHead reads HEAD's id
// from the files (unpeeled), so a branch an agent points at a tag object
// or a tree (`git update-ref refs/heads/main <tag>`) reaches the Writer.
func TestReviewParentAndTreeTypes(t *testing.T) {
	t.Skip("bug: Writer.Commit does not check (or peel) the types of its tree and parents as git commit-tree does")
	r, rp := repo(t)
	r.Write("f", "f\n")
	head := r.Commit("first")
	r.Git("tag", "-a", "-m", "t", "v1")
	tag := strings.TrimSpace(gitIn(t, rp.Dir, "", nil, "rev-parse", "v1"))
	w := Open(rp)
	mustInProcess(t, w)
	tree := gitIn(t, rp.Dir, "", nil, "rev-parse", "HEAD^{tree}")
	when := time.Unix(1700000000, 0).UTC()
	who := Ident{"implloop", "implloop@localhost", when}
	env := []string{"GIT_AUTHOR_NAME=implloop", "GIT_AUTHOR_EMAIL=implloop@localhost", "GIT_AUTHOR_DATE=@" + stamp(when),
		"GIT_COMMITTER_NAME=implloop", "GIT_COMMITTER_EMAIL=implloop@localhost", "GIT_COMMITTER_DATE=@" + stamp(when)}
	// A tag as a parent: git writes its commit.
	got, err := w.Commit(ctx, Commit{Tree: tree, Parents: []string{tag}, Author: who, Committer: who, Message: "m\n"})
	if err != nil {
		t.Fatal(err)
	}
	if want := gitIn(t, rp.Dir, "m\n", env, "commit-tree", tree, "-p", tag); got != want {
		t.Errorf("a tag as a parent: %s, git commit-tree says %s", got, want)
	}
	// A tree as a parent, a commit as the tree: git refuses.
	for _, bad := range []Commit{
		{Tree: tree, Parents: []string{tree}, Author: who, Committer: who, Message: "m\n"},
		{Tree: head, Author: who, Committer: who, Message: "m\n"},
	} {
		if id, err := w.Commit(ctx, bad); err == nil {
			t.Errorf("%+v: wrote %s, git commit-tree refuses", bad, id)
		}
	}
}
