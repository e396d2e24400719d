package boundary

import (
	"bytes"
	"fmt"
	"strings"
)

// addChanged brings the private boundary index up to date with the work
// tree the way `git add -A` would, for less: `git status` against the
// private index lists what differs from it (the index column of its
// answer is ignored: the private index holds the previous snapshot, not
// what is staged), and `git update-index` adds or removes just those
// paths. At 100,000 files it is the status that costs, and on the private
// index it is cheaper than the user's own `git status`, because the index
// keeps an untracked cache (core.untrackedCache, set on the command line:
// the user's configuration is left alone), which `git add` never uses: it
// spares reading the directories that did not change. The status writes
// the index it refreshed (GIT_OPTIONAL_LOCKS=1), so the stat data and the
// untracked cache carry over to the next boundary.
//
// Submodules are compared by the commit checked out in them
// (--ignore-submodules=dirty, which also overrides the user's
// submodule.*.ignore as `git add` does). It reports false when it could
// not do the work (a file it cannot read, a path that changed while it
// ran, a nested repository without a commit, a git that does not know an
// option): the caller then runs `git add -A`, which reports problems path
// by path.
func (t *taker) addChanged() (bool, error) {
	env := append(t.env[:len(t.env):len(t.env)], "GIT_OPTIONAL_LOCKS=1")
	args := []string{"status", "--porcelain=v2", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=dirty"}
	out, _, err := t.g.run(env, nil, t.indexConfig(args...)...)
	if err != nil {
		return false, t.g.ctx.Err()
	}
	paths, untracked, _, err := statusLists(out)
	if err != nil {
		return false, nil
	}
	t.statusUsed = true
	for _, p := range paths {
		t.gitignoreSeen = t.gitignoreSeen || isGitignore(p)
	}
	if t.noteNewDirs(untracked) {
		t.gitignoreSeen = true
	}
	// The run's ignore rules, where git's differ from them now (rules.go).
	var add []string
	var drop map[string]bool
	if t.rules != nil && t.rules.base != "" && (t.rulesOff || t.gitignoreSeen) {
		if add, drop, err = t.rulesAdjust(untracked); err != nil {
			return false, err
		}
		t.adjusted = true
	}
	var in bytes.Buffer
	for _, p := range append(paths, add...) {
		if !t.addExcluded(p) && !drop[p] {
			in.WriteString(p)
			in.WriteByte(0)
		}
	}
	if in.Len() == 0 {
		return true, nil
	}
	// --replace: a file that became a directory (or the reverse) takes
	// the place of the entries in its way, as `git add` lets it.
	if _, _, err := t.g.run(t.env, in.Bytes(), t.indexConfig("update-index", "--add", "--remove", "--replace", "-z", "--stdin")...); err != nil {
		return false, t.g.ctx.Err()
	}
	return true, nil
}

// addExcluded reports whether `git add -A` with t.excludes() as exclude
// pathspecs would leave path alone: a literal pathspec also covers what
// is under it.
func (t *taker) addExcluded(path string) bool {
	if Excluded(path) {
		return true
	}
	for _, x := range t.o.exclude {
		if x != "" && (path == x || strings.HasPrefix(path, x+"/")) {
			return true
		}
	}
	return false
}

// statusLists reads `git status --porcelain=v2 -z` and returns the paths
// whose work-tree content differs from the index: changed or deleted
// tracked entries (Y column not '.'), unmerged ones, and untracked files
// (a nested repository as its directory, the trailing slash dropped);
// apart, the untracked ones (a subset of paths), and the ignored paths
// (with --ignored; a directory with its trailing slash). It never panics:
// a record it cannot read is an error naming it.
func statusLists(out []byte) (paths, untracked, ignored []string, err error) {
	for len(out) > 0 {
		i := bytes.IndexByte(out, 0)
		if i < 0 {
			return nil, nil, nil, fmt.Errorf("git status: record %q is not NUL-terminated", clip(out))
		}
		rec := string(out[:i])
		out = out[i+1:]
		if rec == "" {
			return nil, nil, nil, fmt.Errorf("git status: empty record")
		}
		switch rec[0] {
		case '1', '2', 'u':
			// 1 XY sub mH mI mW hH hI path
			// 2 XY sub mH mI mW hH hI Xscore path NUL origPath
			// u XY sub m1 m2 m3 mW h1 h2 h3 path
			n := map[byte]int{'1': 9, '2': 10, 'u': 11}[rec[0]]
			f := strings.SplitN(rec, " ", n)
			if len(f) != n || len(f[1]) != 2 || f[n-1] == "" {
				return nil, nil, nil, fmt.Errorf("git status: cannot parse %q", clip([]byte(rec)))
			}
			if rec[0] == 'u' || f[1][1] != '.' {
				paths = append(paths, f[n-1])
			}
			if rec[0] == '2' {
				j := bytes.IndexByte(out, 0)
				if j <= 0 {
					return nil, nil, nil, fmt.Errorf("git status: rename of %q has no source", clip([]byte(f[n-1])))
				}
				if f[1][1] != '.' {
					paths = append(paths, string(out[:j]))
				}
				out = out[j+1:]
			}
		case '?':
			p, ok := strings.CutPrefix(rec, "? ")
			if p = strings.TrimSuffix(p, "/"); !ok || p == "" {
				return nil, nil, nil, fmt.Errorf("git status: cannot parse %q", clip([]byte(rec)))
			}
			paths, untracked = append(paths, p), append(untracked, p)
		case '!':
			p, ok := strings.CutPrefix(rec, "! ")
			if !ok || p == "" || p == "/" {
				return nil, nil, nil, fmt.Errorf("git status: cannot parse %q", clip([]byte(rec)))
			}
			ignored = append(ignored, p)
		case '#':
		default:
			return nil, nil, nil, fmt.Errorf("git status: cannot parse %q", clip([]byte(rec)))
		}
	}
	return paths, untracked, ignored, nil
}
