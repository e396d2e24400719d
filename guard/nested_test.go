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
// repository is judged by the same rules in there (boundary.Nested). What
// was discarded is named in a concern, not blocked: the boundaries do not
// keep it. Committing it, or working on, raises nothing.
func TestCompareNested(t *testing.T) {
	t.Parallel()
	sub := func(r repo) *gittest.Repo { return gittest.At(t, r.Path("sub")) }
	dirty := func(r repo) { r.Write("sub/lib.txt", "lib work\n"); r.Write("sub/new.txt", "new\n") }
	rows := []struct {
		name    string
		nested  bool // a nested repository (no .gitmodules) instead of a submodule
		task    func(r repo)
		message string // the submodule concern's message contains it ("": none)
		others  []ConcernKind
	}{
		{name: "discarded: a concern naming the paths", task: func(r repo) {
			sub(r).Git("checkout", "-q", ".")
			sub(r).Git("clean", "-fdq")
		}, message: "submodule sub: uncommitted work in it was discarded: lib.txt (modified), new.txt (untracked)"},
		{name: "one path discarded, one kept", task: func(r repo) { sub(r).Git("checkout", "-q", "lib.txt") },
			message: "discarded: lib.txt (modified) ("},
		{name: "committed in it: nothing", task: func(r repo) { sub(r).Git("add", "-A"); sub(r).Commit("work") }},
		{name: "worked on: nothing", task: func(r repo) { r.Write("sub/lib.txt", "lib more work\n") }},
		{name: "untouched: no changes", task: func(r repo) {}, others: []ConcernKind{ConcernNoChanges}},
		{name: "removed: a concern", task: func(r repo) { os.RemoveAll(r.Path("sub")) },
			message: "submodule sub: it had uncommitted work (lib.txt (modified), new.txt (untracked)) and is no longer a repository there"},
		{name: "a nested repository discarded: a concern", nested: true, task: func(r repo) {
			sub(r).Git("checkout", "-q", ".")
			sub(r).Git("clean", "-fdq")
		}, message: "nested repository sub: uncommitted work in it was discarded: lib.txt (modified), new.txt (untracked)"},
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
			prev, err := boundary.Take(ctx, r.Dir, boundary.WithRun("test"))
			if err != nil {
				t.Fatal(err)
			}
			if n, ok := prev.NestedAt("sub"); !ok || len(n.Paths) != 2 {
				t.Fatalf("nested at the earlier boundary: %+v %v, want sub's two dirty paths", n, ok)
			}
			row.task(r)
			cur, err := boundary.Take(ctx, r.Dir, boundary.WithRun("test"), boundary.WithPrev(prev), boundary.WithTrack(prev.PathNames()...))
			if err != nil {
				t.Fatal(err)
			}
			v := Compare(prev, cur)
			if v.Blocked() {
				t.Errorf("blocked: %s", v.Summary())
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
// judged too, and the concern gives its path from the outer root.
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
	var msgs []string
	for _, c := range Compare(prev, cur).Concerns {
		if c.Kind == ConcernSubmodule {
			msgs = append(msgs, c.Path+" | "+c.Message)
		}
	}
	want := "sub/inner | nested repository sub/inner: uncommitted work in it was discarded: x.txt (modified) ("
	if len(msgs) != 1 || !strings.HasPrefix(msgs[0], want) {
		t.Errorf("concerns %q, want one starting %q", msgs, want)
	}
}
