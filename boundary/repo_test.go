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
// task's run) decides what is ignored with the rules learned before any
// agent ran, as the later tasks of one serial run do with the rules of
// its first boundary. An agent that pointed core.excludesFile at a file
// ignoring its work (between two runs: no boundary of its own run is
// there to notice) hides nothing from the next run: its first boundary
// says how git's rules differ (RulesChanged) and keeps the files the
// learned rules do not ignore, and so does each boundary after it. (A
// first boundary without WithRepo, as before, takes git's rules as it
// finds them: the work is left out of its tree.)
func TestRepoRulesStand(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	r.write("a.txt", "a")
	r.commitAll("a")
	repo, err := LearnRepo(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	if repo.rules == nil || repo.rules.excludesPath != filepath.Join(home, "global-ignore") || repo.rules.configFP == "" {
		t.Fatalf("learned rules %+v", repo.rules)
	}
	r.write("x.gignored", "x") // ignored by the global excludes file
	r.write("y.log", "y")
	first := r.take(WithRun("r1"), WithRepo(repo))
	if got := r.treeFiles(first.Tree); !slices.Equal(got, []string{"a.txt", "y.log"}) || len(first.RulesChanged) > 0 {
		t.Fatalf("first run's tree %v, rules changed %v", got, first.RulesChanged)
	}
	r.remove("y.log")

	// The agent points core.excludesFile at a file of its own, which
	// ignores its work (and no longer the global file's).
	ign := filepath.Join(t.TempDir(), "ignore")
	if err := os.WriteFile(ign, []byte("*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("config", "core.excludesFile", ign)
	r.write("z.log", "z")
	b0 := r.take(WithRun("r2"), WithRepo(repo))
	want := []string{"core.excludesFile set to " + ign}
	if got := r.treeFiles(b0.Tree); !slices.Equal(got, []string{"a.txt", "z.log"}) || !slices.Equal(b0.RulesChanged, want) {
		t.Fatalf("next run's first boundary: tree %v, rules changed %v", got, b0.RulesChanged)
	}
	r.write("w.log", "w")
	b1 := r.take(WithRun("r2"), WithRepo(repo), WithPrev(b0))
	if got := r.treeFiles(b1.Tree); !slices.Equal(got, []string{"a.txt", "w.log", "z.log"}) || !slices.Equal(b1.RulesChanged, want) {
		t.Fatalf("next run's second boundary: tree %v, rules changed %v", got, b1.RulesChanged)
	}
	// Without what was learned: git's rules, the agent's (a file new to
	// the boundary index is left out).
	r.write("u.log", "u")
	if got := r.treeFiles(r.take(WithRun("r3")).Tree); slices.Contains(got, "u.log") || !slices.Contains(got, "x.gignored") {
		t.Fatalf("a first boundary without WithRepo: tree %v", got)
	}
	r.remove("u.log")

	// info/exclude, edited: the learned one stands too.
	r.git("config", "--unset", "core.excludesFile")
	r.write(".git/info/exclude", "*.txt\n")
	r.write("v.txt", "v")
	b0 = r.take(WithRun("r4"), WithRepo(repo))
	if got := r.treeFiles(b0.Tree); !slices.Contains(got, "v.txt") || !slices.Equal(b0.RulesChanged, []string{"info/exclude changed"}) {
		t.Fatalf("after info/exclude was edited: tree %v, rules changed %v", got, b0.RulesChanged)
	}

	// A configuration that includes another file: its changes cannot be
	// told from the stat data of the files the fingerprint knows, so a
	// first boundary asks git what core.excludesFile is (the learned
	// rules stand all the same).
	inc := filepath.Join(t.TempDir(), "inc")
	if err := os.WriteFile(inc, []byte("[core]\n\texcludesFile = "+ign+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("config", "include.path", inc)
	if repo, err = LearnRepo(ctx, r.dir); err != nil {
		t.Fatal(err)
	}
	if repo.rules == nil || repo.rules.excludesPath != ign || repo.rules.configFP != "" {
		t.Fatalf("learned from a configuration that includes another file: %+v", repo.rules)
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

// A worker's runs that start from the same tree read its directories
// once (ls-tree, by tree id): the next run's first boundary goes by the
// same list, so that a .gitignore an agent of that run makes where git
// status cannot tell (one that ignores itself, in a directory of the
// tree) is still noticed, and hides nothing.
func TestRepoTreeDirsOnce(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	r.write("a.txt", "a")
	r.write("sub/deep/b.txt", "b")
	r.commitAll("a")
	repo, err := LearnRepo(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	log := countGit(t)
	first := r.take(WithRun("r1"), WithRepo(repo))
	if got := calls(t, log, "ls-tree -r -d"); len(got) != 1 {
		t.Fatalf("first run's first boundary: ls-tree %q, want one", got)
	}
	b0 := r.take(WithRun("r2"), WithRepo(repo))
	if b0.Tree != first.Tree {
		t.Fatalf("the runs start from trees %s and %s", first.Tree, b0.Tree)
	}
	if got := calls(t, log, "ls-tree -r -d"); len(got) != 0 {
		t.Fatalf("next run's first boundary, same tree: ls-tree %q, want none", got)
	}
	if !slices.Equal(b0.rules.dirs, first.rules.dirs) || !slices.Contains(b0.rules.dirs, "sub/deep") {
		t.Fatalf("directories %q, then %q", first.rules.dirs, b0.rules.dirs)
	}
	// The agent of the second run: a .gitignore ignoring itself and its
	// work.
	r.write("sub/deep/.gitignore", "*\n")
	r.write("sub/deep/w.log", "work")
	b1 := r.take(WithRun("r2"), WithRepo(repo), WithPrev(b0))
	if got := r.treeFiles(b1.Tree); !slices.Contains(got, "sub/deep/w.log") {
		t.Errorf("the work a new .gitignore ignores left the tree: %v", got)
	}
	if !slices.ContainsFunc(b1.RulesChanged, func(s string) bool { return strings.Contains(s, "sub/deep/.gitignore") }) {
		t.Errorf("rules changed %q, want sub/deep/.gitignore named", b1.RulesChanged)
	}
	// Another tree: read.
	calls(t, log, "")
	r.write("c/d.txt", "d")
	r.take(WithRun("r3"), WithRepo(repo))
	if got := calls(t, log, "ls-tree -r -d"); len(got) != 1 {
		t.Errorf("a first boundary of another tree: ls-tree %q, want one", got)
	}
}
