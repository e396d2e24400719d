package boundary

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeFiles are the paths of tree.
func (r *testRepo) treeFiles(tree string) []string {
	r.t.Helper()
	return strings.Fields(r.git("ls-tree", "-r", "--name-only", tree))
}

// A run's first boundary given what LearnRepo learned (a worker's next
// task's run) starts from the ignore rules git has then, as it would
// without it. While git's configuration is untouched the learned
// core.excludesFile is used; once an agent pointed it elsewhere (between
// two runs: no run's later boundary is there to notice), it is resolved
// again, and the new run's rules are git's, as without WithRepo.
func TestRepoExcludesFileAsFound(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	r.write("a.txt", "a")
	r.commitAll("a")
	repo, err := LearnRepo(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := openGit(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	if p, ok := repo.excludes(g, configFingerprint(g)); !ok || p != filepath.Join(home, "global-ignore") {
		t.Fatalf("learned excludes file %q, %v", p, ok)
	}
	r.write("x.gignored", "x") // ignored by the global excludes file
	r.write("y.log", "y")
	if got := r.treeFiles(r.take(WithRun("r1"), WithRepo(repo)).Tree); !slices.Equal(got, []string{"a.txt", "y.log"}) {
		t.Fatalf("first run's tree %v", got)
	}

	// The agent points core.excludesFile at a file of its own.
	ign := filepath.Join(t.TempDir(), "ignore")
	if err := os.WriteFile(ign, []byte("*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("config", "core.excludesFile", ign)
	r.write("z.log", "z") // (y.log is in the boundary index: no rule ignores it now)
	if _, ok := repo.excludes(g, configFingerprint(g)); ok {
		t.Fatal("the learned excludes file still used after the configuration changed")
	}
	with := r.take(WithRun("r2"), WithRepo(repo))
	without := r.take(WithRun("r3"))
	if got := r.treeFiles(with.Tree); !slices.Equal(got, []string{"a.txt", "x.gignored", "y.log"}) || with.Tree != without.Tree {
		t.Fatalf("next run's tree %v (%s; without WithRepo %s)", got, with.Tree, without.Tree)
	}
	// The change is still noticed at the run's next boundary, as ever.
	r.git("config", "--unset", "core.excludesFile")
	next := r.take(WithRun("r2"), WithRepo(repo), WithPrev(with))
	if len(next.RulesChanged) == 0 {
		t.Fatal("a change of core.excludesFile within the run went unnoticed")
	}

	// A configuration that includes another file: its changes cannot be
	// told from the stat data of the files the fingerprint knows, so the
	// excludes file is not learned.
	inc := filepath.Join(t.TempDir(), "inc")
	if err := os.WriteFile(inc, []byte("[core]\n\texcludesFile = "+ign+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("config", "include.path", inc)
	if repo, err = LearnRepo(ctx, r.dir); err != nil {
		t.Fatal(err)
	}
	if repo.excludesFP != "" {
		t.Fatal("learned core.excludesFile from a configuration that includes another file")
	}
}

// A worktree whose .git a task made point at another repository's git
// directory is not the one Repo learned: Current says so, and a Take
// given it asks git where the git directory is.
func TestRepoCurrent(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	r.write("a.txt", "a")
	c := r.commitAll("a")
	wt := filepath.Join(t.TempDir(), "wt")
	if err := AddWorktree(ctx, r.dir, wt, c); err != nil {
		t.Fatal(err)
	}
	repo, err := LearnRepo(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if !repo.Current() || repo.Root() != wt {
		t.Fatalf("a worktree just learned is not current (root %s)", repo.Root())
	}
	if s := (&testRepo{t: t, dir: wt}).take(WithRun("r1"), WithRepo(repo)); s.gitDir != repo.gitDir {
		t.Fatalf("first boundary's git directory %s, learned %s", s.gitDir, repo.gitDir)
	}
	other := newTestRepo(t)
	other.write("b.txt", "b")
	other.commitAll("b")
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(other.dir, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if repo.Current() {
		t.Fatal("a worktree pointed at another repository is current")
	}
	s := (&testRepo{t: t, dir: wt}).take(WithRun("r2"), WithRepo(repo))
	if s.gitDir == repo.gitDir {
		t.Fatalf("the first boundary took the learned git directory %s though .git names another", s.gitDir)
	}
	var nilRepo *Repo
	if nilRepo.Current() {
		t.Fatal("a nil Repo is current")
	}
}
