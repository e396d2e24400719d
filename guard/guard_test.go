package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/internal/gittest"
)

func TestMain(m *testing.M) {
	home, err := gittest.Isolate("guard-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// repo is a real repository; commit is the guard tests' own.
type repo struct {
	*gittest.Repo
	t *testing.T
}

func newRepo(t *testing.T) repo {
	return repo{Repo: gittest.New(t), t: t}
}

// commit stages paths (everything when none) and commits them.
func (r repo) commit(paths ...string) {
	r.t.Helper()
	r.Git(append([]string{"add", "-A", "--"}, paths...)...)
	r.Git("commit", "-q", "--allow-empty", "-m", "c")
}

// want is what a row of TestCompare or TestCompareHeadChange expects of
// the verdict.
type want struct {
	outcomes map[string]Outcome
	blocked  bool
	concerns []ConcernKind
}

// checkVerdict checks v's outcomes, block and concern kinds against w.
func checkVerdict(t *testing.T, v Verdict, w want) {
	t.Helper()
	got := map[string]Outcome{}
	for _, p := range v.Paths {
		got[p.Path] = p.Outcome
	}
	if fmt.Sprint(got) != fmt.Sprint(w.outcomes) {
		t.Errorf("outcomes %v, want %v", got, w.outcomes)
	}
	if v.Blocked() != w.blocked {
		t.Errorf("blocked %v, want %v (%s)", v.Blocked(), w.blocked, v.Summary())
	}
	var kinds []ConcernKind
	for _, c := range v.Concerns {
		kinds = append(kinds, c.Kind)
	}
	if fmt.Sprint(kinds) != fmt.Sprint(w.concerns) {
		t.Errorf("concerns %v, want %v", v.Concerns, w.concerns)
	}
}

// compareAround builds the state at the earlier boundary with before and
// snapshots it (salvaging), makes the task's change, snapshots again with
// the options later gives for the earlier snapshot, and compares.
func compareAround(t *testing.T, r repo, before, task func(repo), later func(prev boundary.Snapshot) []boundary.Option) (boundary.Snapshot, Verdict) {
	t.Helper()
	before(r)
	ctx := context.Background()
	prev, err := boundary.Take(ctx, r.Dir, boundary.WithRun("test"))
	if err != nil {
		t.Fatal(err)
	}
	task(r)
	cur, err := boundary.Take(ctx, r.Dir, later(prev)...)
	if err != nil {
		t.Fatal(err)
	}
	return prev, Compare(prev, cur)
}

// base is a repository with a.txt, b.txt and c.txt committed.
func base(r repo) {
	r.Write("a.txt", "a base\n")
	r.Write("b.txt", "b base\n")
	r.Write("c.txt", "c base\n")
	r.commit()
}

// TestCompare: one row per case. Each row builds the state at the earlier
// boundary in a real repository, snapshots it, makes the task's change,
// snapshots again (tracking the earlier paths, as the loop does) and
// compares.
func TestCompare(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name   string
		before func(r repo)                          // the state at the earlier boundary
		task   func(r repo)                          // what the task did
		noTrak bool                                  // the later snapshot was taken without WithTrack
		track  []string                              // paths tracked beyond the earlier ones (the loop tracks none)
		check  func(t *testing.T, r repo, v Verdict) // more checks on the verdict
		after  func(t *testing.T, r repo)            // checks after a restore
		want   want
	}{
		{
			name:   "untouched",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n") },
			task:   func(r repo) {},
			want:   want{outcomes: map[string]Outcome{"a.txt": Untouched}, concerns: []ConcernKind{ConcernNoChanges}},
		},
		{
			name:   "modified further",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n") },
			task:   func(r repo) { r.Write("a.txt", "a more work\n"); r.Write("new.txt", "n\n") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Changed}},
		},
		{
			name:   "committed as-is, HEAD moved: a concern only",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n"); r.Write("n.txt", "new\n") },
			task:   func(r repo) { r.commit() },
			want:   want{outcomes: map[string]Outcome{"a.txt": Committed, "n.txt": Committed}, concerns: []ConcernKind{ConcernHeadMoved}},
		},
		{
			name:   "reverted, same HEAD: blocks",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n") },
			task:   func(r repo) { r.Git("checkout", "--", "a.txt") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Discarded}, blocked: true},
		},
		{
			name:   "reverted in the same step as a commit of other paths: blocks",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n"); r.Write("b.txt", "b work\n") },
			task:   func(r repo) { r.commit("b.txt"); r.Git("checkout", "--", "a.txt") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Discarded, "b.txt": Committed}, blocked: true},
		},
		{
			name:   "a new file deleted: blocks",
			before: func(r repo) { base(r); r.Write("n.txt", "new work\n") },
			task:   func(r repo) { r.Remove("n.txt") },
			want:   want{outcomes: map[string]Outcome{"n.txt": Discarded}, blocked: true},
		},
		{
			name:   "an earlier deletion undone: blocks",
			before: func(r repo) { base(r); r.Remove("a.txt") },
			task:   func(r repo) { r.Git("checkout", "--", "a.txt") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Discarded}, blocked: true},
		},
		{
			name:   "a deletion committed",
			before: func(r repo) { base(r); r.Remove("a.txt") },
			task:   func(r repo) { r.commit() },
			want:   want{outcomes: map[string]Outcome{"a.txt": Committed}, concerns: []ConcernKind{ConcernHeadMoved}},
		},
		{
			name:   "a rename committed",
			before: func(r repo) { base(r); r.Git("mv", "a.txt", "moved.txt") },
			task:   func(r repo) { r.commit() },
			want:   want{outcomes: map[string]Outcome{"a.txt": Committed, "moved.txt": Committed}, concerns: []ConcernKind{ConcernHeadMoved}},
		},
		{
			// This row used to want both sides discarded and a block. But
			// the content moved.txt held is back at a.txt: nothing is lost,
			// and restoring a.txt's deletion alone would remove the only
			// copy in the worktree. Both sides are moved: a concern.
			name:   "a rename undone: moved back, nothing lost",
			before: func(r repo) { base(r); r.Git("mv", "a.txt", "moved.txt") },
			task:   func(r repo) { r.Git("mv", "moved.txt", "a.txt") },
			check: func(t *testing.T, r repo, v Verdict) {
				for _, p := range v.Paths {
					if p.Path == "moved.txt" && p.MovedTo != "a.txt" || p.Path == "a.txt" && p.MovedFrom != "moved.txt" {
						t.Errorf("%+v", p)
					}
				}
			},
			want: want{outcomes: map[string]Outcome{"a.txt": Moved, "moved.txt": Moved}, concerns: []ConcernKind{ConcernMoved}},
		},
		{
			// Found by the property test: with a copy of the content at a
			// third path, found first, the undone rename blocked.
			name:   "a rename undone while a copy exists: moved back, nothing lost",
			before: func(r repo) { base(r); r.Git("mv", "a.txt", "moved.txt") },
			task:   func(r repo) { r.Write("copy.txt", "a base\n"); r.Git("mv", "moved.txt", "a.txt") },
			want: want{outcomes: map[string]Outcome{"a.txt": Moved, "moved.txt": Moved},
				concerns: []ConcernKind{ConcernMoved}},
		},
		{
			name:   "a rename of edited content undone by a reset: the edit is lost, both sides block",
			before: func(r repo) { base(r); r.Git("mv", "a.txt", "moved.txt"); r.Write("moved.txt", "a edited\n") },
			task:   func(r repo) { r.Git("reset", "-q", "--hard") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Discarded, "moved.txt": Discarded}, blocked: true},
		},
		{
			name:   "a new file moved: a concern, its content at the new path",
			before: func(r repo) { base(r); r.Write("foo.go", "package foo\n") },
			task: func(r repo) {
				if err := os.Rename(filepath.Join(r.Dir, "foo.go"), filepath.Join(r.Dir, "bar.go")); err != nil {
					r.t.Fatal(err)
				}
			},
			check: func(t *testing.T, r repo, v Verdict) {
				if p := v.Paths[0]; p.MovedTo != "bar.go" || v.Moved != 1 {
					t.Errorf("%+v", v)
				}
				if got, _ := os.ReadFile(filepath.Join(r.Dir, "bar.go")); string(got) != "package foo\n" {
					t.Errorf("bar.go holds %q", got)
				}
				if c := v.Concerns[0]; c.Message != "foo.go moved to bar.go" || c.Path != "foo.go" {
					t.Errorf("%+v", c)
				}
				if s := v.Summary(); s != "HEAD unchanged at "+short(v.CurHead)+": 1 path moved" {
					t.Errorf("summary %q", s)
				}
			},
			want: want{outcomes: map[string]Outcome{"foo.go": Moved}, concerns: []ConcernKind{ConcernMoved}},
		},
		{
			name:   "a new file moved with git mv after git add",
			before: func(r repo) { base(r); r.Write("foo.go", "package foo\n"); r.Git("add", "foo.go") },
			task:   func(r repo) { r.Git("mv", "foo.go", "bar.go") },
			want:   want{outcomes: map[string]Outcome{"foo.go": Moved}, concerns: []ConcernKind{ConcernMoved}},
		},
		{
			// Compare reads no HEAD tree: a committed new path is seen only
			// if the later snapshot tracked it. The loop tracks the earlier
			// dirty paths only, so a rename committed in the same task still
			// blocks; the restore writes foo.go back beside bar.go and
			// overwrites nothing.
			name:   "a new file moved and the new path committed, loop tracking: still blocks",
			before: func(r repo) { base(r); r.Write("foo.go", "package foo\n") },
			task: func(r repo) {
				r.Remove("foo.go")
				r.Write("bar.go", "package foo\n")
				r.commit()
			},
			want: want{outcomes: map[string]Outcome{"foo.go": Discarded}, blocked: true},
		},
		{
			name:   "a new file moved and the new path committed, new path tracked: moved",
			before: func(r repo) { base(r); r.Write("foo.go", "package foo\n") },
			task:   func(r repo) { r.Remove("foo.go"); r.Write("bar.go", "package foo\n"); r.commit() },
			track:  []string{"bar.go"},
			check: func(t *testing.T, r repo, v Verdict) {
				if p := v.Paths[0]; p.MovedTo != "bar.go" {
					t.Errorf("%+v", p)
				}
			},
			want: want{outcomes: map[string]Outcome{"foo.go": Moved}, concerns: []ConcernKind{ConcernMoved, ConcernHeadMoved}},
		},
		{
			// The earlier content is nowhere now: the guard cannot tell an
			// edit after a move from a deletion and a new file. Restore
			// writes foo.go back and leaves bar.go alone.
			name:   "a new file moved then edited: blocks, the old content is nowhere",
			before: func(r repo) { base(r); r.Write("foo.go", "package foo\n") },
			task:   func(r repo) { r.Remove("foo.go"); r.Write("bar.go", "package bar\n") },
			after: func(t *testing.T, r repo) {
				for path, want := range map[string]string{"foo.go": "package foo\n", "bar.go": "package bar\n"} {
					if got, _ := os.ReadFile(filepath.Join(r.Dir, path)); string(got) != want {
						t.Errorf("%s holds %q, want %q", path, got, want)
					}
				}
			},
			want: want{outcomes: map[string]Outcome{"foo.go": Discarded}, blocked: true},
		},
		{
			name:   "a moved file's executable bit dropped: content is id and mode, blocks",
			before: func(r repo) { base(r); r.Write("run.sh", "echo\n"); os.Chmod(filepath.Join(r.Dir, "run.sh"), 0o755) },
			task:   func(r repo) { r.Remove("run.sh"); r.Write("bin.sh", "echo\n") },
			want:   want{outcomes: map[string]Outcome{"run.sh": Discarded}, blocked: true},
		},
		{
			name:   "an edit reverted while a copy of it survives elsewhere: moved",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n") },
			task:   func(r repo) { r.Write("copy.txt", "a work\n"); r.Git("checkout", "--", "a.txt") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Moved}, concerns: []ConcernKind{ConcernMoved}},
		},
		{
			name: "a new file restored from the index (git checkout -- path): the unstaged work blocks",
			before: func(r repo) {
				base(r)
				r.Write("keep.txt", "v1\n")
				r.Git("add", "keep.txt")
				r.Write("keep.txt", "v2 more work\n")
			},
			task: func(r repo) { r.Git("checkout", "--", "keep.txt") },
			check: func(t *testing.T, r repo, v Verdict) {
				if p := v.Paths[0]; p.RevertedTo != "index" {
					t.Errorf("%+v", p)
				}
			},
			after: func(t *testing.T, r repo) {
				if got, _ := os.ReadFile(filepath.Join(r.Dir, "keep.txt")); string(got) != "v2 more work\n" {
					t.Errorf("keep.txt holds %q after restore", got)
				}
			},
			want: want{outcomes: map[string]Outcome{"keep.txt": Discarded}, blocked: true},
		},
		{
			name: "a tracked file restored from the index (git restore path): blocks",
			before: func(r repo) {
				base(r)
				r.Write("a.txt", "a staged\n")
				r.Git("add", "a.txt")
				r.Write("a.txt", "a staged and more\n")
			},
			task: func(r repo) { r.Git("restore", "a.txt") },
			after: func(t *testing.T, r repo) {
				if got, _ := os.ReadFile(filepath.Join(r.Dir, "a.txt")); string(got) != "a staged and more\n" {
					t.Errorf("a.txt holds %q after restore", got)
				}
				if got := r.Git("show", ":a.txt"); got != "a staged\n" {
					t.Errorf("index %q", got)
				}
			},
			want: want{outcomes: map[string]Outcome{"a.txt": Discarded}, blocked: true},
		},
		{
			name: "git checkout . restores every path from the index: blocks on the unstaged ones",
			before: func(r repo) {
				base(r)
				r.Write("a.txt", "a staged\n")
				r.Write("b.txt", "b staged\n")
				r.Git("add", "a.txt", "b.txt")
				r.Write("a.txt", "a staged and more\n")
				r.Write("c.txt", "c unstaged\n")
			},
			task: func(r repo) { r.Git("checkout", ".") },
			want: want{outcomes: map[string]Outcome{"a.txt": Discarded, "b.txt": Untouched, "c.txt": Discarded}, blocked: true},
		},
		{
			name: "staged work kept, only the worktree matched to the index: fully staged, untouched",
			before: func(r repo) {
				base(r)
				r.Write("a.txt", "a staged\n")
				r.Git("add", "a.txt")
			},
			task: func(r repo) { r.Git("restore", "a.txt") },
			want: want{outcomes: map[string]Outcome{"a.txt": Untouched}, concerns: []ConcernKind{ConcernNoChanges}},
		},
		{
			name:   "a renamed file edited further",
			before: func(r repo) { base(r); r.Git("mv", "a.txt", "moved.txt") },
			task:   func(r repo) { r.Write("moved.txt", "edited after the move\n") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Untouched, "moved.txt": Changed}},
		},
		{
			name:   "blank HEAD at the earlier boundary: first commit keeps one, loses another",
			before: func(r repo) { r.Write("a.txt", "a\n"); r.Write("b.txt", "b\n") },
			task:   func(r repo) { r.commit("a.txt"); r.Remove("b.txt") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Committed, "b.txt": Discarded}, blocked: true},
		},
		{
			name:   "blank HEAD at the earlier boundary: everything committed",
			before: func(r repo) { r.Write("a.txt", "a\n") },
			task:   func(r repo) { r.commit() },
			want:   want{outcomes: map[string]Outcome{"a.txt": Committed}, concerns: []ConcernKind{ConcernHeadMoved}},
		},
		{
			name:   "blank HEAD on both sides: a deleted file blocks",
			before: func(r repo) { r.Write("a.txt", "a\n"); r.Write("b.txt", "b\n") },
			task:   func(r repo) { r.Remove("a.txt") },
			want:   want{outcomes: map[string]Outcome{"a.txt": Discarded, "b.txt": Untouched}, blocked: true},
		},
		{
			name:   "blank HEAD at the later boundary (orphan branch): a revert still blocks",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n"); r.Write("b.txt", "b work\n") },
			task: func(r repo) {
				r.Git("checkout", "-q", "--orphan", "fresh")
				r.Git("rm", "-q", "-r", "-f", "--cached", ".")
				r.Write("a.txt", "a base\n")
			},
			want: want{outcomes: map[string]Outcome{"a.txt": Discarded, "b.txt": Untouched}, blocked: true},
		},
		{
			name:   "one file committed with more edits, another reverted",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n"); r.Write("b.txt", "b work\n") },
			task: func(r repo) {
				r.Write("a.txt", "a work and more\n")
				r.commit("a.txt")
				r.Git("checkout", "--", "b.txt")
			},
			want: want{outcomes: map[string]Outcome{"a.txt": Changed, "b.txt": Discarded}, blocked: true},
		},
		{
			name: "an executable bit reverted",
			before: func(r repo) {
				base(r)
				os.Chmod(filepath.Join(r.Dir, "a.txt"), 0o755)
			},
			task: func(r repo) { os.Chmod(filepath.Join(r.Dir, "a.txt"), 0o644) },
			want: want{outcomes: map[string]Outcome{"a.txt": Discarded}, blocked: true},
		},
		{
			name:   "HEAD moved without tracking: unverified, never guessed",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n") },
			task:   func(r repo) { r.commit() },
			noTrak: true,
			want:   want{outcomes: map[string]Outcome{"a.txt": Unverified}, concerns: []ConcernKind{ConcernUnverified, ConcernHeadMoved}},
		},
		{
			name:   "reverted without tracking but same HEAD: still proven",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n") },
			task:   func(r repo) { r.Git("checkout", "--", "a.txt") },
			noTrak: true,
			want:   want{outcomes: map[string]Outcome{"a.txt": Discarded}, blocked: true},
		},
		{
			name: "a conflict left behind",
			before: func(r repo) {
				base(r)
				r.Git("checkout", "-q", "-b", "other")
				r.Write("c.txt", "theirs\n")
				r.commit()
				r.Git("checkout", "-q", "main")
				r.Write("c.txt", "ours\n")
				r.commit()
				r.Write("a.txt", "a work\n")
			},
			task: func(r repo) {
				r.GitErr("merge", "-q", "other") // conflicts on c.txt; a.txt is untouched by the merge
			},
			want: want{outcomes: map[string]Outcome{"a.txt": Untouched}, concerns: []ConcernKind{ConcernConflicted}},
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t)
			ctx := context.Background()
			prev, v := compareAround(t, r, row.before, row.task, func(prev boundary.Snapshot) []boundary.Option {
				if row.noTrak {
					return nil
				}
				return []boundary.Option{boundary.WithTrack(append(prev.PathNames(), row.track...)...)}
			})
			checkVerdict(t, v, row.want)
			if row.check != nil {
				row.check(t, r, v)
			}
			// Every lost path carries what Restore needs (its base is what
			// it was reverted to: HEAD's or the index's content then), and
			// restoring brings the earlier content back exactly.
			for i, l := range v.Lost {
				e, _ := prev.Lookup(l.Path)
				base := e.Head
				if p := v.Paths[slices.IndexFunc(v.Paths, func(p PathResult) bool { return p.Path == l.Path })]; p.RevertedTo == "index" {
					base = e.Index
				}
				if l.Lost != e.Worktree || l.Base != base {
					t.Errorf("lost[%d] %+v, earlier entry %+v", i, l, e)
				}
			}
			if v.Blocked() {
				res, err := boundary.Restore(ctx, r.Dir, v.Lost, false)
				if err != nil {
					t.Fatalf("restore: %v (%+v)", err, res)
				}
				after, err := boundary.Take(ctx, r.Dir, boundary.WithTrack(prev.PathNames()...))
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range v.Lost {
					if c, _, _ := after.Content(l.Path); !c.Same(l.Lost) {
						t.Errorf("after restore %s holds %+v, want %+v", l.Path, c, l.Lost)
					}
				}
				if again := Compare(prev, after); again.Blocked() {
					t.Errorf("still blocked after restore: %s", again.Summary())
				}
				if row.after != nil {
					row.after(t, r)
				}
			}
		})
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	h1, h2 := strings.Repeat("a1b2", 10), strings.Repeat("c3d4", 10)
	var paths []boundary.Entry
	var tracked = map[string]boundary.Blob{}
	for i := 0; i < 9; i++ {
		p := fmt.Sprintf("f%d", i)
		w := boundary.Blob{Hash: strings.Repeat(fmt.Sprint(i), 40), Mode: boundary.ModeRegular}
		paths = append(paths, boundary.Entry{Path: p, Status: boundary.StatusModified, Worktree: w, Head: boundary.Blob{Hash: strings.Repeat("e", 40), Mode: boundary.ModeRegular}})
		tracked[p] = w
	}
	paths = append(paths, boundary.Entry{Path: "g", Worktree: boundary.Blob{Hash: strings.Repeat("9", 40), Mode: boundary.ModeRegular}})
	tracked["g"] = boundary.Blob{Hash: strings.Repeat("8", 40), Mode: boundary.ModeRegular}
	v := Compare(boundary.Snapshot{Head: h1, Paths: paths}, boundary.Snapshot{Head: h2, Tracked: tracked})
	if got, want := v.Summary(), "HEAD moved a1b2a1b -> c3d4c3d: 9 paths committed as-is; 1 path changed further"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if v.Committed != 9 || v.Changed != 1 || v.Blocked() {
		t.Errorf("%+v", v)
	}
}

// TestComparePure: hand-built snapshots for the rules that need no repo,
// including unknown content, which is never equal to anything.
func TestComparePure(t *testing.T) {
	t.Parallel()
	blob := func(c string) boundary.Blob {
		return boundary.Blob{Hash: strings.Repeat(c, 40), Mode: boundary.ModeRegular}
	}
	unknown := boundary.Blob{Mode: boundary.ModeGitlink}
	prev := boundary.Snapshot{Head: "", Paths: []boundary.Entry{
		{Path: "new", Worktree: blob("1")},
		{Path: "sub", Worktree: unknown},
	}}
	cur := boundary.Snapshot{Head: "", Paths: []boundary.Entry{{Path: "sub", Worktree: unknown}}}
	v := Compare(prev, cur)
	if !v.Blocked() || v.Paths[0].Outcome != Discarded || v.Paths[1].Outcome != Unverified {
		t.Errorf("%+v", v)
	}
	// A conflicted entry has no stage-0 index content (Index absent): its
	// deletion is not a revert to the index. A `git rm --cached` file
	// (index absent, worktree neither h nor i) deleted is one.
	h := boundary.Blob{Hash: strings.Repeat("e", 40), Mode: boundary.ModeRegular}
	prev = boundary.Snapshot{Head: "x", Paths: []boundary.Entry{
		{Path: "c", Status: boundary.StatusConflicted, Head: h, Worktree: blob("2")},
		{Path: "u", Status: boundary.StatusUntracked, Head: h, Worktree: blob("3")},
	}}
	v = Compare(prev, boundary.Snapshot{Head: "x", Tracked: map[string]boundary.Blob{"c": {}, "u": {}}})
	if v.Paths[0].Outcome != Changed || v.Paths[1].Outcome != Discarded || len(v.Lost) != 1 || v.Lost[0].Base != (boundary.Blob{}) {
		t.Errorf("%+v", v)
	}
	// Moved needs the same id and mode; the first path holding it wins.
	prev = boundary.Snapshot{Head: "", Paths: []boundary.Entry{{Path: "m", Worktree: blob("4")}}}
	exec := boundary.Blob{Hash: blob("4").Hash, Mode: boundary.ModeExecutable}
	v = Compare(prev, boundary.Snapshot{Head: "", Paths: []boundary.Entry{{Path: "x", Worktree: exec}, {Path: "y", Worktree: blob("4")}, {Path: "z", Worktree: blob("4")}}})
	if v.Paths[0].Outcome != Moved || v.Paths[0].MovedTo != "y" || v.Blocked() {
		t.Errorf("%+v", v)
	}
	// No earlier dirty paths and nothing moved: no changes.
	v = Compare(boundary.Snapshot{Head: "x"}, boundary.Snapshot{Head: "x"})
	if len(v.Concerns) != 1 || v.Concerns[0].Kind != ConcernNoChanges || v.Blocked() {
		t.Errorf("%+v", v)
	}
	if !slices.ContainsFunc(v.Concerns, func(c Concern) bool { return strings.Contains(c.Message, "no changes") }) {
		t.Errorf("%+v", v.Concerns)
	}
}

// TestCompareHeadChange: the later snapshot is taken as the loop takes it,
// with WithPrevHead, so that a HEAD move is judged by what it did to the
// commits: a rewrite that took committed content away blocks, and a
// restore brings it back byte for byte.
func TestCompareHeadChange(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name   string
		before func(r repo)
		task   func(r repo)
		check  func(t *testing.T, r repo, v Verdict)
		want   want
	}{
		{
			name: "reset --hard HEAD~1 drops a committed file and a swept-in edit: blocks",
			before: func(r repo) {
				base(r)
				r.Write("keep.txt", "keep\n")
				r.Write("a.txt", "the user's edit\n")
				r.commit()
			},
			task: func(r repo) { r.Git("reset", "-q", "--hard", "HEAD~1") },
			check: func(t *testing.T, r repo, v Verdict) {
				if !v.HeadRewritten || v.Pinned == "" {
					t.Errorf("rewritten %v pinned %q", v.HeadRewritten, v.Pinned)
				}
				if !strings.HasPrefix(v.Summary(), "BLOCKED: HEAD rewritten ") {
					t.Errorf("summary %q", v.Summary())
				}
				// The run's boundary chain keeps the dropped commit: the
				// earlier boundary's parent.
				if got := strings.TrimSpace(r.Git("rev-parse", v.Pinned+"^1^1")); got != v.PrevHead {
					t.Errorf("%s^1^1 at %s, want %s", v.Pinned, got, v.PrevHead)
				}
			},
			want: want{outcomes: map[string]Outcome{"a.txt": Discarded, "keep.txt": Discarded}, blocked: true},
		},
		{
			name: "reset --hard HEAD~1 also discards uncommitted work on top",
			before: func(r repo) {
				base(r)
				r.Write("keep.txt", "keep\n")
				r.commit()
				r.Write("keep.txt", "keep and more\n")
			},
			task: func(r repo) { r.Git("reset", "-q", "--hard", "HEAD~1") },
			want: want{outcomes: map[string]Outcome{"keep.txt": Discarded}, blocked: true},
		},
		{
			name: "reset --mixed HEAD~1 keeps the content in the worktree: a concern",
			before: func(r repo) {
				base(r)
				r.Write("keep.txt", "keep\n")
				r.commit()
			},
			task: func(r repo) { r.Git("reset", "-q", "HEAD~1") },
			want: want{outcomes: map[string]Outcome{"keep.txt": Untouched}, concerns: []ConcernKind{ConcernHeadRewritten}},
		},
		{
			name: "amend dropping a file an earlier task committed: blocks",
			before: func(r repo) {
				base(r)
				r.Write("keep.txt", "keep\n")
				r.Write("other.txt", "other\n")
				r.commit()
			},
			task: func(r repo) {
				r.Git("rm", "-q", "keep.txt")
				r.Git("commit", "-q", "--amend", "-m", "amended")
			},
			want: want{outcomes: map[string]Outcome{"keep.txt": Discarded}, blocked: true},
		},
		{
			name: "amend only adding: a concern",
			before: func(r repo) {
				base(r)
				r.Write("keep.txt", "keep\n")
				r.commit()
			},
			task: func(r repo) {
				r.Write("more.txt", "more\n")
				r.Git("add", "more.txt")
				r.Git("commit", "-q", "--amend", "-m", "amended")
			},
			check: func(t *testing.T, r repo, v Verdict) {
				if len(v.Concerns) == 0 || !strings.Contains(v.Concerns[0].Message, "is no longer an ancestor") ||
					!strings.Contains(v.Concerns[0].Message, "its content is kept") {
					t.Errorf("concerns %+v", v.Concerns)
				}
			},
			want: want{outcomes: map[string]Outcome{}, concerns: []ConcernKind{ConcernHeadRewritten}},
		},
		{
			name: "amend changing a committed file further: a concern, not a block",
			before: func(r repo) {
				base(r)
				r.Write("keep.txt", "keep\n")
				r.commit()
			},
			task: func(r repo) {
				r.Write("keep.txt", "keep, improved\n")
				r.Git("commit", "-q", "-a", "--amend", "-m", "amended")
			},
			want: want{outcomes: map[string]Outcome{"keep.txt": Changed}, concerns: []ConcernKind{ConcernHeadRewritten}},
		},
		{
			name: "branch switch with the old branch kept: a concern",
			before: func(r repo) {
				base(r)
				r.Git("branch", "other")
				r.Write("keep.txt", "keep\n")
				r.commit()
			},
			task: func(r repo) { r.Git("checkout", "-q", "other") },
			check: func(t *testing.T, r repo, v Verdict) {
				if len(v.Concerns) == 0 || !strings.Contains(v.Concerns[0].Message, "branch other") ||
					!strings.Contains(v.Concerns[0].Message, "still on main") {
					t.Errorf("concerns %+v", v.Concerns)
				}
			},
			want: want{outcomes: map[string]Outcome{}, concerns: []ConcernKind{ConcernBranchSwitch}},
		},
		{
			name:   "committed rename of uncommitted work: moved, no block",
			before: func(r repo) { base(r); r.Write("keep.txt", "keep\n") },
			task: func(r repo) {
				os.Rename(filepath.Join(r.Dir, "keep.txt"), filepath.Join(r.Dir, "kept.txt"))
				r.commit()
			},
			check: func(t *testing.T, r repo, v Verdict) {
				if v.Paths[0].MovedTo != "kept.txt" {
					t.Errorf("%+v", v.Paths[0])
				}
			},
			want: want{outcomes: map[string]Outcome{"keep.txt": Moved}, concerns: []ConcernKind{ConcernMoved, ConcernHeadMoved}},
		},
		{
			name:   "new commits on top: a HEAD move concern as before",
			before: func(r repo) { base(r); r.Write("a.txt", "a work\n") },
			task:   func(r repo) { r.commit() },
			want:   want{outcomes: map[string]Outcome{"a.txt": Committed}, concerns: []ConcernKind{ConcernHeadMoved}},
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t)
			ctx := context.Background()
			prev, v := compareAround(t, r, row.before, row.task, func(prev boundary.Snapshot) []boundary.Option {
				return []boundary.Option{boundary.WithTrack(prev.PathNames()...),
					boundary.WithPrev(prev), boundary.WithRun("test")}
			})
			checkVerdict(t, v, row.want)
			if row.check != nil {
				row.check(t, r, v)
			}
			if !v.Blocked() {
				return
			}
			// What was lost is what the dropped commit (or the earlier
			// worktree) held: restore writes it back byte for byte.
			want := map[string]string{}
			for _, l := range v.Lost {
				if e, dirty := prev.Lookup(l.Path); dirty {
					want[l.Path] = r.Git("cat-file", "blob", e.Worktree.Hash)
				} else {
					want[l.Path] = r.Git("show", prev.Head+":"+l.Path)
				}
			}
			r.Git("reflog", "expire", "--expire=now", "--all")
			r.Git("gc", "-q", "--prune=now")
			if res, err := boundary.Restore(ctx, r.Dir, v.Lost, false); err != nil {
				t.Fatalf("restore: %v (%+v)", err, res)
			}
			for p, w := range want {
				b, err := os.ReadFile(filepath.Join(r.Dir, p))
				if err != nil || string(b) != w {
					t.Errorf("after restore %s = %q (%v), want %q", p, b, err, w)
				}
			}
		})
	}
}
