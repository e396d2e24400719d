// Package gitobj writes git objects (blobs, trees, commits) the way git
// writes them, without starting git: each object is a loose object in the
// repository's object directory (the zlib stream of "<type> <size>\0"
// and the body, named by its hash, written to a temporary file in its
// fan-out directory and linked into place, read-only), and its id is the
// one `git hash-object`, `git mktree` or `git commit-tree` prints for the
// same input. A process costs about 2 ms of CPU to start; a worker writes
// about ten objects a task.
//
// A Writer does it in process only when that is exactly what git would
// do; otherwise it runs git, as the callers did before (Open says why in
// Writer.Fallback):
//
//   - the object directory is the common directory's objects/, unless the
//     environment (the process's, or the one given for the call) moves it
//     (GIT_OBJECT_DIRECTORY), adds alternates (GIT_ALTERNATE_OBJECT_DIRECTORIES)
//     or quarantines it (GIT_QUARANTINE_PATH), or names another repository
//     (GIT_DIR, GIT_COMMON_DIR in the call's environment);
//   - git's configuration is read without git, as a superset: the files
//     git reads (system, global, the repository's and the work tree's,
//     and every file they include, whatever an includeIf's condition) and
//     the configuration in the environment are searched for the keys that
//     change how objects are written, by name anywhere in the text. A
//     mention of core.sharedRepository (file permissions) or of
//     extensions.compatObjectFormat (a second hash to record), or of an
//     object format the caller did not name, makes git write; a mention of
//     i18n.commitEncoding makes git write commits (it adds a header); a
//     mention of core.fsync, core.fsyncObjectFiles or core.fsyncMethod
//     makes the Writer flush each object file and its directory (git's
//     default flushes no loose object, and neither does the Writer then);
//     a configuration it cannot read for sure makes git write;
//   - a commit is written in process only when git would not change what
//     it is given: a plain identity (no leading or trailing characters git
//     strips, no '<', '>' or newline), a date git would keep as it is, a
//     message and header that are valid UTF-8 by git's rules, no NUL;
//   - a file to store as a blob is read in process up to MaxFileBlob
//     bytes; a larger one is left to git.
//
// An object file that exists already is read back first: git keeps it
// whatever it holds (it only touches it), the Writer keeps it when it
// holds the object and replaces it when it does not (a truncated or
// corrupt file, say after a crash), so that what it names is readable.
//
// Trees are checked as git mktree checks them and then some: a mode is
// one of the five git writes, a name is not empty, ".", ".." and has no
// '/' or NUL, no name twice; entries are sorted in git's tree order.
// Unlike mktree, a Writer does not check that the objects a tree names
// exist: callers name objects they just wrote or read.
package gitobj

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Hash names an object format.
type Hash int

const (
	SHA1 Hash = iota
	SHA256
)

func (h Hash) new() hash.Hash {
	if h == SHA256 {
		return sha256.New()
	}
	return sha1.New()
}

// HexLen is the length of an object id in hex.
func (h Hash) HexLen() int {
	if h == SHA256 {
		return 64
	}
	return 40
}

// ID is the id git gives an object of kind ("blob", "tree", "commit",
// "tag") with body.
func ID(h Hash, kind string, body []byte) string {
	d := h.new()
	d.Write(header(kind, len(body)))
	d.Write(body)
	return hex.EncodeToString(d.Sum(nil))
}

func header(kind string, n int) []byte {
	return append(strconv.AppendInt([]byte(kind+" "), int64(n), 10), 0)
}

// WriteLoose writes an object of kind with body as a loose object into
// the object directory objects, as git does, and returns its id. An
// object file already there that holds the object is kept (its time
// touched, as git freshens it); one that does not (corrupt, truncated)
// is replaced. sync flushes the file and its directory.
func WriteLoose(objects string, h Hash, kind string, body []byte, sync bool) (string, error) {
	return writeLoose(objects, h, kind, body, sync, nil)
}

// writeLoose is WriteLoose compressing with zw when given (reset for
// this object: a compressor costs about a megabyte to make).
func writeLoose(objects string, h Hash, kind string, body []byte, sync bool, zw *zlib.Writer) (string, error) {
	id := ID(h, kind, body)
	dir := filepath.Join(objects, id[:2])
	file := filepath.Join(dir, id[2:])
	replace := false
	if f, err := os.Open(file); err == nil {
		ok := holds(f, kind, body)
		f.Close()
		if ok {
			now := time.Now()
			_ = os.Chtimes(file, now, now) // git freshens it; not being able to is no failure
			return id, nil
		}
		replace = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("object %s: %w", id, err)
	}
	var z bytes.Buffer
	if zw == nil {
		zw, _ = zlib.NewWriterLevel(&z, zlib.BestSpeed) // core.looseCompression's default
	} else {
		zw.Reset(&z)
	}
	zw.Write(header(kind, len(body)))
	zw.Write(body)
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("object %s: %w", id, err)
	}
	tmp, err := createTemp(dir)
	if err != nil {
		return "", fmt.Errorf("object %s: %w", id, err)
	}
	name := tmp.Name()
	_, err = tmp.Write(z.Bytes())
	if err == nil && sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = finalize(name, file, replace)
	}
	os.Remove(name)
	if err != nil {
		return "", fmt.Errorf("object %s: %w", id, err)
	}
	if sync {
		if err := syncDir(dir); err != nil {
			return "", fmt.Errorf("object %s: %w", id, err)
		}
	}
	return id, nil
}

// createTemp makes a temporary object file in the fan-out directory dir
// (made when missing), read-only as git makes it.
func createTemp(dir string) (*os.File, error) {
	for try := 0; ; try++ {
		var r [6]byte
		rand.Read(r[:])
		p := filepath.Join(dir, "tmp_obj_"+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		switch {
		case err == nil:
			return f, nil
		case errors.Is(err, os.ErrNotExist) && try == 0:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, err
			}
		case errors.Is(err, os.ErrExist) && try < 10:
		default:
			return nil, err
		}
	}
}

// finalize puts the temporary file tmp in place as file: a hard link,
// as git makes it (a file that is there already is another writer's
// copy of the same object), else a rename; replace renames over a file
// found not to hold the object.
func finalize(tmp, file string, replace bool) error {
	if !replace {
		err := os.Link(tmp, file)
		if err == nil || errors.Is(err, os.ErrExist) {
			return nil
		}
		if _, serr := os.Lstat(file); serr == nil {
			return nil
		}
	}
	return os.Rename(tmp, file)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// holds reports whether the loose object file f inflates to exactly the
// object of kind with body.
func holds(f io.Reader, kind string, body []byte) bool {
	zr, err := zlib.NewReader(f)
	if err != nil {
		return false
	}
	defer zr.Close()
	want := header(kind, len(body))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(zr, got); err != nil || !bytes.Equal(got, want) {
		return false
	}
	buf := make([]byte, 32<<10)
	rest := body
	for {
		n, err := zr.Read(buf)
		if n > len(rest) || !bytes.Equal(buf[:n], rest[:n]) {
			return false
		}
		rest = rest[n:]
		if err == io.EOF {
			return len(rest) == 0
		}
		if err != nil {
			return false
		}
	}
}
