package cache

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

func stateDirT(t testing.TB, root string) Dirs {
	t.Helper()
	d, err := StateDir(root)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestStateInGitDir(t *testing.T) {
	r := gittest.New(t)
	j := openT(t, r.Dir)
	a := mustRun(t, j, "")
	complete(t, j, unitFor(a.ID, "1", 1, "one"))

	want := filepath.Join(r.Dir, ".git", "implloop")
	if d := j.Dirs(); j.Dir() != want || d.State != want || d.Lock != want {
		t.Errorf("dirs = %+v, Dir %s; want state and lock in %s", d, j.Dir(), want)
	}
	for _, p := range []string{"state.db", "objects"} {
		if _, err := os.Stat(filepath.Join(want, p)); err != nil {
			t.Error(err)
		}
	}
	// Nothing in the work tree, nothing for git to see or to exclude.
	if _, err := os.Lstat(filepath.Join(r.Dir, LegacyDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists: %v", LegacyDir, err)
	}
	if out := r.Git("status", "--porcelain", "--untracked-files=all", "--ignored"); out != "" {
		t.Errorf("git status shows %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir, ".git", "info", "exclude")); strings.Contains(string(b), "implloop") {
		t.Errorf("info/exclude names implloop:\n%s", b)
	}
	// git clean -fdx and git stash -a leave it alone.
	r.Write("junk.txt", "x")
	r.Git("clean", "-fdxq")
	if _, err := j.ListRuns(); err != nil || j.Gone() != nil {
		t.Errorf("after git clean: %v, gone: %v", err, j.Gone())
	}
}

func TestStateLinkedWorktree(t *testing.T) {
	r := gittest.New(t)
	r.Git("commit", "-q", "--allow-empty", "-m", "init")
	wt := filepath.Join(t.TempDir(), "wt")
	r.Git("worktree", "add", "-q", wt)

	main, linked := stateDirT(t, r.Dir), stateDirT(t, wt)
	if main.State != linked.State {
		t.Errorf("state dirs differ: %s, %s", main.State, linked.State)
	}
	if main.Lock == linked.Lock || !strings.HasPrefix(linked.Lock, filepath.Join(r.Dir, ".git", "worktrees")+string(filepath.Separator)) {
		t.Errorf("lock dirs: main %s, linked %s", main.Lock, linked.Lock)
	}
	if linked.Root != wt && !strings.HasSuffix(linked.Root, string(filepath.Separator)+"wt") {
		t.Errorf("linked root %s", linked.Root)
	}
	// One journal: a run journaled from the linked worktree is read from
	// the main one.
	j := openT(t, wt)
	a := mustRun(t, j, "")
	j.Close()
	ro, err := OpenReadOnly(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.GetRun(a.ID); err != nil {
		t.Errorf("main worktree does not see the linked one's run: %v", err)
	}
	// A path outside the work tree is shown absolute.
	if got := linked.Shown(filepath.Join(linked.State, "state.db")); !filepath.IsAbs(got) {
		t.Errorf("Shown = %s", got)
	}
	if got := main.Shown(filepath.Join(main.State, "state.db")); got != filepath.Join(".git", "implloop", "state.db") {
		t.Errorf("Shown = %s", got)
	}
}

func TestStateDirOutsideGit(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	for name, open := range map[string]func(string) (*Journal, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		if _, err := open(dir); !errors.Is(err, ErrNotRepository) {
			t.Errorf("%s outside a repository: %v", name, err)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("wrote %d entries outside a repository", len(es))
	}
}

// legacyRepo is a repository whose journal an older implloop kept in
// .implloop/: made with the current code, then moved there by hand. It
// returns the repo, a run id, and the hash of a blob the run stored.
func legacyRepo(t *testing.T) (*gittest.Repo, string, string) {
	t.Helper()
	r := gittest.New(t)
	j := openT(t, r.Dir)
	a := mustRun(t, j, "")
	u := complete(t, j, unitFor(a.ID, "1", 1, "one"))
	if err := j.FinishRun(a.ID, "DONE", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(j.Dir(), "runs", a.ID, "report.md")
	os.MkdirAll(filepath.Dir(rep), 0o755)
	if err := os.WriteFile(rep, []byte("# report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(j.Dir(), r.Path(LegacyDir)); err != nil {
		t.Fatal(err)
	}
	return r, a.ID, u.Result
}

func TestLegacyReadInPlaceThenMoved(t *testing.T) {
	r, run, blob := legacyRepo(t)
	legacy := r.Path(LegacyDir)

	// Read-only: the legacy journal is read where it is, nothing written.
	before := snapshotTree(t, r.Dir)
	for range 2 {
		ro, err := OpenReadOnly(r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if ro.Dir() != legacy {
			t.Errorf("read-only Dir = %s, want %s", ro.Dir(), legacy)
		}
		readEverything(t, ro)
		if _, err := ro.ReadBlob(blob); err != nil {
			t.Error(err)
		}
		ro.Close()
	}
	if d := diffTrees(before, snapshotTree(t, r.Dir)); len(d) > 0 {
		t.Fatalf("read-only use of a legacy journal wrote: %v", d)
	}

	// The first writable open moves it, once, and says so.
	os.WriteFile(filepath.Join(legacy, "lock"), nil, 0o644)
	j, err := Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if j.MovedFrom() != legacy {
		t.Errorf("MovedFrom = %q, want %s", j.MovedFrom(), legacy)
	}
	if _, err := j.GetRun(run); err != nil {
		t.Errorf("moved journal lost its run: %v", err)
	}
	if _, err := j.ReadBlob(blob); err != nil {
		t.Errorf("moved journal lost its blob: %v", err)
	}
	if _, err := os.Stat(filepath.Join(j.Dir(), "runs", run, "report.md")); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(legacy); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the emptied %s is still there: %v", LegacyDir, err)
	}
	checkClean(t, j)
	j.Close()
	j2 := openT(t, r.Dir)
	if j2.MovedFrom() != "" {
		t.Errorf("moved again from %s", j2.MovedFrom())
	}
}

func TestLegacyUnknownFilesStay(t *testing.T) {
	r, run, _ := legacyRepo(t)
	r.Write(filepath.Join(LegacyDir, "notes.txt"), "mine")
	j := openT(t, r.Dir)
	if j.MovedFrom() == "" {
		t.Fatal("not moved")
	}
	es, err := os.ReadDir(r.Path(LegacyDir))
	if err != nil || len(es) != 1 || es[0].Name() != "notes.txt" {
		t.Errorf("left in %s: %v %v", LegacyDir, es, err)
	}
	if _, err := j.GetRun(run); err != nil {
		t.Error(err)
	}
}

func TestLegacyNotMovedOverAJournal(t *testing.T) {
	r, legacyRun, _ := legacyRepo(t)
	// A journal in the git directory already (another worktree's, say):
	// the legacy one is left alone, never merged or written over.
	j := openT(t, r.Dir)
	if j.MovedFrom() == "" {
		t.Fatal("not moved")
	}
	j.Close()
	r2, _, _ := legacyRepo(t)
	if err := os.Rename(r2.Path(LegacyDir), r.Path(LegacyDir)); err != nil {
		t.Fatal(err)
	}
	j = openT(t, r.Dir)
	if j.MovedFrom() != "" {
		t.Errorf("moved over an existing journal from %s", j.MovedFrom())
	}
	if _, err := j.GetRun(legacyRun); err != nil {
		t.Errorf("the journal in the git directory changed: %v", err)
	}
	if _, err := os.Stat(r.Path(filepath.Join(LegacyDir, "state.db"))); err != nil {
		t.Errorf("the second legacy journal is gone: %v", err)
	}
}

func TestLegacyAcrossFilesystems(t *testing.T) {
	r, run, blob := legacyRepo(t)
	renames := 0
	rename = func(from, to string) error {
		renames++
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EXDEV}
	}
	t.Cleanup(func() { rename = os.Rename })
	j := openT(t, r.Dir)
	if renames == 0 || j.MovedFrom() == "" {
		t.Fatalf("renames %d, moved from %q", renames, j.MovedFrom())
	}
	if _, err := j.GetRun(run); err != nil {
		t.Error(err)
	}
	if _, err := j.ReadBlob(blob); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(r.Path(LegacyDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left: %v", LegacyDir, err)
	}
	checkClean(t, j)
	filepath.WalkDir(j.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".moving") {
			t.Errorf("temporary copy left: %s", p)
		}
		return nil
	})
}

func TestLegacyMoveCutShort(t *testing.T) {
	r, run, blob := legacyRepo(t)
	d := stateDirT(t, r.Dir)
	// A move killed after objects/ went over, before state.db did: the
	// database is still in .implloop/, its blobs in the git directory.
	if err := os.MkdirAll(d.State, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(d.Legacy, "objects"), filepath.Join(d.State, "objects")); err != nil {
		t.Fatal(err)
	}
	// Read-only finds the database where it is (its blobs not: a miss,
	// never an error that stops the command).
	ro, err := OpenReadOnly(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.GetRun(run); err != nil {
		t.Error(err)
	}
	ro.Close()
	j := openT(t, r.Dir)
	if j.MovedFrom() == "" {
		t.Fatal("the cut-short move was not finished")
	}
	if _, err := j.ReadBlob(blob); err != nil {
		t.Error(err)
	}
	checkClean(t, j)
}

func TestLegacyWithWAL(t *testing.T) {
	// A writer that crashed leaves state.db in WAL mode with its -wal:
	// the committed rows are in the -wal only. Copy such a state.
	src := gittest.New(t)
	w := openT(t, src.Dir)
	a := mustRun(t, w, "")
	complete(t, w, unitFor(a.ID, "1", 1, "one"))
	r := gittest.New(t)
	legacy := r.Path(LegacyDir)
	if err := copyAll(w.Dir(), legacy); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(legacy, "state.db-wal")); err != nil {
		t.Fatalf("no -wal to move: %v", err)
	}
	j := openT(t, r.Dir)
	if j.MovedFrom() == "" {
		t.Fatal("not moved")
	}
	if us, err := j.Units(a.ID); err != nil || len(us) != 1 {
		t.Errorf("units after the move: %d, %v", len(us), err)
	}
	if _, err := os.Lstat(legacy); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left: %v", LegacyDir, err)
	}
}

func TestLegacyOlderImplloopRunning(t *testing.T) {
	r, _, _ := legacyRepo(t)
	f, err := os.Create(r.Path(filepath.Join(LegacyDir, "lock")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(r.Dir); err == nil || !strings.Contains(err.Error(), "older implloop is running") {
		t.Fatalf("Open while an older implloop holds its lock: %v", err)
	}
	if _, err := os.Stat(r.Path(filepath.Join(LegacyDir, "state.db"))); err != nil {
		t.Errorf("the journal moved from under its writer: %v", err)
	}
}

func TestGone(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(dir string) error
		want string
	}{
		{"removed", os.RemoveAll, "implloop's journal .git/implloop/state.db was removed"},
		{"replaced", func(dir string) error {
			if err := os.Remove(filepath.Join(dir, "state.db")); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "state.db"), nil, 0o644)
		}, "implloop's journal .git/implloop/state.db was replaced"},
		{"blobs removed", func(dir string) error { return os.RemoveAll(filepath.Join(dir, "objects")) },
			"implloop's blob store .git/implloop/objects was removed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := gittest.New(t)
			j := openT(t, r.Dir)
			mustRun(t, j, "")
			if err := j.Gone(); err != nil {
				t.Fatalf("Gone right after Open: %v", err)
			}
			if err := c.do(j.Dir()); err != nil {
				t.Fatal(err)
			}
			err := j.Gone()
			var ge *GoneError
			if !errors.As(err, &ge) || err.Error() != filepath.FromSlash(c.want) {
				t.Errorf("Gone = %v, want %s", err, c.want)
			}
			// SQLite goes on without an error: that is why Gone exists.
			if _, err := j.PutBlob([]byte("after")); err != nil {
				t.Logf("write after removal: %v", err)
			}
		})
	}
	// A read-only journal is never gone.
	r := gittest.New(t)
	openT(t, r.Dir).Close()
	ro, err := OpenReadOnly(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	os.RemoveAll(ro.Dir())
	if err := ro.Gone(); err != nil {
		t.Errorf("read-only Gone = %v", err)
	}
}
