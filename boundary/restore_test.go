package boundary

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lostFrom builds the restore input for path the way the guard does: the
// earlier boundary's worktree content and HEAD base.
func lostFrom(t *testing.T, s Snapshot, path string) LostContent {
	t.Helper()
	e := entry(t, s, path)
	return LostContent{Path: path, Lost: e.Worktree, Base: e.Head}
}

// TestBoundaryCommitSurvivesGC: a boundary is a commit of the whole work
// tree on refs/implloop/runs/<run>, chained to the previous boundary and to
// HEAD, so nothing it holds can be collected: not uncommitted work, not a
// commit a reset threw away.
func TestBoundaryCommitSurvivesGC(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "base\n")
	r.commitAll("init")
	big := strings.Repeat("a line of uncommitted work\n", 50000)
	r.write("a.txt", big)
	r.write("dir/new file.txt", "new\n")
	r.write("dir/sub/deep.bin", "\x00\x01binary")
	os.Symlink("a.txt", filepath.Join(r.dir, "link"))
	r.write("staged.txt", "staged only\n")
	r.git("add", "staged.txt")
	s1 := r.take(WithRun("r-1"), WithLabel("before task 1"))
	if s1.Ref != "refs/implloop/runs/r-1" || s1.Commit == "" {
		t.Fatalf("boundary %+v", s1)
	}
	head := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	r.write("dir/new file.txt", "newer\n")
	r.write("c2.txt", "committed, then reset away\n")
	r.commitAll("c2")
	dropped := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	s2 := r.take(WithRun("r-1"), WithPrev(s1), WithLabel("after task 1"))
	if got := r.git("rev-parse", s2.Commit+"^1", s2.Commit+"^2"); got != s1.Commit+"\n"+dropped+"\n" {
		t.Errorf("boundary 2's parents %q, want boundary 1 %s and HEAD %s", got, s1.Commit, dropped)
	}
	if got := r.git("rev-parse", s1.Commit+"^@"); got != head+"\n" {
		t.Errorf("boundary 1's parents %q, want HEAD %s", got, head)
	}
	if got := strings.TrimSpace(r.git("rev-parse", "refs/implloop/runs/r-1")); got != s2.Commit {
		t.Errorf("ref at %s, want %s", got, s2.Commit)
	}
	msg := r.git("log", "-1", "--format=%B", RunRef("r-1"))
	if !strings.Contains(msg, "after task 1") || !strings.Contains(msg, "Implloop-Run: r-1") || !strings.Contains(msg, "Implloop-Head: "+dropped) {
		t.Errorf("message %q", msg)
	}
	// Throw the work and a commit away, and collect garbage hard.
	r.git("reset", "-q", "--hard", "HEAD~1")
	r.git("clean", "-q", "-fdx")
	r.git("-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "reflog", "expire", "--all")
	r.git("gc", "-q", "--prune=now")
	r.git("fsck", "--no-dangling", "--strict")
	for path, want := range map[string]string{"a.txt": big, "dir/sub/deep.bin": "\x00\x01binary", "link": "a.txt", "staged.txt": "staged only\n"} {
		if got := r.git("cat-file", "blob", s1.Commit+":"+path); got != want {
			t.Errorf("%s after gc: %d bytes, want %d", path, len(got), len(want))
		}
	}
	if got := r.git("cat-file", "blob", s1.Tree+":dir/new file.txt"); got != "new\n" {
		t.Errorf("boundary 1 new file: %q", got)
	}
	if got := r.git("cat-file", "blob", dropped+":c2.txt"); got != "committed, then reset away\n" {
		t.Errorf("the dropped commit after gc: %q", got)
	}
	if got := r.git("ls-tree", s1.Commit, "link"); !strings.HasPrefix(got, "120000") {
		t.Errorf("link mode: %q", got)
	}
	// And restore brings it back byte for byte.
	lost := []LostContent{lostFrom(t, s1, "a.txt"), lostFrom(t, s1, "dir/sub/deep.bin"), lostFrom(t, s1, "link")}
	res, err := Restore(context.Background(), r.dir, lost, false)
	if err != nil {
		t.Fatalf("%v %+v", err, res)
	}
	if r.read("a.txt") != big || r.read("dir/sub/deep.bin") != "\x00\x01binary" {
		t.Error("restored content differs")
	}
	if target, _ := os.Readlink(filepath.Join(r.dir, "link")); target != "a.txt" {
		t.Errorf("link -> %q", target)
	}
}

func TestRunID(t *testing.T) {
	r := newTestRepo(t)
	for _, bad := range []string{"a/b", "..", "x.lock", "-x", "a b", "a..b", ".hidden"} {
		if _, err := Take(context.Background(), r.dir, WithRun(bad)); err == nil {
			t.Errorf("run %q accepted", bad)
		}
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRepo(t)
	r.write("keep.txt", "base\n")
	r.write("gone.txt", "to delete\n")
	r.writeMode("tool.sh", "#!/bin/sh\n", 0o644)
	r.commitAll("init")
	work := "work in progress\r\nwith CRLF and \x00 binary\n"
	r.write("keep.txt", work)
	r.write("deep/new/file.txt", "brand new\n")
	r.remove("gone.txt")
	os.Chmod(filepath.Join(r.dir, "tool.sh"), 0o755)
	prev := r.take(WithRun("rt"))

	// The task reverts everything.
	r.git("checkout", "--", ".")
	r.remove("deep")
	lost := []LostContent{lostFrom(t, prev, "keep.txt"), lostFrom(t, prev, "deep/new/file.txt"), lostFrom(t, prev, "gone.txt"), lostFrom(t, prev, "tool.sh")}
	res, err := Restore(ctx, r.dir, lost, false)
	if err != nil {
		t.Fatalf("%v %+v", err, res)
	}
	want := []RestoreAction{RestoreWritten, RestoreWritten, RestoreRemoved, RestoreWritten}
	for i, x := range res {
		if x.Action != want[i] {
			t.Errorf("%s: %s, want %s (%s)", x.Path, x.Action, want[i], x.Reason)
		}
	}
	if r.read("keep.txt") != work || r.read("deep/new/file.txt") != "brand new\n" {
		t.Error("content not byte-exact")
	}
	if _, err := os.Lstat(filepath.Join(r.dir, "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("gone.txt is back")
	}
	if fi, _ := os.Stat(filepath.Join(r.dir, "tool.sh")); fi.Mode().Perm()&0o100 == 0 {
		t.Error("tool.sh lost its executable bit again")
	}
	now := r.take()
	for _, l := range lost {
		if c, _, _ := now.Content(l.Path); !c.Same(l.Lost) {
			t.Errorf("%s: %+v, want %+v", l.Path, c, l.Lost)
		}
	}
	// Restoring again is a no-op.
	res, err = Restore(ctx, r.dir, lost, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res {
		if x.Action != RestoreUnchanged {
			t.Errorf("second restore %s: %s", x.Path, x.Action)
		}
	}

	// Content that is neither the lost work nor its base is refused...
	r.write("keep.txt", "someone else's newer work\n")
	res, err = Restore(ctx, r.dir, lost[:1], false)
	if !errors.Is(err, ErrRefused) || res[0].Action != RestoreRefused {
		t.Fatalf("conflicting content: %v %+v", err, res)
	}
	if r.read("keep.txt") != "someone else's newer work\n" {
		t.Error("refused restore changed the file")
	}
	// ...unless forced.
	if _, err := Restore(ctx, r.dir, lost[:1], true); err != nil {
		t.Fatal(err)
	}
	if r.read("keep.txt") != work {
		t.Error("forced restore did not write the lost content")
	}
}

func TestRestoreAutocrlfAndSafety(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRepo(t)
	r.git("config", "core.autocrlf", "true")
	r.write("t.txt", "base\r\n")
	r.commitAll("init")
	r.write("t.txt", "work\r\nmore\r\n")
	prev := r.take(WithRun("crlf"))
	r.git("checkout", "--", "t.txt") // writes "base\r\n" back
	l := lostFrom(t, prev, "t.txt")
	// The worktree holds the base in its CRLF form: git's view says base,
	// so restoring is safe.
	if _, err := Restore(ctx, r.dir, []LostContent{l}, false); err != nil {
		t.Fatal(err)
	}
	if got := r.read("t.txt"); got != "work\r\nmore\r\n" {
		t.Errorf("restored %q", got)
	}
	// Paths that escape the worktree are refused outright.
	for _, bad := range []string{"../x", "/etc/passwd", ".git/config", "a/../../b", ""} {
		res, err := Restore(ctx, r.dir, []LostContent{{Path: bad, Lost: l.Lost}}, true)
		if err == nil || res[0].Action != RestoreFailed {
			t.Errorf("%q: %v %+v", bad, err, res)
		}
	}
	// A symlinked parent is never written through.
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(r.dir, "escape"))
	res, _ := Restore(ctx, r.dir, []LostContent{{Path: "escape/f", Lost: l.Lost}}, true)
	if res[0].Action != RestoreFailed {
		t.Errorf("through a symlink: %+v", res)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Error("restore wrote outside the worktree")
	}
}

// TestRestoreFromIndexRevert: unstaged work on top of staged work, thrown
// away by `git checkout -- path` (which restores from the index). The guard
// sets the base to the index content, so Restore overwrites the reverted
// file without force and brings the unstaged bytes back; a path that moved
// on to something else (here HEAD's content) is refused without force.
func TestRestoreFromIndexRevert(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a base\n")
	r.commitAll("init")
	r.write("keep.txt", "v1\n")
	r.write("a.txt", "a staged\n")
	r.git("add", "keep.txt", "a.txt")
	r.write("keep.txt", "v2 more work\n")
	r.write("a.txt", "a staged and more\n")
	s1 := r.take(WithRun("idx"))
	fromIndex := func(path string) LostContent {
		l := lostFrom(t, s1, path)
		l.Base = entry(t, s1, path).Index
		return l
	}
	lost := []LostContent{fromIndex("keep.txt"), fromIndex("a.txt")}
	r.git("checkout", "--", "keep.txt")
	r.git("checkout", "HEAD", "--", "a.txt") // reverted past the index: not the base
	if r.read("keep.txt") != "v1\n" || r.read("a.txt") != "a base\n" {
		t.Fatal("setup")
	}
	res, err := Restore(context.Background(), r.dir, lost, false)
	if !errors.Is(err, ErrRefused) || len(res) != 2 || res[0].Action != RestoreWritten || res[1].Action != RestoreRefused {
		t.Fatalf("%v %+v", err, res)
	}
	if got := r.read("keep.txt"); got != "v2 more work\n" {
		t.Errorf("keep.txt %q", got)
	}
	if got := r.git("show", ":keep.txt"); got != "v1\n" {
		t.Errorf("index changed: %q", got)
	}
	if got := r.read("a.txt"); got != "a base\n" {
		t.Errorf("refused path written: %q", got)
	}
	// Again: keep.txt is unchanged now; force takes a.txt.
	res, err = Restore(context.Background(), r.dir, lost, true)
	if err != nil || res[0].Action != RestoreUnchanged || res[1].Action != RestoreWritten {
		t.Fatalf("%v %+v", err, res)
	}
	if got := r.read("a.txt"); got != "a staged and more\n" {
		t.Errorf("a.txt %q", got)
	}
}
