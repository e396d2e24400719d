package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrBlobMismatch: content added to a BlobBatch does not hash to the name
// it came with.
var ErrBlobMismatch = errors.New("blob content does not match its hash")

// BlobBatch stores many blobs at once, each checked against the hash it is
// named by (blobs that came from elsewhere: a pull). Each is written to a
// temporary file; Commit makes them all durable with one flush of the file
// system (syncfs on Linux; one fsync per file elsewhere), renames them
// into place and makes the renames durable, so a blob under a hash name is
// complete, as with a BlobWriter, at a fraction of the cost of one fsync
// per blob. Until Commit nothing is under a hash name; Abort removes the
// temporary files.
type BlobBatch struct {
	s     *Blobs
	temps []string // temporary files, in Add order
	names []string // their hashes
}

// NewBatch starts a batch.
func (s *Blobs) NewBatch() (*BlobBatch, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("blob store: %w", err)
	}
	return &BlobBatch{s: s}, nil
}

// Add writes r's content as blob h, unless the store has it. Content that
// does not hash to h is refused with an error wrapping ErrBlobMismatch.
func (b *BlobBatch) Add(h string, r io.Reader) error {
	if _, err := b.s.Path(h); err != nil {
		return err
	}
	if b.s.Has(h) {
		return nil
	}
	f, err := os.CreateTemp(b.s.dir, "tmp-*")
	if err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	sum := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, sum), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if got := hex.EncodeToString(sum.Sum(nil)); got != h {
			err = fmt.Errorf("blob %s: its content's sha256 is %s: %w", h, got, ErrBlobMismatch)
		}
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	b.temps, b.names = append(b.temps, f.Name()), append(b.names, h)
	return nil
}

// Commit moves the blobs into place, durably.
func (b *BlobBatch) Commit() error {
	if len(b.temps) == 0 {
		return nil
	}
	if err := syncFiles(b.s.dir, b.temps); err != nil {
		b.Abort()
		return fmt.Errorf("blob store: fsync: %w", err)
	}
	dirs := map[string]bool{}
	for i, tmp := range b.temps {
		dst, _ := b.s.Path(b.names[i])
		dir := filepath.Dir(dst)
		if !dirs[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Abort()
				return fmt.Errorf("blob store: %w", err)
			}
			dirs[dir] = true
		}
		if err := os.Chmod(tmp, 0o444); err != nil {
			b.Abort()
			return fmt.Errorf("blob store: %w", err)
		}
		if err := os.Rename(tmp, dst); err != nil {
			b.Abort()
			return fmt.Errorf("blob store: %w", err)
		}
		b.temps[i] = ""
	}
	b.temps, b.names = nil, nil
	return syncDirs(b.s.dir, dirs)
}

// Abort removes what was not committed.
func (b *BlobBatch) Abort() {
	for _, t := range b.temps {
		if t != "" {
			os.Remove(t)
		}
	}
	b.temps, b.names = nil, nil
}
