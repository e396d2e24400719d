package boundary

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// entry returns the snapshot's entry for path or fails.
func entry(t *testing.T, s Snapshot, path string) Entry {
	t.Helper()
	e, ok := s.Lookup(path)
	if !ok {
		t.Fatalf("%q not in snapshot; paths: %v", path, s.PathNames())
	}
	return e
}

func TestTakeUnborn(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.write("dir/b.txt", "b\n")
	r.git("add", "dir/b.txt")
	s := r.take()
	if s.Head != "" || s.Branch != "main" || s.Detached {
		t.Fatalf("head %q branch %q detached %v, want unborn main", s.Head, s.Branch, s.Detached)
	}
	a := entry(t, s, "a.txt")
	if a.Status != StatusUntracked || a.Head.Present() || a.Worktree.Hash != r.hashObject("a.txt") || a.Worktree.Mode != ModeRegular {
		t.Errorf("a.txt: %+v", a)
	}
	b := entry(t, s, "dir/b.txt")
	if b.Status != StatusAdded || b.Worktree.Hash != r.hashObject("dir/b.txt") || b.Index.Hash != b.Worktree.Hash {
		t.Errorf("dir/b.txt: %+v", b)
	}
}

func TestTakeStatuses(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	names := []string{"keep.txt", "mod.txt", "del.txt", "old name.txt", "exec.sh", "type.txt", "staged.txt", "both.txt"}
	for _, n := range names {
		r.write(n, "content of "+n+"\n")
	}
	head := r.commitAll("init")
	r.write("mod.txt", "changed\n")
	r.remove("del.txt")
	r.git("mv", "old name.txt", "new name.txt")
	if err := os.Chmod(filepath.Join(r.dir, "exec.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.remove("type.txt")
	if err := os.Symlink("keep.txt", filepath.Join(r.dir, "type.txt")); err != nil {
		t.Fatal(err)
	}
	r.write("staged.txt", "staged\n")
	r.git("add", "staged.txt")
	r.write("both.txt", "staged\n")
	r.git("add", "both.txt")
	r.write("both.txt", "staged then edited\n")
	odd := []string{"sp ace.txt", "new\nline.txt", "ünïcödé/日本.txt", `"quoted".txt`, `back\slash`, "tab\there"}
	for _, n := range odd {
		r.write(n, "odd "+n)
	}
	r.write(".implloop/state.db", "x")
	r.write("BLOCKED.md", "x")
	r.write("sub/BLOCKED.md", "not ours: only the root one is excluded")

	s := r.take()
	if s.Head != head {
		t.Fatalf("head %q, want %q", s.Head, head)
	}
	want := map[string]Status{
		"mod.txt": StatusModified, "del.txt": StatusDeleted, "new name.txt": StatusRenamed,
		"old name.txt": StatusDeleted, "exec.sh": StatusModified, "type.txt": StatusTypeChange,
		"staged.txt": StatusModified, "both.txt": StatusModified, "sub/BLOCKED.md": StatusUntracked,
	}
	for _, n := range odd {
		want[n] = StatusUntracked
	}
	if len(s.Paths) != len(want) {
		t.Errorf("paths %q, want %d of them", s.PathNames(), len(want))
	}
	for path, st := range want {
		e := entry(t, s, path)
		if e.Status != st {
			t.Errorf("%q: status %s, want %s", path, e.Status, st)
		}
		if e.Worktree.Present() && e.Worktree.Mode != ModeSymlink && e.Worktree.Hash != r.hashObject(path) {
			t.Errorf("%q: worktree %s, git hash-object %s", path, e.Worktree.Hash, r.hashObject(path))
		}
	}
	for i := 1; i < len(s.Paths); i++ {
		if s.Paths[i-1].Path >= s.Paths[i].Path {
			t.Errorf("not sorted: %q before %q", s.Paths[i-1].Path, s.Paths[i].Path)
		}
	}
	if e := entry(t, s, "del.txt"); e.Worktree.Present() || e.Head.Hash == "" {
		t.Errorf("del.txt: %+v", e)
	}
	nn, on := entry(t, s, "new name.txt"), entry(t, s, "old name.txt")
	if nn.OrigPath != "old name.txt" || nn.Head.Present() || nn.Worktree.Hash == "" ||
		on.RenamedTo != "new name.txt" || on.Worktree.Present() || on.Head.Hash != nn.Worktree.Hash {
		t.Errorf("rename: new %+v old %+v", nn, on)
	}
	if e := entry(t, s, "exec.sh"); e.Worktree.Mode != ModeExecutable || e.Head.Mode != ModeRegular || e.Worktree.Hash != e.Head.Hash {
		t.Errorf("exec.sh: %+v", e)
	}
	ty := entry(t, s, "type.txt")
	if ty.Worktree.Mode != ModeSymlink || ty.Worktree.Hash != strings.TrimSpace(r.gitIn([]byte("keep.txt"), "hash-object", "--stdin")) {
		t.Errorf("type.txt: %+v", ty)
	}
	if e := entry(t, s, "staged.txt"); e.Worktree.Hash != e.Index.Hash || e.Index.Hash == "" {
		t.Errorf("staged.txt: worktree should reuse the index blob: %+v", e)
	}
	if e := entry(t, s, "both.txt"); e.Worktree.Hash == e.Index.Hash {
		t.Errorf("both.txt: worktree should differ from the index: %+v", e)
	}
}

func TestTakeDetachedAndSubdir(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("d/a.txt", "1\n")
	first := r.commitAll("one")
	r.write("d/a.txt", "2\n")
	r.commitAll("two")
	r.git("checkout", "-q", "--detach", first)
	r.write("d/a.txt", "3\n")
	s, err := Take(context.Background(), filepath.Join(r.dir, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Head != first || !s.Detached || s.Branch != "" {
		t.Errorf("head %q detached %v branch %q", s.Head, s.Detached, s.Branch)
	}
	root, _ := filepath.EvalSymlinks(r.dir)
	if got, _ := filepath.EvalSymlinks(s.Root); got != root {
		t.Errorf("root %q, want %q", s.Root, r.dir)
	}
	if e := entry(t, s, "d/a.txt"); e.Worktree.Hash != r.hashObject("d/a.txt") {
		t.Errorf("%+v", e)
	}
}

func TestTakeErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Take(context.Background(), dir); !errors.Is(err, ErrNotRepository) {
		t.Errorf("not a repository: got %v", err)
	}
	if _, err := Take(context.Background(), filepath.Join(dir, "missing")); err == nil {
		t.Error("missing directory: no error")
	}
	// A .git that is a bare repository: there is no worktree to snapshot.
	bare := filepath.Join(t.TempDir(), "b")
	os.MkdirAll(filepath.Join(bare, "x"), 0o755)
	r0 := &testRepo{t: t, dir: bare}
	r0.git("init", "-q", "--bare", ".git")
	r0.git("--git-dir=.git", "config", "core.bare", "true")
	if _, err := Take(context.Background(), filepath.Join(bare, "x")); !errors.Is(err, ErrBareRepository) {
		t.Errorf("bare: got %v", err)
	}
	r := newTestRepo(t)
	t.Setenv("PATH", t.TempDir())
	if _, err := Take(context.Background(), r.dir); !errors.Is(err, ErrGitNotFound) {
		t.Errorf("no git: got %v", err)
	}
}

func TestTakeConflict(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("c.txt", "base\n")
	r.commitAll("base")
	r.git("checkout", "-q", "-b", "other")
	r.write("c.txt", "theirs\n")
	theirs := r.commitAll("theirs")
	r.git("checkout", "-q", "main")
	r.write("c.txt", "ours\n")
	r.commitAll("ours")
	headBlob := strings.TrimSpace(r.git("rev-parse", "HEAD:c.txt"))
	if _, err := r.gitErr(nil, "merge", "-q", theirs); err == nil {
		t.Fatal("merge did not conflict")
	}
	s := r.take()
	e := entry(t, s, "c.txt")
	if e.Status != StatusConflicted || e.XY != "UU" || e.Head.Hash != headBlob || e.Worktree.Hash != r.hashObject("c.txt") {
		t.Errorf("%+v (HEAD blob %s)", e, headBlob)
	}
}

func TestTakeSubmoduleAndNestedRepo(t *testing.T) {
	t.Parallel()
	sub := newTestRepo(t)
	sub.write("s.txt", "s1\n")
	sub.commitAll("s1")
	r := newTestRepo(t)
	r.write("top.txt", "top\n")
	r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", sub.dir, "sub")
	r.commitAll("with submodule")
	clean := r.take()
	if len(clean.Paths) != 0 {
		t.Fatalf("clean repo with a submodule: %v", clean.PathNames())
	}
	// A new commit inside the submodule, and untracked content in it.
	subWT := &testRepo{t: t, dir: filepath.Join(r.dir, "sub")}
	subWT.write("s.txt", "s2\n")
	moved := subWT.commitAll("s2")
	subWT.write("untracked-inside.txt", "x")
	// An untracked repository nested in the worktree.
	nested := &testRepo{t: t, dir: filepath.Join(r.dir, "nested")}
	os.Mkdir(nested.dir, 0o755)
	nested.git("init", "-q")
	nested.write("n.txt", "n\n")
	nestedHead := nested.commitAll("n")

	s := r.take()
	if got := s.PathNames(); len(got) != 2 {
		t.Fatalf("paths %q, want sub and nested only (never descended)", got)
	}
	e := entry(t, s, "sub")
	if e.Status != StatusSubmodule || e.Worktree.Hash != moved || e.Worktree.Mode != ModeGitlink || !strings.HasPrefix(e.Submodule, "SC") {
		t.Errorf("sub: %+v (want commit %s)", e, moved)
	}
	n := entry(t, s, "nested")
	if n.Status != StatusUntracked || n.Worktree.Hash != nestedHead || n.Worktree.Mode != ModeGitlink {
		t.Errorf("nested: %+v", n)
	}
	// What is uncommitted inside the submodule is in its nested snapshot;
	// the nested repository has nothing uncommitted, so it has none.
	if len(clean.Nested) != 0 || len(s.Nested) != 1 {
		t.Fatalf("nested snapshots: clean %+v, now %+v; want sub's only", clean.Nested, s.Nested)
	}
	if ns := s.Nested[0]; ns.Path != "sub" || !ns.Submodule || ns.Head != moved || len(ns.Paths) != 1 ||
		ns.Paths[0].Path != "untracked-inside.txt" || ns.Paths[0].Status != StatusUntracked {
		t.Errorf("sub's nested snapshot: %+v", ns)
	}
	// Taking it wrote nothing into the submodule's repository.
	before := listTree(t, filepath.Join(r.dir, ".git", "modules"))
	r.take()
	if after := listTree(t, filepath.Join(r.dir, ".git", "modules")); after != before {
		t.Errorf("a read-only Take changed the submodule's git directory:\n%s\n---\n%s", before, after)
	}
}

// listTree lists every file under dir with its size and modification time.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTakeLinkedWorktree(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	head := r.commitAll("a")
	wt := filepath.Join(t.TempDir(), "wt")
	r.git("worktree", "add", "-q", "-b", "side", wt)
	w := &testRepo{t: t, dir: wt}
	w.write("a.txt", "changed in the linked worktree\n")
	w.write("new.txt", "new\n")
	s := w.take(WithRun("run1"), WithTrack("gone.txt"))
	if s.Head != head || s.Branch != "side" || len(s.Paths) != 2 {
		t.Fatalf("%+v", s)
	}
	if e := entry(t, s, "a.txt"); e.Worktree.Hash != w.hashObject("a.txt") {
		t.Errorf("%+v", e)
	}
	if b, ok := s.Tracked["gone.txt"]; !ok || b.Present() {
		t.Errorf("tracked gone.txt: %+v %v", b, ok)
	}
	// The run's ref and its objects live in the common directory; the
	// private index is the linked worktree's own.
	if got := strings.TrimSpace(r.git("rev-parse", RunRef("run1"))); got != s.Commit {
		t.Errorf("run ref from the main worktree: %s, want %s", got, s.Commit)
	}
	if got := r.git("cat-file", "blob", s.Commit+":new.txt"); got != "new\n" {
		t.Errorf("boundary new.txt: %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "worktrees", "wt", "implloop", "boundary-index")); err != nil {
		t.Errorf("the linked worktree's private index: %v", err)
	}
}

func TestTakeTrack(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.write("exe", "#!/bin/sh\n")
	os.Chmod(filepath.Join(r.dir, "exe"), 0o755)
	r.commitAll("init")
	r.write("dirty.txt", "d\n")
	s := r.take(WithTrack("a.txt", "exe", "missing/x.txt", "dirty.txt", "a.txt/below"))
	if b := s.Tracked["a.txt"]; b.Hash != strings.TrimSpace(r.git("rev-parse", "HEAD:a.txt")) || b.Mode != ModeRegular {
		t.Errorf("a.txt: %+v", b)
	}
	if b := s.Tracked["exe"]; b.Mode != ModeExecutable {
		t.Errorf("exe: %+v", b)
	}
	for _, p := range []string{"missing/x.txt", "a.txt/below"} {
		if b, ok := s.Tracked[p]; !ok || b.Present() {
			t.Errorf("%s: %+v %v, want tracked and absent", p, b, ok)
		}
	}
	if _, ok := s.Tracked["dirty.txt"]; ok {
		t.Error("dirty.txt is dirty: Paths has it, Tracked must not")
	}
}

func TestTakeAutocrlf(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.git("config", "core.autocrlf", "true")
	r.write("crlf.txt", "one\r\ntwo\r\n")
	s := r.take(WithRun("crlf"))
	e := entry(t, s, "crlf.txt")
	if e.Worktree.Hash != r.hashObject("crlf.txt") {
		t.Errorf("worktree %s, git hash-object %s", e.Worktree.Hash, r.hashObject("crlf.txt"))
	}
	// Restore writes it back as a checkout would: CRLF again.
	os.Remove(filepath.Join(r.dir, "crlf.txt"))
	if _, err := Restore(context.Background(), r.dir, []LostContent{{Path: "crlf.txt", Lost: e.Worktree}}, false); err != nil {
		t.Fatal(err)
	}
	if got := r.read("crlf.txt"); got != "one\r\ntwo\r\n" {
		t.Errorf("restored bytes %q", got)
	}
}

// TestPrevHead: WithPrevHead records nothing when HEAD did not move, new
// commits on top as an ancestor move (their paths tracked), and a reset to
// an older commit as a rewrite, kept by the run's boundary chain.
func TestPrevHead(t *testing.T) {
	dir := t.TempDir()
	gitIn := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	ctx := context.Background()
	gitIn("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	gitIn("add", "-A")
	gitIn("commit", "-qm", "one")
	c1 := gitIn("rev-parse", "HEAD")
	s, err := Take(ctx, dir, WithPrevHead(c1))
	if err != nil || s.HeadChange != nil {
		t.Fatalf("unmoved: %+v %v", s.HeadChange, err)
	}
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644)
	gitIn("add", "-A")
	gitIn("commit", "-qm", "two")
	c2 := gitIn("rev-parse", "HEAD")
	s, err = Take(ctx, dir, WithPrevHead(c1))
	if err != nil || s.HeadChange == nil || !s.HeadChange.Ancestor || s.HeadChange.Rewritten {
		t.Fatalf("on top: %+v %v", s.HeadChange, err)
	}
	if b, ok := s.Tracked["b.txt"]; !ok || !b.Present() {
		t.Errorf("b.txt not tracked: %+v", s.Tracked)
	}
	b2, err := Take(ctx, dir, WithRun("run1"))
	if err != nil {
		t.Fatal(err)
	}
	gitIn("reset", "-q", "--hard", c1)
	gitIn("reflog", "expire", "--expire=now", "--all")
	gitIn("gc", "-q", "--prune=now")
	s, err = Take(ctx, dir, WithPrev(b2), WithRun("run1"))
	if err != nil {
		t.Fatal(err)
	}
	hc := s.HeadChange
	if hc == nil || !hc.Rewritten || hc.ForkPoint != c1 || len(hc.Dropped) != 1 || hc.Dropped[0].Path != "b.txt" ||
		hc.Dropped[0].Fork.Present() || hc.Pinned != RunRef("run1") {
		t.Fatalf("rewritten: %+v", hc)
	}
	if got := gitIn("rev-parse", hc.Pinned+"^1^1"); got != c2 {
		t.Errorf("%s^1^1 at %s, want %s", hc.Pinned, got, c2)
	}
}

// TestPrivateIndex: the private index follows the work tree across
// boundaries without being seeded again: a file force-added to the real
// index although ignored is in the snapshot (not "deleted" once
// committed), a file that becomes ignored stays in it, and a private
// index lost since the previous boundary (seeded afresh) still keeps a
// newly ignored file that is on disk (KeptIgnored).
func TestPrivateIndex(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write(".gitignore", "*.log\n")
	r.write("a.txt", "a\n")
	r.commitAll("init")
	s1 := r.take(WithRun("pi"))
	r.write("forced.log", "forced\n")
	r.git("add", "-f", "forced.log")
	r.git("commit", "-qm", "forced")
	s2 := r.take(WithRun("pi"), WithPrev(s1))
	if len(s2.Paths) != 0 {
		t.Errorf("dirty after committing a force-added file: %+v", s2.Paths)
	}
	if got := r.git("cat-file", "blob", s2.Tree+":forced.log"); got != "forced\n" {
		t.Errorf("forced.log in the tree: %q", got)
	}
	r.write("out/app.bin", "built\n")
	s3 := r.take(WithRun("pi"), WithPrev(s2))
	r.write(".git/info/exclude", "out/\n")
	s4 := r.take(WithRun("pi"), WithPrev(s3))
	if e, ok := s4.Lookup("out/app.bin"); !ok || !e.Worktree.Same(entry(t, s3, "out/app.bin").Worktree) {
		t.Errorf("out/app.bin after it became ignored: %+v %v", e, ok)
	}
	os.Remove(filepath.Join(r.dir, ".git", "implloop", "boundary-index"))
	r.write("logs/x.log", "log\n")
	r.git("add", "-f", "logs/x.log")
	// As a new run's first boundary: no ignore rules of a run to go by
	// (within one run, rules.go keeps out/app.bin in the snapshot).
	s4.rules = nil
	s5 := r.take(WithRun("pi"), WithPrev(s4))
	if len(s5.KeptIgnored) != 1 || s5.KeptIgnored[0] != "out/app.bin" {
		t.Errorf("kept ignored %v, want [out/app.bin]", s5.KeptIgnored)
	}
	if _, ok := s5.Lookup("out/app.bin"); !ok {
		t.Error("out/app.bin left the snapshot")
	}
	if _, ok := s5.Lookup("logs/x.log"); !ok {
		t.Error("a staged ignored file is not in the snapshot")
	}
}

// TestTrackedFileIgnored: found by the guard's property test. A tracked
// file deleted at one boundary (so `git add -A` drops it from the private
// index), written back and covered by a new ignore rule while the real
// index is unchanged, must be in the next snapshot: git tracks it.
func TestTrackedFileIgnored(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a base\n")
	r.commitAll("init")
	r.remove("a.txt")
	s1 := r.take(WithRun("ti"))
	if e := entry(t, s1, "a.txt"); e.Status != StatusDeleted {
		t.Fatalf("%+v", e)
	}
	r.write("a.txt", "task one's version\n")
	r.write(".git/info/exclude", "a.txt\n")
	s2 := r.take(WithRun("ti"), WithPrev(s1))
	if e := entry(t, s2, "a.txt"); e.Worktree.Hash != r.hashObject("a.txt") {
		t.Errorf("a.txt: %+v", e)
	}
	if got := r.git("cat-file", "blob", s2.Commit+":a.txt"); got != "task one's version\n" {
		t.Errorf("a.txt in the boundary commit: %q", got)
	}
}

// TestPrivateIndexAfterGC: issue 26's "refs deleted, then gc". The
// documented way to forget a run (delete its ref) followed by
// `git gc --prune=now` collects the blob of an untracked file that only
// the private index still names; the next boundary, the file unchanged
// on disk, rebuilds the index instead of failing in write-tree.
func TestPrivateIndexAfterGC(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("init")
	r.write("untracked.txt", "only the boundary index names me\n")
	r.write("dir/deep.txt", "and me\n")
	s1 := r.take(WithRun("gc1"))
	blob := r.hashObject("untracked.txt")
	r.git("update-ref", "-d", RunRef("gc1"))
	r.git("gc", "-q", "--prune=now")
	if _, err := r.gitErr(nil, "cat-file", "-e", blob); err == nil {
		t.Fatal("gc kept the untracked file's blob: the test does not test anything")
	}
	s2, err := Take(context.Background(), r.dir, WithRun("gc2"))
	if err != nil {
		t.Fatalf("boundary after the run's refs were deleted and gc: %v", err)
	}
	if s2.Tree != s1.Tree {
		t.Errorf("tree %s, want %s (the same work tree)", s2.Tree, s1.Tree)
	}
	if got := r.git("cat-file", "blob", s2.Commit+":untracked.txt"); got != "only the boundary index names me\n" {
		t.Errorf("untracked.txt in the boundary: %q", got)
	}
	r.git("fsck", "--no-dangling", "--strict")
}
