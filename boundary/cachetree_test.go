package boundary

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cachedTree says what git write-tree says of the private index whenever
// it says anything, and nothing where it cannot be sure: an index of
// version 4, an unmerged entry, a change since the cache tree was
// written, its shared index gone, a tree of it gone from the object
// database (write-tree writes it again).
func TestCachedTreeAsWriteTree(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.write("d/e/b.txt", "b\n")
	r.commitAll("init")
	ctx := context.Background()
	s, err := Take(ctx, r.dir, WithRun("ct"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := openGit(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(stateDir(g.gitDir), "boundary-index")
	// git write-tree on a copy of the index (it may write the index).
	writeTree := func(index string, cfg ...string) string {
		t.Helper()
		tmp := filepath.Join(t.TempDir(), "index")
		if err := copyIndex(index, tmp); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", append(cfg, "write-tree")...)
		cmd.Dir, cmd.Env = r.dir, append(os.Environ(), "GIT_INDEX_FILE="+tmp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "error"
		}
		return strings.TrimSpace(string(out))
	}
	if got, ok := g.cachedTree(private); !ok || got != s.Tree || got != writeTree(private) {
		t.Fatalf("after a boundary: %s %v, the boundary's %s, git's %s", got, ok, s.Tree, writeTree(private))
	}
	notSure := func(name, index string) {
		t.Helper()
		if got, ok := g.cachedTree(index); ok {
			t.Errorf("%s: %s, git's %s", name, got, writeTree(index))
		}
	}
	idx := func(env []string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = r.dir, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	copyOf := func() string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "index")
		if err := copyIndex(private, p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	changed := copyOf()
	r.write("d/e/b.txt", "b, changed\n")
	idx([]string{"GIT_INDEX_FILE=" + changed}, "-c", "core.splitIndex=true", "update-index", "d/e/b.txt")
	notSure("a path changed since", changed)

	v4 := filepath.Join(t.TempDir(), "index")
	idx([]string{"GIT_INDEX_FILE=" + v4}, "read-tree", s.Tree)
	idx([]string{"GIT_INDEX_FILE=" + v4}, "update-index", "--index-version", "4")
	idx([]string{"GIT_INDEX_FILE=" + v4}, "write-tree")
	notSure("version 4", v4)
	v2 := filepath.Join(t.TempDir(), "index")
	idx([]string{"GIT_INDEX_FILE=" + v2}, "-c", "core.splitIndex=false", "read-tree", s.Tree)
	idx([]string{"GIT_INDEX_FILE=" + v2}, "-c", "core.splitIndex=false", "write-tree")
	if got, ok := g.cachedTree(v2); !ok || got != s.Tree {
		t.Errorf("an index not split: %s %v, want %s", got, ok, s.Tree)
	}

	unmerged := filepath.Join(t.TempDir(), "index")
	idx([]string{"GIT_INDEX_FILE=" + unmerged}, "read-tree", s.Tree)
	idx([]string{"GIT_INDEX_FILE=" + unmerged}, "write-tree")
	blob := strings.TrimSpace(r.git("rev-parse", s.Tree+":a.txt"))
	cmd := exec.Command("git", "update-index", "--index-info")
	cmd.Dir, cmd.Env = r.dir, append(os.Environ(), "GIT_INDEX_FILE="+unmerged)
	cmd.Stdin = strings.NewReader("100644 " + blob + " 1\tc.txt\n100644 " + blob + " 2\tc.txt\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	notSure("an unmerged entry", unmerged)

	// A tree of it gone: git writes it again.
	sub := strings.TrimSpace(r.git("rev-parse", s.Tree+":d/e"))
	obj := filepath.Join(r.dir, ".git", "objects", sub[:2], sub[2:])
	saved, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(obj)
	notSure("a tree gone", private)
	os.WriteFile(obj, saved, 0o444)

	// Its shared index gone (git expires unused ones).
	shared, _ := filepath.Glob(filepath.Join(g.gitDir, "sharedindex.*"))
	for _, f := range shared {
		os.Rename(f, f+".away")
	}
	notSure("its shared index gone", private)
	for _, f := range shared {
		os.Rename(f+".away", f)
	}
	if got, ok := g.cachedTree(private); !ok || got != s.Tree {
		t.Errorf("as it was: %s %v", got, ok)
	}
}
