package gitobj

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestReviewParentAndTreeTypes: git commit-tree refuses a parent that
// is not a commit (an annotated tag's id too: "is not a valid 'commit'
// object") and a tree that is not a tree; the Writer checked only that
// the object exists, and wrote a commit git never writes, whose parent
// is a tag or a tree (`git rev-list` and `git gc` then fail on it).
// boundary's readHead reads HEAD's id from the files, unpeeled, so an
// agent that writes a tag's or a tree's id into .git/HEAD reached it
// (boundary's TestReviewBoundaryHeadNamesATag).
func TestReviewParentAndTreeTypes(t *testing.T) {
	r, rp := repo(t)
	r.Write("f", "f\n")
	head := r.Commit("first")
	r.Git("tag", "-a", "-m", "t", "v1")
	tag := strings.TrimSpace(gitIn(t, rp.Dir, "", nil, "rev-parse", "v1"))
	tree := gitIn(t, rp.Dir, "", nil, "rev-parse", "HEAD^{tree}")
	blob := gitIn(t, rp.Dir, "", nil, "rev-parse", "HEAD:f")
	when := time.Unix(1700000000, 0).UTC()
	who := Ident{"implloop", "implloop@localhost", when}
	check := func(w *Writer, msg string) {
		t.Helper()
		mustInProcess(t, w)
		for _, bad := range []Commit{
			{Tree: tree, Parents: []string{tag}, Author: who, Committer: who, Message: "m\n"},
			{Tree: tree, Parents: []string{tree}, Author: who, Committer: who, Message: "m\n"},
			{Tree: tree, Parents: []string{head, blob}, Author: who, Committer: who, Message: "m\n"},
			{Tree: head, Author: who, Committer: who, Message: "m\n"},
			{Tree: blob, Author: who, Committer: who, Message: "m\n"},
		} {
			if id, err := w.Commit(ctx, bad); err == nil {
				t.Errorf("%+v: wrote %s, git commit-tree refuses", bad, id)
			}
		}
		// The right types, loose or packed: in process.
		c := Commit{Tree: tree, Parents: []string{head}, Author: who, Committer: who, Message: msg}
		id, err := w.Commit(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(rp.CommonDir, "objects", id[:2], id[2:])); err != nil {
			t.Fatal("not written in process:", err)
		}
	}
	check(Open(rp), "loose\n")
	r.Git("gc", "-q")
	if _, err := os.Stat(filepath.Join(rp.CommonDir, "objects", head[:2], head[2:])); err == nil {
		t.Fatal("still loose")
	}
	check(Open(rp), "packed\n")
	fsck(t, r)
}

// TestReviewPackedTypes: typeOf reads the type of every object of a pack
// as git does, deltified ones through their bases ("?" only where it
// cannot: then git is asked).
func TestReviewPackedTypes(t *testing.T) {
	r, rp := repo(t)
	for i := range 30 {
		r.Write("f", strings.Repeat(fmt.Sprintf("line %d of many\n", i%7), 200+i))
		r.Write(fmt.Sprintf("d/g%d", i%5), strings.Repeat("x", 100+i))
		r.Commit(fmt.Sprint("c", i))
	}
	r.Git("gc", "-q", "--aggressive")
	out := gitIn(t, rp.Dir, "", nil, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(deltabase)")
	deltas := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if f[2] != strings.Repeat("0", 40) {
			deltas++
		}
		if got := typeOf(filepath.Join(rp.CommonDir, "objects"), SHA1, f[0]); got != f[1] {
			t.Errorf("%s: %s, git says %s (delta base %s)", f[0], got, f[1], f[2])
		}
	}
	if deltas == 0 {
		t.Fatal("no deltified object to read")
	}
}
