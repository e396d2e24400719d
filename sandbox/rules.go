package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/implloop/implloop/internal/files"
)

// Rule is one entry of a call's view of the file system: the subtree at
// Path is writable or read-only. Everything no rule covers is read-only;
// for a path under several rules, the deepest one decides. Pin, on a
// writable rule, keeps the path itself from being renamed or removed (see
// the package doc).
type Rule struct {
	Path  string
	Write bool
	Pin   bool
	// From, when set, is what is shown at Path (bubblewrap binds it
	// there, or with Link makes Path a symlink to it): an executable
	// reached through a hidden directory.
	From string
	Link bool
}

func (r Rule) String() string {
	switch {
	case r.Write && r.Pin:
		return "write,pin " + r.Path
	case r.Write:
		return "write " + r.Path
	}
	return "read " + r.Path
}

// rulesFor are the rules of a call in the work tree of layout l: the
// tree and git's directories writable, what implloop and git must keep
// read-only inside them, and extra (the agent's directories, caches,
// allowed paths), sorted so that a deeper rule comes after the rules
// around it (the order both tools apply them in).
func rulesFor(l *layout, o Options, extra []Rule) []Rule {
	var rules []Rule
	add := func(p string, write, pin bool) {
		rules = append(rules, Rule{Path: p, Write: write, Pin: pin})
	}
	// The tree and what git needs to commit in it.
	add(l.tree, true, true)
	add(l.gitDir, true, true)
	add(l.common, true, true)
	add(filepath.Join(l.common, "refs"), true, true)
	add(filepath.Join(l.common, "objects"), true, true)
	for _, r := range extra {
		// Nothing asked for opens implloop's state (the loop refuses such
		// an allowed path first).
		if !slices.ContainsFunc(o.State, func(d string) bool { return within(r.Path, d) }) {
			rules = append(rules, r)
		}
	}

	// Read-only within them: what git would run or read outside the
	// sandbox later on implloop's behalf, and the other trees' git state.
	ro := func(p string) {
		if r, ok := existing(p); ok {
			add(r, false, false)
		}
	}
	for _, name := range []string{"config", "hooks", "info", "worktrees", "commondir", "config.worktree"} {
		ro(filepath.Join(l.common, name))
	}
	// Submodules' git directories: their commits stay possible, their
	// config and hooks do not change.
	mods, whole := submoduleGitDirs(filepath.Join(l.common, "modules"))
	if whole {
		ro(filepath.Join(l.common, "modules"))
	}
	for _, m := range mods {
		for _, name := range []string{"config", "hooks", "info", "commondir", "config.worktree"} {
			ro(filepath.Join(m, name))
		}
	}
	if l.linked() {
		// The main tree's index and HEAD are not this tree's; its own
		// git directory stays writable under worktrees/.
		ro(filepath.Join(l.common, "index"))
		ro(filepath.Join(l.common, "HEAD"))
		for _, name := range []string{"commondir", "gitdir", "config.worktree"} {
			ro(filepath.Join(l.gitDir, name))
		}
		if fi, err := os.Lstat(filepath.Join(l.tree, ".git")); err == nil && !fi.IsDir() {
			ro(filepath.Join(l.tree, ".git")) // the pointer to its git directory
		}
	}
	// implloop's own state and refs, last word on whatever they overlap
	// (a task worktree inside the state directory is the one exception,
	// deeper still, below).
	for _, d := range o.State {
		ro(d)
	}
	for _, ns := range o.Refs {
		ro(filepath.Join(l.common, filepath.FromSlash(strings.TrimSuffix(ns, "/"))))
	}
	return order(rules)
}

// order sorts rules by depth, shallower first, then by path, and drops
// repeats of a path: a read-only rule wins over a writable one at the
// same path, whatever was asked. The rule of the tree itself, and of the
// git directory of a linked worktree, wins over a read-only rule at the
// same depth or above (a task worktree inside implloop's state directory
// is that worktree's own).
func order(rules []Rule) []Rule {
	byPath := map[string]Rule{}
	for _, r := range rules {
		r.Path = filepath.Clean(r.Path)
		old, seen := byPath[r.Path]
		switch {
		case !seen:
			byPath[r.Path] = r
		case !r.Write || !old.Write:
			byPath[r.Path] = Rule{Path: r.Path} // read-only wins
		default:
			old.Pin = old.Pin || r.Pin
			byPath[r.Path] = old
		}
	}
	out := make([]Rule, 0, len(byPath))
	for _, r := range byPath {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := depth(out[i].Path), depth(out[j].Path)
		if di != dj {
			return di < dj
		}
		return out[i].Path < out[j].Path
	})
	return out
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// submoduleGitDirs are the git directories under modules (a submodule's
// name may hold slashes; nested submodules have modules/ of their own),
// found within a bounded walk; whole when the walk could not finish (then
// modules is read-only whole).
func submoduleGitDirs(modules string) (dirs []string, whole bool) {
	if _, err := os.Stat(modules); err != nil {
		return nil, false
	}
	var out []string
	seen := 0
	complete := true
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			complete = false
			return
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if seen++; seen > maxModuleDirs || depth > maxModuleDepth {
				complete = false
				return
			}
			p := filepath.Join(dir, e.Name())
			if files.Exists(filepath.Join(p, "HEAD")) && files.Exists(filepath.Join(p, "objects")) {
				out = append(out, p)
				walk(filepath.Join(p, "modules"), depth+1)
				continue
			}
			walk(p, depth+1)
		}
	}
	walk(modules, 0)
	if !complete {
		return nil, true
	}
	return out, false
}

// Bounds of the walk of .git/modules.
const (
	maxModuleDirs  = 2000
	maxModuleDepth = 16
)
