package guard

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/internal/gittest"
)

// withSubmodule is a repository with a.txt and a submodule at sub (lib.txt,
// one commit), committed.
func withSubmodule(t *testing.T) repo {
	lib := gittest.New(t)
	lib.Write("lib.txt", "lib base\n")
	lib.Commit("lib")
	r := newRepo(t)
	base(r)
	r.Git("-c", "protocol.file.allow=always", "submodule", "add", "-q", lib.Dir, "sub")
	r.commit()
	return r
}

// nestedRepo makes a repository at dir (in another's work tree) with one
// committed file.
func nestedRepo(t *testing.T, dir, file, content string) *gittest.Repo {
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := gittest.At(t, dir)
	n.Git("init", "-q")
	n.Write(file, content)
	n.Commit("nested")
	return n
}

// TestCompareNested: work uncommitted inside a submodule or a nested
// repository is judged by the same rules in there (boundary.Nested). The
// boundaries commit its tree in that repository, so what was discarded
// blocks, each lost path from the outer root with the repository that
// keeps it (LostContent.Repo), and restore writes it back from there.
// Snapshots that were not committed (read-only) name it in a concern.
// Committing it, or working on, raises nothing.
func TestCompareNested(t *testing.T) {
	t.Parallel()
	sub := func(r repo) *gittest.Repo { return gittest.At(t, r.Path("sub")) }
	dirty := func(r repo) { r.Write("sub/lib.txt", "lib work\n"); r.Write("sub/new.txt", "new\n") }
	discard := func(r repo) {
		sub(r).Git("checkout", "-q", ".")
		sub(r).Git("clean", "-fdq")
	}
	rows := []struct {
		name     string
		nested   bool // a nested repository (no .gitmodules) instead of a submodule
		readOnly bool // snapshots taken without WithRun
		task     func(r repo)
		lost     []string // blocked, these lost (and restored)
		message  string   // the submodule concern's message contains it ("": none)
		others   []ConcernKind
	}{
		{name: "discarded: blocks, restored", task: discard, lost: []string{"sub/lib.txt", "sub/new.txt"}},
		{name: "one path discarded, one kept", task: func(r repo) { sub(r).Git("checkout", "-q", "lib.txt") },
			lost: []string{"sub/lib.txt"}},
		{name: "read-only: a concern naming the paths", readOnly: true, task: discard,
			message: "submodule sub: uncommitted work in it was discarded: lib.txt (modified), new.txt (untracked)"},
		{name: "committed in it: nothing", task: func(r repo) { sub(r).Git("add", "-A"); sub(r).Commit("work") }},
		{name: "worked on: nothing", task: func(r repo) { r.Write("sub/lib.txt", "lib more work\n") }},
		{name: "untouched: no changes", task: func(r repo) {}, others: []ConcernKind{ConcernNoChanges}},
		{name: "removed: a concern", task: func(r repo) { os.RemoveAll(r.Path("sub")) },
			message: "submodule sub: it had uncommitted work (lib.txt (modified), new.txt (untracked)) and is no longer a repository there"},
		{name: "a nested repository discarded: blocks", nested: true, task: discard, lost: []string{"sub/lib.txt", "sub/new.txt"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			var r repo
			if row.nested {
				r = newRepo(t)
				base(r)
				nestedRepo(t, r.Path("sub"), "lib.txt", "lib base\n")
			} else {
				r = withSubmodule(t)
			}
			dirty(r)
			ctx := context.Background()
			run := []boundary.Option{boundary.WithRun("test")}
			if row.readOnly {
				run = nil
			}
			prev, err := boundary.Take(ctx, r.Dir, run...)
			if err != nil {
				t.Fatal(err)
			}
			if n, ok := prev.NestedAt("sub"); !ok || len(n.Paths) != 2 {
				t.Fatalf("nested at the earlier boundary: %+v %v, want sub's two dirty paths", n, ok)
			}
			row.task(r)
			cur, err := boundary.Take(ctx, r.Dir, append(run, boundary.WithPrev(prev), boundary.WithTrack(prev.PathNames()...))...)
			if err != nil {
				t.Fatal(err)
			}
			v := Compare(prev, cur)
			var lost []string
			for _, l := range v.Lost {
				lost = append(lost, l.Path)
				if l.Repo != "sub" {
					t.Errorf("lost %s in repository %q, want sub", l.Path, l.Repo)
				}
			}
			if strings.Join(lost, " ") != strings.Join(row.lost, " ") {
				t.Errorf("lost %q, want %q (%s)", lost, row.lost, v.Summary())
			}
			if len(row.lost) > 0 {
				if _, err := boundary.Restore(ctx, r.Dir, v.Lost, false); err != nil {
					t.Fatal(err)
				}
				if got := readFile(t, r.Path("sub/lib.txt")); got != "lib work\n" {
					t.Errorf("sub/lib.txt restored as %q", got)
				}
			}
			var msgs []string
			var others []ConcernKind
			for _, c := range v.Concerns {
				if c.Kind == ConcernSubmodule {
					msgs = append(msgs, c.Message)
				} else {
					others = append(others, c.Kind)
				}
			}
			got := strings.Join(msgs, "\n")
			if row.message == "" && got != "" || !strings.Contains(got, row.message) {
				t.Errorf("submodule concerns %q, want %q", got, row.message)
			}
			if len(msgs) > 1 {
				t.Errorf("%d submodule concerns, want one", len(msgs))
			}
			if len(others) != len(row.others) || len(others) > 0 && others[0] != row.others[0] {
				t.Errorf("other concerns %v, want %v", others, row.others)
			}
		})
	}
}

// TestCompareNestedTwoLevels: a repository nested in a submodule is
// judged too: its discard blocks, named from the outer root, and restore
// writes it back from that repository.
func TestCompareNestedTwoLevels(t *testing.T) {
	t.Parallel()
	r := withSubmodule(t)
	inner := nestedRepo(t, r.Path("sub/inner"), "x.txt", "x base\n")
	inner.Write("x.txt", "x work\n")
	ctx := context.Background()
	prev, err := boundary.Take(ctx, r.Dir, boundary.WithRun("test"))
	if err != nil {
		t.Fatal(err)
	}
	inner.Git("checkout", "-q", ".")
	cur, err := boundary.Take(ctx, r.Dir, boundary.WithRun("test"), boundary.WithPrev(prev), boundary.WithTrack(prev.PathNames()...))
	if err != nil {
		t.Fatal(err)
	}
	v := Compare(prev, cur)
	if len(v.Lost) != 1 || v.Lost[0].Path != "sub/inner/x.txt" || v.Lost[0].Repo != "sub/inner" {
		t.Fatalf("lost %+v, want sub/inner/x.txt in sub/inner", v.Lost)
	}
	if _, err := boundary.Restore(ctx, r.Dir, v.Lost, false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, r.Path("sub/inner/x.txt")); got != "x work\n" {
		t.Errorf("restored as %q", got)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
