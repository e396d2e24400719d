package boundary

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Nested is the snapshot of a submodule or nested repository, taken by
// Take of the outer work tree: its own dirty set, paths relative to its
// own root. The outer tree records only the commit checked out in it (a
// 160000 gitlink), so this is the only record of the work uncommitted
// inside it. Taken by a boundary (WithRun), it is a boundary of that
// repository: its tree committed there, on its own
// refs/implloop/runs/<run>, so what the guard sees discarded in it can be
// restored (LostContent.Repo). A read-only Take writes nothing to it.
type Nested struct {
	// Path is the nested repository's path in the outer work tree.
	Path string `json:"path"`
	// Submodule: .gitmodules declares it (else it is a repository that
	// merely sits in the work tree).
	Submodule bool `json:"submodule,omitempty"`
	Snapshot
}

// nested snapshots the outer work tree's nested repositories that may
// hold uncommitted work: the submodules git status finds modified or with
// untracked files inside, gitlinks of the dirty set (a new nested
// repository, a submodule moved to another commit), and those dirty at
// the previous boundary (so that the guard can tell their work committed
// from discarded). Without .gitmodules, gitlinks or a previous one, it
// runs no git at all.
func (t *taker) nested(entries []Entry) ([]Nested, error) {
	want := map[string]bool{}
	for _, e := range entries {
		if e.Worktree.Mode == ModeGitlink {
			want[e.Path] = true
		}
	}
	prev := map[string]Nested{}
	if t.o.prev != nil {
		for _, n := range t.o.prev.Nested {
			if len(n.Paths) > 0 {
				prev[n.Path], want[n.Path] = n, true
			}
		}
	}
	declared, dirty, err := t.submodules()
	if err != nil {
		return nil, err
	}
	for _, p := range dirty {
		want[p] = true
	}
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var out []Nested
	for _, p := range paths {
		dir := filepath.Join(t.g.root, filepath.FromSlash(p))
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
			continue // not checked out (or gone): nothing uncommitted in it
		}
		var opts []Option
		if t.o.run != "" {
			// Its own boundary: the tree committed in that repository,
			// on its refs/implloop/runs/<run>, so that what the guard
			// sees discarded in it can be restored.
			opts = append(opts, WithRun(t.o.run), WithLabel(t.o.label))
		}
		if pn, ok := prev[p]; ok {
			opts = append(opts, WithPrev(pn.Snapshot), WithTrack(pn.PathNames()...))
		}
		s, err := Take(t.g.ctx, dir, opts...)
		if err != nil {
			t.problems = append(t.problems, fmt.Sprintf("%s: nested repository: %v", p, err))
			continue
		}
		if len(s.Paths) == 0 && prev[p].Path == "" {
			continue
		}
		s.Root = ""
		if s.Commit == "" {
			s.Tree = "" // read-only: the tree was never written
		}
		out = append(out, Nested{Path: p, Submodule: declared[p], Snapshot: s})
	}
	return out, nil
}

// submodules reads the submodules .gitmodules declares, and lists those
// with modified or untracked content inside, as git status tells from
// their "S.MU" field.
func (t *taker) submodules() (declared map[string]bool, dirty []string, err error) {
	if _, err := os.Lstat(filepath.Join(t.g.root, ".gitmodules")); err != nil {
		return nil, nil, nil
	}
	out, _, err := t.g.run(nil, nil, "config", "-z", "-f", ".gitmodules", "--get-regexp", `^submodule\..*\.path$`)
	if err != nil {
		return nil, nil, nil // no submodule declared (git config exits 1)
	}
	declared = map[string]bool{}
	var specs []string
	for _, rec := range strings.Split(string(out), "\x00") {
		if _, p, ok := strings.Cut(rec, "\n"); ok && validRepoPath(path.Clean(p)) {
			declared[path.Clean(p)] = true
			specs = append(specs, ":(top,literal)"+path.Clean(p))
		}
	}
	if len(specs) == 0 {
		return declared, nil, nil
	}
	args := append([]string{"status", "--porcelain=v2", "-z", "--ignore-submodules=none", "--untracked-files=no", "--"}, specs...)
	st, _, err := t.g.run(nil, nil, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("submodules: %w", err)
	}
	for _, rec := range bytes.Split(st, []byte{0}) {
		// 1 XY sub mH mI mW hH hI path
		f := strings.SplitN(string(rec), " ", 9)
		if len(f) == 9 && f[0] == "1" && len(f[2]) == 4 && f[2][0] == 'S' && (f[2][2] == 'M' || f[2][3] == 'U') {
			dirty = append(dirty, f[8])
		}
	}
	return declared, dirty, nil
}

// NestedAt returns the snapshot of the nested repository at path, if
// Take took one.
func (s Snapshot) NestedAt(path string) (Nested, bool) {
	for _, n := range s.Nested {
		if n.Path == path {
			return n, true
		}
	}
	return Nested{}, false
}
