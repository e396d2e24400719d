// Package boundary takes the git snapshot implloop records at every task
// boundary: the whole work tree as a commit, and the paths in which it
// differs from HEAD (the dirty set) with their content at HEAD, in the index
// and in the work tree.
//
// # The snapshot commit
//
// [Take] builds the work tree's tree with git's own plumbing: what
// `git add -A` records (tracked and untracked files, not ignored ones;
// modes, symlinks, submodule commits) into a private index under the git
// directory (<git-dir>/implloop/boundary-index, seeded from the real
// index, so that only what changed is hashed), then `git write-tree`. With
// [WithRun] the private index is brought up to date by `git status` (which
// keeps an untracked cache in it) and `git update-index` of the paths the
// status lists, a cheaper equivalent of `git add -A`, and the tree is
// committed, its parents the previous boundary and the HEAD of the
// moment, and refs/implloop/runs/<run> moves to it: everything a run saw,
// committed or not, stays reachable, so `git gc`, `reset --hard` or
// `reflog expire` cannot take it away. Without WithRun nothing is written
// to the repository: the tree is HEAD's with the paths one `git status`
// lists set (readonly.go), the files that differ from the index hashed
// into a temporary index and object directory.
//
// # Below the floor: a watcher's paths
//
// With [WithChanged] (the paths a file watcher saw change since the
// previous boundary, package treewatch) a boundary takes the previous
// boundary's tree and looks only at those paths (changes.go); whenever it
// cannot be sure, at the whole tree as without it.
//
// # The dirty set
//
// The dirty set is `git diff-tree -r HEAD <tree>` (the work tree against
// HEAD) merged with `git diff-index --cached -M HEAD` (the real index
// against HEAD, staged renames detected), which is what `git status` shows.
// Every content is a git object id and a mode: a file's id is the blob git
// stores for it (its clean conversion applied: autocrlf, eol and filter
// attributes), a symlink's is its target's, a submodule's the commit
// checked out in it. An absent path has no id and mode 0.
//
// Paths are bytes, exactly as git stores them (any bytes but NUL).
//
// # Submodules and nested repositories
//
// A submodule, or a repository nested in the work tree, is one 160000
// entry of the tree: the commit checked out in it. What is uncommitted
// inside it is recorded by a snapshot of its own ([Nested]; with WithRun
// a boundary of that repository, committed in it, so that it can be
// restored) when git status finds modified or untracked content in it,
// when it is a gitlink of the dirty set, or when the previous boundary
// had uncommitted work in it.
//
// # Kept beside the tree
//
// With [WithKeep] a boundary also keeps what its tree cannot hold: the
// plan file (left out of the tree) and the user's ignored files (listed
// at a run's first boundary, wholly ignored directories listed only,
// within [KeepLimits]), as raw blobs in a commit on
// refs/implloop/kept/<run> ([KeptRef]), a local ref never pushed.
//
// # The run's ignore rules
//
// A boundary (WithRun) decides what is ignored with the rules its run's
// first boundary found, not the rules of the moment (rules.go): a rule a
// task adds cannot hide a file from the snapshot. How git's rules differ
// from the run's is [Snapshot.RulesChanged].
package boundary

import (
	"fmt"
	"sort"
	"strconv"
)

// Mode is a git file mode as it appears in trees and the index. The zero Mode
// means "absent".
type Mode uint32

// The modes git records.
const (
	ModeAbsent     Mode = 0
	ModeDir        Mode = 0o040000
	ModeRegular    Mode = 0o100644
	ModeExecutable Mode = 0o100755
	ModeSymlink    Mode = 0o120000
	ModeGitlink    Mode = 0o160000
)

// String renders the mode the way git prints it (six octal digits).
func (m Mode) String() string { return fmt.Sprintf("%06o", uint32(m)) }

// MarshalText renders the mode as six octal digits.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses an octal mode.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 8, 32)
	if err != nil {
		return fmt.Errorf("mode %q: %w", b, err)
	}
	*m = Mode(v)
	return nil
}

// normalize maps the legacy modes git still accepts in old trees (100664,
// group-writable) to the two regular-file modes.
func (m Mode) normalize() Mode {
	if m&0o170000 == 0o100000 {
		if m&0o100 != 0 {
			return ModeExecutable
		}
		return ModeRegular
	}
	return m
}

// Blob is the content of a path at one place (HEAD, index or worktree): a git
// object id and a mode. Mode 0 means the path is absent there. A present path
// whose id could not be determined has a mode and an empty Hash; it equals
// nothing, not even itself.
type Blob struct {
	Hash string `json:"hash,omitempty"`
	Mode Mode   `json:"mode,omitempty"`
}

// Present reports whether the path exists there.
func (b Blob) Present() bool { return b.Mode != ModeAbsent }

// Known reports whether the content is known: absent, or present with an id.
func (b Blob) Known() bool { return b.Mode == ModeAbsent || b.Hash != "" }

// Same reports whether two contents are provably the same: both known, same
// id and same (normalized) mode.
func (b Blob) Same(o Blob) bool {
	if !b.Known() || !o.Known() {
		return false
	}
	return b.Hash == o.Hash && b.Mode.normalize() == o.Mode.normalize()
}

// Status says how a dirty path differs from HEAD.
type Status string

// The statuses of a dirty path.
const (
	StatusModified   Status = "modified"   // present at HEAD and in the worktree, content differs
	StatusAdded      Status = "added"      // staged, not at HEAD
	StatusDeleted    Status = "deleted"    // at HEAD, gone from the worktree
	StatusRenamed    Status = "renamed"    // the new path of a staged rename (OrigPath is the old one)
	StatusCopied     Status = "copied"     // the new path of a detected copy (status.renames=copies)
	StatusUntracked  Status = "untracked"  // not in the index, not ignored
	StatusTypeChange Status = "typechange" // file <-> symlink <-> submodule
	StatusConflicted Status = "conflicted" // unmerged index entry
	StatusSubmodule  Status = "submodule"  // a submodule whose commit or content changed
	// Not statuses of a dirty path, but of what a boundary keeps beside
	// its tree (WithKeep), as the guard reports them.
	StatusIgnored Status = "ignored" // one of the user's ignored files
	StatusPlan    Status = "plan"    // the plan file
)

// Entry is one dirty path.
type Entry struct {
	// Path is relative to the repository root, slash-separated, exactly as
	// git stores it (any bytes but NUL).
	Path string `json:"path"`
	// OrigPath is the path a renamed or copied entry came from.
	OrigPath string `json:"orig_path,omitempty"`
	// RenamedTo is set on the old path of a rename: it is gone from the
	// worktree (unless something new was created there) and lives on at
	// RenamedTo.
	RenamedTo string `json:"renamed_to,omitempty"`
	Status    Status `json:"status"`
	// XY is git's two-letter code: index then worktree, "." for unchanged
	// ("??" for untracked). For a conflicted entry it is the conflict type
	// (UU, AA, DU, ...).
	XY string `json:"xy"`
	// Submodule is porcelain v2's submodule state ("S<c><m><u>") for a
	// submodule, "" otherwise.
	Submodule string `json:"submodule,omitempty"`
	// Head, Index and Worktree are the path's content at HEAD, in the index
	// (stage 0) and in the worktree. Worktree.Hash is what
	// `git hash-object` prints for the file.
	Head     Blob `json:"head"`
	Index    Blob `json:"index"`
	Worktree Blob `json:"worktree"`
}

// FileStat is the part of a file's stat data that changes whenever its
// bytes do. Ctime and Ino are 0 where the platform does not report them.
type FileStat struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ctime int64  `json:"ctime_ns,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
}

// Snapshot is the state of a repository at one boundary.
type Snapshot struct {
	// Root is the worktree's top-level directory.
	Root string `json:"root"`
	// Tree is the snapshot tree: the whole work tree as `git add -A`
	// would record it, implloop's own files and excluded paths left out.
	Tree string `json:"tree,omitempty"`
	// Commit is the boundary commit (WithRun), and Ref the run's ref that
	// now points at it.
	Commit string `json:"commit,omitempty"`
	Ref    string `json:"ref,omitempty"`
	// Head is the commit HEAD points at, as hex; "" when the branch is
	// unborn (no commits yet).
	Head string `json:"head"`
	// Branch is the checked-out branch, "" when HEAD is detached.
	Branch   string `json:"branch,omitempty"`
	Detached bool   `json:"detached,omitempty"`
	// Paths are the dirty paths, sorted by path (byte order). implloop's
	// own files (BLOCKED.md, a legacy .implloop/) and excluded paths are
	// left out.
	Paths []Entry `json:"paths"`
	// Tracked holds, for each path asked for with WithTrack that is clean
	// now, its content at this HEAD (Mode 0 when HEAD has no such path).
	// It lets the guard know a path's content without reading git.
	Tracked map[string]Blob `json:"tracked,omitempty"`
	// HeadChange, with WithPrevHead (or WithPrev), says what a HEAD move since the
	// previous boundary did: new commits on top, a switch to a commit a
	// branch still holds, or a rewrite that dropped commits (and what they
	// held). nil when HEAD did not move or no previous HEAD was given.
	HeadChange *HeadChange `json:"head_change,omitempty"`
	// KeptIgnored lists the paths that left the work tree's snapshot
	// since the previous boundary (WithPrev) because they became ignored,
	// and that Take kept following: they are still on disk.
	KeptIgnored []string `json:"kept_ignored,omitempty"`
	// Plan is the plan file as the boundary kept it (WithKeep): absent
	// when it was not there.
	Plan *KeptFile `json:"plan,omitempty"`
	// Ignored is what the boundary kept and listed of the user's ignored
	// files (WithKeep).
	Ignored *Ignored `json:"ignored,omitempty"`
	// Kept is the commit on refs/implloop/kept/<run> holding the plan and
	// the ignored files (WithKeep): local, never pushed.
	Kept string `json:"kept,omitempty"`
	// RulesChanged says how git's ignore rules differ from the run's (as
	// they were at its first boundary), which this boundary went on using
	// (WithRun): ".gitignore changed", "info/exclude changed",
	// "core.excludesFile set to ...". The guard makes a change a concern.
	RulesChanged []string `json:"rules_changed,omitempty"`
	// rules are the run's ignore rules, carried to the next boundary
	// (WithPrev). Not journaled: a resume's first boundary takes the
	// rules of the moment as its run's.
	rules *ignoreRules
	// Vanished says what of implloop's own record disappeared since the
	// previous boundary (WithRun): the run's ref deleted or moved, its
	// commit pruned. The loop blocks the task that did it.
	Vanished []string `json:"vanished,omitempty"`
	// Since, with WithCompare, lists the changes from the tree given to
	// this snapshot's tree (not journaled).
	Since []Change `json:"-"`
	// indexFP and indexDiff remember the real index this snapshot read
	// (its fingerprint, and how it differed from Head), so that the next
	// Take given this one (WithPrev) need not read it again when neither
	// it nor HEAD changed. Not journaled: a snapshot rebuilt by Load reads
	// the index afresh.
	indexFP   string
	indexDiff []Change
	// gitDir and commonDir are the work tree's git directories, so that
	// the next Take given this one need not ask git (reopenGit).
	gitDir, commonDir string
	// Nested holds the snapshots of the submodules and nested
	// repositories with uncommitted work inside (and of those that had
	// some at the previous boundary), in path order: see [Nested]. Not
	// journaled: a snapshot rebuilt by Load has none.
	Nested []Nested `json:"nested,omitempty"`
	// fast: a read-only snapshot taken from git status alone
	// (statusSnapshot), for tests.
	fast bool
	// watched: a boundary taken from a watcher's changed paths
	// (WithChanged), not the whole tree.
	watched     bool
	watchMiss   string
	watchUnskip []string
	// Problems lists what could not be determined (a HEAD tree go-git could
	// not read, a submodule without commits); the guard treats the paths
	// involved as unverified instead of guessing.
	Problems []string `json:"problems,omitempty"`
}

// Lookup returns the entry for path, if the path is dirty.
func (s Snapshot) Lookup(path string) (Entry, bool) {
	i := sort.Search(len(s.Paths), func(i int) bool { return s.Paths[i].Path >= path })
	if i < len(s.Paths) && s.Paths[i].Path == path {
		return s.Paths[i], true
	}
	return Entry{}, false
}

// Content returns the path's content in this snapshot: the worktree content
// when the path is dirty, else its content at HEAD when that is known
// (tracked with WithTrack, or HEAD unborn). ok is false when the content is
// not known from the snapshot alone.
func (s Snapshot) Content(path string) (b Blob, dirty, ok bool) {
	if e, found := s.Lookup(path); found {
		return e.Worktree, true, true
	}
	if b, found := s.Tracked[path]; found {
		return b, false, true
	}
	if s.Head == "" {
		// No commit: a path that is not dirty exists nowhere.
		return Blob{}, false, true
	}
	return Blob{}, false, false
}

// PathNames returns the paths of the dirty entries, for WithTrack at the next
// boundary.
func (s Snapshot) PathNames() []string {
	out := make([]string, len(s.Paths))
	for i, e := range s.Paths {
		out[i] = e.Path
	}
	return out
}

// Excluded reports whether path is one of implloop's own files, which
// snapshots leave out.
func Excluded(path string) bool {
	return path == "BLOCKED.md" || path == ".implloop" || len(path) > len(".implloop/") && path[:len(".implloop/")] == ".implloop/"
}
