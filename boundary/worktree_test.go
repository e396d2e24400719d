package boundary

import (
	"context"
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
