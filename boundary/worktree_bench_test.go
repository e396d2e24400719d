package boundary

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkWorktreeTask is what running a task in a worktree adds
// (--jobs), per task: the worker's worktree readied at a boundary commit
// (ResetWorktree), the tree of what the task left there, and the
// three-way merge into the main work tree with its one path written;
// against `git status --porcelain=v2 -z -uall` of the same 20,000-file
// repository in the same loop. Issue 15's target: at most 3x
// ("worktree/git-status"). Making a worker's worktree, once per worker and
// run, checks out every file: "worker-ms" (the file system's speed at
// creating 20,000 files decides it).
func BenchmarkWorktreeTask(b *testing.B) {
	const n = 20000
	dir := benchRepo(b, n)
	ctx := context.Background()
	base, err := Take(ctx, dir, WithRun("bench-wt"))
	if err != nil {
		b.Fatal(err)
	}
	wtDir, err := WorktreeDir(ctx, dir, "bench-wt")
	if err != nil {
		b.Fatal(err)
	}
	status := func() {
		runStatus(b, dir, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all")
	}
	status()
	// A run makes one worktree per worker, once (AddWorktree checks out
	// every file), and readies it for each task with ResetWorktree.
	t0 := time.Now()
	wt := filepath.Join(wtDir, "w1")
	if err := AddWorktree(ctx, dir, wt, base.Commit); err != nil {
		b.Fatal(err)
	}
	made := time.Since(t0)
	var ours, git time.Duration
	last, err := WorktreeTree(ctx, wt) // as a worker's fresh worktree is
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		t0 := time.Now()
		if err := ResetWorktree(ctx, wt, base.Commit, last); err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("task-%d.txt", i)
		if err := os.WriteFile(filepath.Join(wt, name), []byte("work\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		tree, err := WorktreeTree(ctx, wt)
		if err != nil {
			b.Fatal(err)
		}
		last = tree
		m, err := MergeInto(ctx, dir, base.Commit, base.Commit, tree)
		if err != nil || len(m.Written) != 1 {
			b.Fatalf("merge: %v %+v", err, m)
		}
		ours += time.Since(t0)
		os.Remove(filepath.Join(dir, name))
		t1 := time.Now()
		status()
		git += time.Since(t1)
	}
	b.ReportMetric(float64(made)/1e6, "worker-ms")
	_ = RemoveWorktrees(ctx, dir, wtDir)
	b.ReportMetric(float64(ours)/float64(git), "worktree/git-status")
	b.ReportMetric(float64(ours)/1e6/float64(b.N), "worktree-ms/op")
	b.ReportMetric(float64(git)/1e6/float64(b.N), "git-status-ms/op")
}
