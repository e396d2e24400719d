// Package boundary takes the git snapshot implloop records at every task
// boundary: HEAD, and every path that differs from HEAD (staged, unstaged,
// untracked and not ignored) with its status and content hashes.
//
// # Where the facts come from
//
// The dirty set and HEAD come from one subprocess,
// `git --no-optional-locks status --porcelain=v2 --branch -z --untracked-files=all`,
// so they have git's exact semantics (every ignore source, autocrlf and
// filters, submodules, the untracked cache and fsmonitor) at about the cost of
// a bare `git status`, and without taking the index lock an agent may need.
// go-git opens the repository (linked worktrees included), reads HEAD trees,
// stores salvage blobs and trees, and reads blobs back for [Restore].
//
// # Content hashes
//
// Every hash is a git object id. A worktree file's hash is what
// `git hash-object PATH` prints (git's clean conversion applied: autocrlf,
// eol and filter attributes), so it can be compared with HEAD and index
// blobs. When git reports a tracked file clean in the worktree relative to the
// index, the index blob id is reused instead of reading the file. Files that
// must be read are hashed by one `git hash-object --stdin-paths` for the
// whole set (go-git v5 applies none of git's conversions), which streams
// them. A symlink's content is its target, as git stores it; a submodule's is
// the commit checked out in it. An absent path has no hash and mode 0.
//
// # Salvage
//
// With [WithSalvage], Take also writes the raw bytes of every dirty path into
// the repository's object database and records them in a commit reachable
// from refs/implloop/salvage/<run>, so `git gc` never prunes them and
// [Restore] can bring discarded work back byte for byte. docs/boundary.md
// describes the ref layout.
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
	// Salvaged is the id of the blob holding the worktree's raw bytes,
	// written by Take with WithSalvage. It differs from Worktree.Hash only
	// when git converts the file on check-in (autocrlf, filters).
	Salvaged string `json:"salvaged,omitempty"`
	// SalvagedStat is the file's stat data when Salvaged was read, kept
	// only when the file was old enough then for a later change to show
	// in it (see reusableSalvage). A Take given this snapshot (WithPrev)
	// reuses Salvaged instead of storing the file again while the stat
	// data and Worktree still match.
	SalvagedStat FileStat `json:"salvaged_stat,omitzero"`
}

// FileStat is the part of a file's stat data that changes whenever its
// bytes do (what git's index relies on to skip re-reading a file). Ctime
// and Ino are 0 where the platform does not report them.
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
	// Head is the commit HEAD points at, as hex; "" when the branch is
	// unborn (no commits yet).
	Head string `json:"head"`
	// Branch is the checked-out branch, "" when HEAD is detached.
	Branch   string `json:"branch,omitempty"`
	Detached bool   `json:"detached,omitempty"`
	// Paths are the dirty paths, sorted by path (byte order). implloop's
	// own .implloop/ and BLOCKED.md are left out.
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
	// Salvage names the salvage commit written with WithSalvage.
	Salvage *SalvageInfo `json:"salvage,omitempty"`
	// Problems lists what could not be determined (a HEAD tree go-git could
	// not read, a submodule without commits); the guard treats the paths
	// involved as unverified instead of guessing.
	Problems []string `json:"problems,omitempty"`
}

// SalvageInfo names where a boundary's worktree content was stored.
type SalvageInfo struct {
	Ref    string `json:"ref"`    // refs/implloop/salvage/<run>
	Commit string `json:"commit"` // the commit for this boundary
	Tree   string `json:"tree"`   // its tree: every dirty path's worktree content
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
