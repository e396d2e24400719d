package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/internal/gitcmd"
)

// LegacyDir is where implloop kept all of its state before it moved into
// the git directory: <repo>/.implloop. A journal found there is moved on
// the first writable open (see [Open]) and read in place until then.
const LegacyDir = ".implloop"

// stateName is the name of implloop's directory inside the git directory.
const stateName = "implloop"

// ErrNotRepository: the directory is not inside a git work tree, so there
// is no git directory to keep the journal in.
var ErrNotRepository = errors.New("not inside a git repository")

// Dirs are where implloop keeps its state for one work tree. State and
// Lock live in the git directory, out of reach of what an agent does to
// the work tree (git clean -fdx, git stash -a, rm -rf of its files).
type Dirs struct {
	// Root is the work tree's top-level directory.
	Root string
	// State is $(git rev-parse --git-common-dir)/implloop: the journal
	// (state.db), its blobs (objects/), reports and the agents' files
	// (runs/<id>/). Linked worktrees of one repository share it.
	State string
	// Lock is $(git rev-parse --git-dir)/implloop: the directory of this
	// work tree's lock. For the main worktree it is State.
	Lock string
	// Legacy is <Root>/.implloop, where older implloops kept everything.
	Legacy string
}

// StateDir resolves where implloop keeps its state for the work tree at
// repoRoot, asking git once. Outside a git repository it returns an error
// wrapping ErrNotRepository.
func StateDir(repoRoot string) (Dirs, error) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return Dirs{}, err
	}
	out, _, err := gitcmd.Run(context.Background(), gitcmd.Options{Dir: root}, "rev-parse", "--git-common-dir", "--git-dir")
	if err != nil {
		var ge *gitcmd.Error
		if !errors.As(err, &ge) {
			return Dirs{}, fmt.Errorf("journal: %w", err) // no git at all
		}
		return Dirs{}, fmt.Errorf("journal: %s: %w (%s)", root, ErrNotRepository, ge.Stderr)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 || lines[0] == "" || lines[1] == "" {
		return Dirs{}, fmt.Errorf("journal: git rev-parse --git-common-dir --git-dir in %s said %q", root, out)
	}
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p) // git answers relative to cmd.Dir
		}
		return filepath.Clean(p)
	}
	return Dirs{
		Root:   root,
		State:  filepath.Join(abs(lines[0]), stateName),
		Lock:   filepath.Join(abs(lines[1]), stateName),
		Legacy: filepath.Join(root, LegacyDir),
	}, nil
}

// Shown is path p as a message shows it: relative to the work tree's root
// when inside it (".git/implloop/state.db"), else absolute (the common git
// directory of a linked worktree).
func (d Dirs) Shown(p string) string {
	rel, err := filepath.Rel(d.Root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

// exists reports whether p exists (an error other than "does not exist"
// counts as existing: the caller's next step reports it).
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil || !errors.Is(err, os.ErrNotExist)
}

// GoneError says that the journal a writer opened was taken away while it
// was open: its database or blob store removed, or another put in its
// place.
type GoneError struct {
	What string // "journal" or "blob store"
	Path string // as Dirs.Shown shows it
	How  string // "removed" or "replaced"
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("implloop's %s %s was %s", e.What, e.Path, e.How)
}

// Gone reports whether the journal this Journal opened has been taken away
// since Open: its state.db or objects/ no longer at their paths, or not the
// same files (device and inode, as Open found them). SQLite goes on writing
// to a removed database without an error, so nothing else notices an
// agent's `rm -rf .git/implloop`. It returns a *GoneError, or nil while
// both are in place (and always for a read-only journal).
func (j *Journal) Gone() error {
	if j.readOnly || j.dbInfo == nil {
		return nil
	}
	// The database first: a blob written after a removal recreates
	// objects/, which then looks replaced rather than removed.
	for _, c := range []struct {
		what, path string
		was        os.FileInfo
	}{{"journal", j.dbPath, j.dbInfo}, {"blob store", j.blobs.dir, j.objInfo}} {
		fi, err := os.Stat(c.path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return &GoneError{What: c.what, Path: j.dirs.Shown(c.path), How: "removed"}
		case err != nil:
			return &GoneError{What: c.what, Path: j.dirs.Shown(c.path), How: "made unreadable (" + err.Error() + ")"}
		case !os.SameFile(fi, c.was):
			return &GoneError{What: c.what, Path: j.dirs.Shown(c.path), How: "replaced"}
		}
	}
	return nil
}
