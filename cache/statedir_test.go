package cache

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if _, err := os.Stat(filepath.Join(want, "state.db")); err != nil {
		t.Errorf("after git clean: %v", err)
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
