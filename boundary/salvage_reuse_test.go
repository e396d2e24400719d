package boundary

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// aged sets path's mtime an hour back: written long before the boundary,
// as after a real task, so salvage keeps its stat data.
func (r *testRepo) aged(path string) {
	r.t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(r.dir, filepath.FromSlash(path)), old, old); err != nil {
		r.t.Fatal(err)
	}
}

// looseObjects counts the loose objects in the repository.
func (r *testRepo) looseObjects() int {
	r.t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(r.dir, ".git", "objects", "[0-9a-f][0-9a-f]"))
	n := 0
	for _, d := range dirs {
		es, _ := os.ReadDir(d)
		n += len(es)
	}
	return n
}

func salvagedEntry(t *testing.T, s Snapshot, path string) Entry {
	t.Helper()
	e, ok := s.Lookup(path)
	if !ok || e.Salvaged == "" {
		t.Fatalf("%s: not salvaged in %+v", path, s.Paths)
	}
	return e
}

// TestSalvageReuse: a dirty file unchanged since the previous boundary is
// not stored again (the second boundary writes its commit only), the new
// salvage tree still lists every dirty path, and the reused blob holds the
// file's bytes. It survives the previous snapshot's trip through JSON (the
// journal, on a resume).
func TestSalvageReuse(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a/keep.txt", "base\n")
	r.write("b/change.txt", "base\n")
	r.commitAll("init")
	r.write("a/keep.txt", "kept work\n")
	r.write("b/change.txt", "first\n")
	r.write("c/new.txt", "untracked work\n")
	os.Symlink("a/keep.txt", filepath.Join(r.dir, "link"))
	for _, p := range []string{"a/keep.txt", "b/change.txt", "c/new.txt"} {
		r.aged(p)
	}
	s0 := r.take(WithSalvage("reuse", 0))
	for _, p := range []string{"a/keep.txt", "b/change.txt", "c/new.txt"} {
		if e := salvagedEntry(t, s0, p); e.SalvagedStat == (FileStat{}) {
			t.Errorf("%s: no stat data kept for an old file", p)
		}
	}
	var prev Snapshot
	js, _ := json.Marshal(s0)
	if err := json.Unmarshal(js, &prev); err != nil {
		t.Fatal(err)
	}

	before := r.looseObjects()
	s1 := r.take(WithSalvage("reuse", 1), WithPrev(prev))
	if got := r.looseObjects() - before; got != 1 {
		t.Errorf("nothing changed: %d new loose objects, want 1 (the commit)", got)
	}
	if s1.Salvage.Tree != s0.Salvage.Tree {
		t.Errorf("salvage tree %s, want %s", s1.Salvage.Tree, s0.Salvage.Tree)
	}

	r.write("b/change.txt", "second\n")
	s2 := r.take(WithSalvage("reuse", 2), WithPrev(s1))
	for p, want := range map[string]string{"a/keep.txt": "kept work\n", "b/change.txt": "second\n", "c/new.txt": "untracked work\n", "link": "a/keep.txt"} {
		e := salvagedEntry(t, s2, p)
		if got := r.git("cat-file", "blob", e.Salvaged); got != want {
			t.Errorf("%s: salvaged %q, want %q", p, got, want)
		}
		if got := r.git("cat-file", "blob", s2.Salvage.Tree+":"+p); got != want {
			t.Errorf("%s: salvage tree holds %q, want %q", p, got, want)
		}
	}
	if a, b := salvagedEntry(t, s2, "a/keep.txt"), salvagedEntry(t, s0, "a/keep.txt"); a.Salvaged != b.Salvaged || a.SalvagedStat != b.SalvagedStat {
		t.Errorf("a/keep.txt: %+v, want the first boundary's %+v", a, b)
	}
	if e := salvagedEntry(t, s2, "b/change.txt"); e.SalvagedStat != (FileStat{}) {
		t.Errorf("b/change.txt was just written: stat data %+v kept", e.SalvagedStat)
	}
}

// TestSalvageReuseAutocrlf: under core.autocrlf two different raw files
// can be the same blob to git (the worktree hash). Salvage must still give
// back the raw bytes of each: a rewrite with the same size, the same git
// blob and, adversarially, the old mtime put back is stored anew; so is one
// written too soon after the previous boundary for its stat data to count.
func TestSalvageReuseAutocrlf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRepo(t)
	r.git("config", "core.autocrlf", "true")
	r.write("t.txt", "base\n")
	r.write("u.txt", "base\n")
	r.commitAll("init")
	full := filepath.Join(r.dir, "t.txt")

	r.write("t.txt", "a\r\nb\n")
	r.write("u.txt", "a\r\nb\n")
	r.aged("t.txt")
	s0 := r.take(WithSalvage("crlf", 0))
	e0 := salvagedEntry(t, s0, "t.txt")
	fi0, _ := os.Stat(full)

	// Same size, same git blob, different bytes; mtime put back.
	r.write("t.txt", "a\nb\r\n")
	os.Chtimes(full, fi0.ModTime(), fi0.ModTime())
	// u.txt changes the same way with no stat data to go by: it was
	// written just now.
	r.write("u.txt", "x\r\ny\n")
	s1 := r.take(WithSalvage("crlf", 1), WithPrev(s0))
	r.write("u.txt", "x\ny\r\n")
	s2 := r.take(WithSalvage("crlf", 2), WithPrev(s1))
	e1 := salvagedEntry(t, s1, "t.txt")
	if e1.Worktree != e0.Worktree {
		t.Fatalf("the test needs one git blob for both: %+v vs %+v", e1.Worktree, e0.Worktree)
	}
	if runtime.GOOS == "linux" { // elsewhere stat data is size and mtime only
		if got := r.git("cat-file", "blob", e1.Salvaged); got != "a\nb\r\n" {
			t.Errorf("t.txt: salvaged %q, want the new raw bytes", got)
		}
	}
	if u1, u2 := salvagedEntry(t, s1, "u.txt"), salvagedEntry(t, s2, "u.txt"); u1.Worktree != u2.Worktree {
		t.Fatalf("the test needs one git blob for both: %+v vs %+v", u1.Worktree, u2.Worktree)
	}
	if got := r.git("cat-file", "blob", salvagedEntry(t, s2, "u.txt").Salvaged); got != "x\ny\r\n" {
		t.Errorf("u.txt: salvaged %q, want the new raw bytes", got)
	}

	// Discarded after a boundary that reused nothing it should not have:
	// Restore brings the raw bytes back.
	r.git("checkout", "--", "u.txt")
	if _, err := Restore(ctx, r.dir, []LostContent{lostFrom(t, s2, "u.txt")}, false); err != nil {
		t.Fatal(err)
	}
	if got := r.read("u.txt"); got != "x\ny\r\n" {
		t.Errorf("restored %q", got)
	}
}

// TestSalvageReuseUnchangedCRLF: an unchanged CRLF file under autocrlf is
// reused (its raw blob, not git's LF one) and restores byte for byte.
func TestSalvageReuseUnchangedCRLF(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRepo(t)
	r.git("config", "core.autocrlf", "true")
	r.write("t.txt", "base\r\n")
	r.commitAll("init")
	r.write("t.txt", "work\r\nmore\r\n")
	r.aged("t.txt")
	s0 := r.take(WithSalvage("crlf", 0))
	s1 := r.take(WithSalvage("crlf", 1), WithPrev(s0))
	e0, e1 := salvagedEntry(t, s0, "t.txt"), salvagedEntry(t, s1, "t.txt")
	if e1.Salvaged != e0.Salvaged || e1.Salvaged == e1.Worktree.Hash {
		t.Fatalf("salvaged %s, want the raw blob %s (git's is %s)", e1.Salvaged, e0.Salvaged, e1.Worktree.Hash)
	}
	r.git("checkout", "--", "t.txt")
	if _, err := Restore(ctx, r.dir, []LostContent{lostFrom(t, s1, "t.txt")}, false); err != nil {
		t.Fatal(err)
	}
	if got := r.read("t.txt"); got != "work\r\nmore\r\n" {
		t.Errorf("restored %q", got)
	}
}

// TestSalvageReuseMissingObject: a previous boundary whose blob is not in
// the object database (its salvage ref deleted and pruned) is not reused.
func TestSalvageReuseMissingObject(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("f.txt", "base\n")
	r.commitAll("init")
	r.write("f.txt", "work\n")
	r.aged("f.txt")
	s0 := r.take(WithSalvage("gone", 0))
	s0.Paths[0].Salvaged = strings.Repeat("0", 40)
	s1 := r.take(WithSalvage("gone", 1), WithPrev(s0))
	if got := r.git("cat-file", "blob", salvagedEntry(t, s1, "f.txt").Salvaged); got != "work\n" {
		t.Errorf("salvaged %q", got)
	}
}
