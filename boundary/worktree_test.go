package boundary

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A worker's worktree is readied for its next task by ResetWorktree: after
// a task that edited, removed, added and committed files (its tree read,
// or not), the worktree holds the commit again, HEAD included, with no
// file of the task left but the ignored ones (kept unless clean) and the
// stat data good (git status is clean). Not read: ignored files go too.
func TestResetWorktreeAfterATask(t *testing.T) {
	for _, c := range []struct {
		name       string
		read       bool // WorktreeTree ran after the task
		keptIgnore bool
	}{
		{"tree read", true, true},
		{"tree not read", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			r := newTestRepo(t)
			r.write(".gitignore", "*.log\n")
			r.write("a.txt", "a\n")
			r.write("d/b.txt", "b\n")
			r.write("d/e/c.txt", "c\n")
			base := r.commitAll("base")
			wt := filepath.Join(t.TempDir(), "w1")
			if err := AddWorktree(ctx, r.dir, wt, base); err != nil {
				t.Fatal(err)
			}
			w := &testRepo{t: t, dir: wt}
			w.write("a.txt", "a, edited\n")
			w.remove("d/e/c.txt")
			w.write("d/new.txt", "new\n")
			w.write("build.log", "ignored\n")
			w.write("x/y/z.txt", "deep\n")
			w.git("add", "x")
			w.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the task commits")
			w.write("later.txt", "after the commit\n")
			last := ""
			if c.read {
				var err error
				if last, err = WorktreeTree(ctx, wt); err != nil {
					t.Fatal(err)
				}
			}
			if err := ResetWorktree(ctx, wt, base, last); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(w.git("rev-parse", "HEAD")); got != base {
				t.Errorf("HEAD %s, want %s", got, base)
			}
			if got := w.git("status", "--porcelain", "--untracked-files=all"); got != "" {
				t.Errorf("git status after the reset:\n%s", got)
			}
			for p, want := range map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "d/e/c.txt": "c\n"} {
				if got := w.read(p); got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
			for _, p := range []string{"x/y/z.txt", "d/new.txt", "later.txt"} {
				if _, err := os.Stat(filepath.Join(wt, p)); err == nil {
					t.Errorf("%s is still there", p)
				}
			}
			if _, err := os.Stat(filepath.Join(wt, "build.log")); (err == nil) != c.keptIgnore {
				t.Errorf("ignored build.log there: %v, want %v", err == nil, c.keptIgnore)
			}
		})
	}
}

// A file of the task changed again after its tree was read (which a
// finished task does not do, but a process that escaped its group might)
// is still written back.
func TestResetWorktreeAfterALateEdit(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	base := r.commitAll("base")
	wt := filepath.Join(t.TempDir(), "w1")
	if err := AddWorktree(ctx, r.dir, wt, base); err != nil {
		t.Fatal(err)
	}
	w := &testRepo{t: t, dir: wt}
	w.write("a.txt", "task\n")
	last, err := WorktreeTree(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	w.write("a.txt", "stray, longer\n")
	if err := ResetWorktree(ctx, wt, base, last); err != nil {
		t.Fatal(err)
	}
	if got := w.read("a.txt"); got != "a\n" {
		t.Errorf("a.txt = %q", got)
	}
}

// A worker's next run starts, after ResetWorktree's checkout and clean,
// without catching the private index up on the lag the last task's
// boundaries from a watcher's paths left (ResetWorktree drops it): its
// first boundary is the commit's tree all the same, however the task
// left the files it wrote (the same size and modification time as the
// commit's, ignored, removed, a directory where a file was).
func TestResetWorktreeDropsLag(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	r.write(".gitignore", "*.log\n")
	r.write("a.txt", "aaaa\n")
	r.write("d/b.txt", "b\n")
	r.write("keep.log", "tracked though ignored\n")
	r.git("add", "-f", "keep.log")
	base := r.commitAll("base")
	baseTree := strings.TrimSpace(r.git("rev-parse", base+"^{tree}"))
	wt := filepath.Join(t.TempDir(), "w1")
	if err := AddWorktree(ctx, r.dir, wt, base); err != nil {
		t.Fatal(err)
	}
	w := &testRepo{t: t, dir: wt}
	log := countGit(t)
	for task := range 3 {
		run := fmt.Sprintf("r%d", task)
		b0, err := Take(ctx, wt, WithRun(run))
		if err != nil {
			t.Fatal(err)
		}
		if b0.Tree != baseTree || len(b0.Paths) != 0 {
			t.Fatalf("task %d: first boundary %s with %+v, want the commit's tree %s, clean", task, b0.Tree, b0.Paths, baseTree)
		}
		if got := calls(t, log, "-c core.splitIndex=true -c core.untrackedCache=true -c status.showUntrackedFiles=all -c advice.addIgnoredFile=false update-index -z --index-info"); task > 0 && len(got) != 0 {
			t.Errorf("task %d: the private index caught up: %q", task, got)
		}
		// The task, seen by a watcher.
		fi, _ := os.Stat(filepath.Join(wt, "a.txt"))
		w.write("a.txt", "bbbb\n") // same size, and the same time below
		os.Chtimes(filepath.Join(wt, "a.txt"), fi.ModTime(), fi.ModTime())
		w.remove("keep.log")
		w.remove("d/b.txt")
		w.write("d/b.txt/inner.txt", "a directory now\n")
		w.write("new.txt", "new\n")
		w.write("build.log", "ignored\n")
		after, err := Take(ctx, wt, WithRun(run), WithPrev(b0),
			WithChanged([]string{"a.txt", "keep.log", "d/b.txt", "new.txt", "build.log"}, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !after.watched {
			t.Fatalf("task %d: the boundary after it is not from the watcher's paths: %s", task, after.watchMiss)
		}
		lag := filepath.Join(stateDir(dotGitDir(wt)), "boundary-index.lag")
		if _, err := os.Stat(lag); err != nil {
			t.Fatalf("task %d: no lag: %v", task, err)
		}
		if err := ResetWorktree(ctx, wt, base, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// After ResetWorktree, the next run's first boundary knows the index is
// HEAD's without git diff-index -- while it is: a file staged since, or
// HEAD moved since (by anyone), and git is asked again.
func TestResetWorktreeNotesIndex(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	base := r.commitAll("base")
	r.write("a.txt", "a2\n")
	second := r.commitAll("second")
	wt := filepath.Join(t.TempDir(), "w1")
	if err := AddWorktree(ctx, r.dir, wt, base); err != nil {
		t.Fatal(err)
	}
	w := &testRepo{t: t, dir: wt}
	log := countGit(t)
	b0 := func(run string, wantDiffIndex int) Snapshot {
		t.Helper()
		calls(t, log, "")
		s, err := Take(ctx, wt, WithRun(run))
		if err != nil {
			t.Fatal(err)
		}
		if got := calls(t, log, "diff-index"); len(got) != wantDiffIndex {
			t.Errorf("%s: diff-index %d times, want %d", run, len(got), wantDiffIndex)
		}
		return s
	}
	reset := func(commit string) {
		t.Helper()
		w.write("a.txt", "the task's\n")
		if err := ResetWorktree(ctx, wt, commit, ""); err != nil {
			t.Fatal(err)
		}
	}
	reset(base)
	if s := b0("r1", 0); len(s.Paths) != 0 {
		t.Errorf("r1: dirty %+v", s.Paths)
	}
	reset(base)
	w.write("a.txt", "staged\n")
	w.git("add", "a.txt")
	if s := b0("r2", 1); len(s.Paths) != 1 || s.Paths[0].Index == s.Paths[0].Head {
		t.Errorf("r2, a file staged after the reset: dirty %+v", s.Paths)
	}
	reset(base)
	w.git("update-ref", "--no-deref", "HEAD", second)
	if s := b0("r3", 1); len(s.Paths) != 1 || s.Paths[0].Path != "a.txt" {
		t.Errorf("r3, HEAD moved after the reset: dirty %+v", s.Paths)
	}
	reset(second)
	if s := b0("r4", 0); len(s.Paths) != 0 {
		t.Errorf("r4: dirty %+v", s.Paths)
	}
}
