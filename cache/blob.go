package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Blobs is the content-addressed store in the state directory's objects/. A blob's
// name is the hex sha256 of its bytes, stored at objects/ab/cdef... Every
// blob is written to a temporary file in objects/, fsynced, then renamed
// into place, so a blob that exists is always complete.
type Blobs struct {
	dir      string // <state dir>/objects
	readOnly bool

	mu        sync.Mutex        // guards what is read of the packs
	packed    map[string]packed // hash -> where in a pack
	packsRead map[string]bool   // packs whose index is in packed
	packsMod  time.Time         // the packs directory's mtime when last read
}

// ErrBlobNotFound is returned when a blob is absent from the store.
var ErrBlobNotFound = errors.New("blob not found")

// HashBytes is the name a blob with these bytes gets.
func HashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Path is where the blob with hash h lives as a file of its own (whether
// or not it exists: a blob that came with a pull may be in a pack, see
// [Blobs.Has] and [Blobs.Open]).
func (s *Blobs) Path(h string) (string, error) {
	if !validHash(h) {
		return "", fmt.Errorf("invalid blob hash %q", h)
	}
	// Not filepath.Join: a pull asks for tens of thousands, and Join's
	// cleaning of a path that is clean already is most of the cost.
	return s.dir + string(filepath.Separator) + h[:2] + string(filepath.Separator) + h[2:], nil
}

// Has reports whether the blob is present.
func (s *Blobs) Has(h string) bool {
	p, err := s.Path(h)
	if err != nil {
		return false
	}
	if _, ok := s.knownPacked(h); ok {
		return true
	}
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return true
	}
	_, ok := s.lookupPacked(h)
	return ok
}

// Size is a blob's size in bytes.
func (s *Blobs) Size(h string) (int64, error) {
	p, err := s.Path(h)
	if err != nil {
		return 0, err
	}
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return fi.Size(), nil
	}
	if pk, ok := s.lookupPacked(h); ok {
		return pk.size, nil
	}
	return 0, fmt.Errorf("blob %s: %w", h, ErrBlobNotFound)
}

// Open opens a blob for reading.
func (s *Blobs) Open(h string) (io.ReadCloser, error) {
	p, err := s.Path(h)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return s.openPacked(h)
	}
	return f, err
}

// ReadAll reads a whole blob.
func (s *Blobs) ReadAll(h string) ([]byte, error) {
	p, err := s.Path(h)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		r, err := s.openPacked(h)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	return b, err
}

// Put stores b and returns its hash. Storing the same bytes twice is a no-op.
func (s *Blobs) Put(b []byte) (string, error) {
	h := HashBytes(b)
	if s.Has(h) {
		return h, nil
	}
	w, err := s.NewWriter()
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(w, bytes.NewReader(b)); err != nil {
		w.Abort()
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return h, nil
}

// BlobWriter streams a blob to disk: a 50 MB agent output never sits in
// memory. Hash and Size are valid after a successful Close; Abort discards
// what was written.
type BlobWriter struct {
	s      *Blobs
	f      *os.File
	h      hash.Hash
	n      int64
	sum    string
	err    error
	closed bool
}

// NewWriter starts a streaming blob write.
func (s *Blobs) NewWriter() (*BlobWriter, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("blob store: %w", err)
	}
	f, err := os.CreateTemp(s.dir, "tmp-*")
	if err != nil {
		return nil, fmt.Errorf("blob store: %w", err)
	}
	return &BlobWriter{s: s, f: f, h: sha256.New()}, nil
}

// Write appends p to the blob.
func (w *BlobWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, errors.New("blob writer: write after close")
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

// Close fsyncs the blob and moves it into place. Closing twice returns the
// first result.
func (w *BlobWriter) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	tmp := w.f.Name()
	if w.err != nil {
		w.f.Close()
		os.Remove(tmp)
		return w.err
	}
	w.sum = hex.EncodeToString(w.h.Sum(nil))
	w.err = w.finish(tmp)
	if w.err != nil {
		os.Remove(tmp)
	}
	return w.err
}

func (w *BlobWriter) finish(tmp string) error {
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return fmt.Errorf("blob store: fsync: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	dst, _ := w.s.Path(w.sum)
	if w.s.Has(w.sum) {
		return os.Remove(tmp)
	}
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	if err := os.Chmod(tmp, 0o444); err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	// The rename is durable once the directory entry is.
	return syncDir(dir)
}

// Abort discards the blob.
func (w *BlobWriter) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.err = errors.New("blob writer: aborted")
	w.f.Close()
	os.Remove(w.f.Name())
}

// Hash is the blob's hex sha256, after Close.
func (w *BlobWriter) Hash() string { return w.sum }

// Size is the number of bytes written.
func (w *BlobWriter) Size() int64 { return w.n }

// removeStaleTemps deletes temporary files that a killed writer left in
// objects/ (they never got a hash name, so nothing refers to them), and a
// pack a killed batch renamed into place without its index (the index
// goes last, so such a pack was never seen: see packDir). Only old ones:
// a live writer's are young.
func (s *Blobs) removeStaleTemps(age time.Duration) {
	stale := func(e fs.DirEntry) bool {
		fi, err := e.Info()
		return err == nil && time.Since(fi.ModTime()) > age
	}
	if es, err := os.ReadDir(s.dir); err == nil {
		for _, e := range es {
			if !e.IsDir() && strings.HasPrefix(e.Name(), "tmp-") && stale(e) {
				os.Remove(filepath.Join(s.dir, e.Name()))
			}
		}
	}
	dir := filepath.Join(s.dir, packDir)
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	idx := map[string]bool{}
	for _, e := range es {
		if name, ok := strings.CutSuffix(e.Name(), ".idx"); ok {
			idx[name] = true
		}
	}
	for _, e := range es {
		if name, ok := strings.CutSuffix(e.Name(), ".pack"); ok && !idx[name] && !e.IsDir() && stale(e) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
