package cache

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
)

// legacyEntries are what an older implloop kept in <repo>/.implloop that
// belongs to the journal, in the order they are moved: the database last,
// so that a move cut short (a kill, a full disk) leaves the old database
// where it was and the next writable open finishes the move. Its -wal and
// -shm (or a hot -journal) travel with it, before it.
var legacyEntries = []string{"objects", "runs", "state.db-wal", "state.db-shm", "state.db-journal", "state.db"}

// moveLegacy moves a journal kept in d.Legacy by an older implloop into
// d.State, when d.State has no journal yet. It reports whether it moved
// one. The old directory is removed if nothing else is left in it; any
// file it does not know stays where it is. The caller holds lockState.
func moveLegacy(d Dirs) (bool, error) {
	oldDB := filepath.Join(d.Legacy, "state.db")
	if !exists(oldDB) || exists(filepath.Join(d.State, "state.db")) {
		return false, nil
	}
	// An older implloop still running in this work tree holds the old
	// lock: moving its journal from under it would lose its writes.
	lockPath := filepath.Join(d.Legacy, "lock")
	if f, err := os.OpenFile(lockPath, os.O_RDWR, 0); err == nil {
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return false, fmt.Errorf("an older implloop is running in this work tree (it holds %s); let it finish, then try again", d.Shown(lockPath))
			}
			return false, fmt.Errorf("lock %s: %w", lockPath, err)
		}
	}
	// Best effort: fold a crashed writer's WAL into the database, so that
	// one self-contained file moves. When that fails (a damaged file), the
	// -wal and -shm move along with it and SQLite sorts them out there.
	checkpoint(oldDB)
	for _, name := range legacyEntries {
		if err := move(filepath.Join(d.Legacy, name), filepath.Join(d.State, name)); err != nil {
			return false, fmt.Errorf("move %s to %s: %w", d.Shown(filepath.Join(d.Legacy, name)), d.Shown(d.State), err)
		}
	}
	_ = os.Remove(lockPath) // the old lock is this work tree's; nothing else takes it now
	_ = os.Remove(d.Legacy) // fails, and keeps it, when anything unknown is left
	return true, nil
}

// checkpoint writes the WAL of the SQLite database at path into the file
// and switches it to rollback mode, which removes the -wal and -shm.
func checkpoint(path string) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(2000)")
	db, err := sql.Open("sqlite", dsn(path, q))
	if err != nil {
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	_, _ = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	_, _ = db.Exec("PRAGMA journal_mode=DELETE")
}

// rename is os.Rename; a test makes it fail as across file systems.
var rename = os.Rename

// move moves src to dst: a rename, or across file systems (the work tree
// and the git directory on different mounts) a copy and a removal. Where
// dst exists already (a move cut short, run again), a directory is merged
// entry by entry and a file is left in src: blobs are named by their
// content and reports are rewritten, so both copies are the same. A
// missing src is nothing to do.
func move(src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		err := rename(src, dst)
		if !errors.Is(err, syscall.EXDEV) {
			return err
		}
		// Copy into a temporary name beside dst and rename it into place,
		// so a copy cut short is never taken for the whole.
		tmp := dst + ".moving"
		if err := os.RemoveAll(tmp); err != nil {
			return err
		}
		if err := copyAll(src, tmp); err != nil {
			os.RemoveAll(tmp)
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
		return os.RemoveAll(src)
	} else if err != nil {
		return err
	}
	if !fi.IsDir() {
		return nil
	}
	es, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := move(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	_ = os.Remove(src) // kept when something in it stayed
	return nil
}

// copyAll copies the file or directory tree src to dst (which must not
// exist), regular files fsynced, modes kept. Anything else (a symlink, a
// socket) is skipped: implloop writes none.
func copyAll(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		fi, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.Mkdir(to, fi.Mode().Perm()|0o700)
		case fi.Mode().IsRegular():
			return copyFile(p, to, fi.Mode().Perm())
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// lockState takes an exclusive flock on the state directory itself. It
// serializes the first writable opens of linked worktrees, so that one
// moving its legacy journal in and another creating a new one cannot
// overwrite each other. It needs no file of its own.
func lockState(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
