package cache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// ErrBlobMismatch: content added to a BlobBatch does not hash to the name
// it came with.
var ErrBlobMismatch = errors.New("blob content does not match its hash")

// BlobBatch stores many blobs at once, each checked against the hash it is
// named by (blobs that came from elsewhere: a pull), in one pack (see
// packDir). Commit makes the pack and its index durable with one flush of
// the file system (syncfs on Linux; one fsync per file elsewhere), moves
// them into place and makes that durable, so a blob is seen only
// complete, as with a BlobWriter, at a fraction of the cost of a file
// and an fsync per blob. Until Commit nothing is seen; Abort removes the
// temporary files.
type BlobBatch struct {
	s     *Blobs
	added map[string]bool // the hashes added

	pack    *os.File      // the pack's temporary file, once Add wrote to it
	packBuf *bufio.Writer // in front of pack: one write call per blob costs more than the blob
	off     int64
	index   bytes.Buffer // the pack's index lines
	entries map[string]packed
	buf     []byte    // for copying, reused: io.Copy would allocate 32 KiB for each blob of a pull's tens of thousands
	sum     hash.Hash // Add's, reset for each blob
	line    []byte    // Add's index line, reused
}

// NewBatch starts a batch.
func (s *Blobs) NewBatch() (*BlobBatch, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("blob store: %w", err)
	}
	return &BlobBatch{s: s, added: map[string]bool{}}, nil
}

// skip says whether h is in the batch already. What the store has is for
// the caller to skip: it knows before it reads the content.
func (b *BlobBatch) skip(h string) (bool, error) {
	if !validHash(h) {
		return false, fmt.Errorf("invalid blob hash %q", h)
	}
	return b.added[h], nil
}

func mismatch(h string, sum []byte) error {
	var buf [2 * sha256.Size]byte
	if got := hex.AppendEncode(buf[:0], sum); string(got) != h {
		return fmt.Errorf("blob %s: its content's sha256 is %s: %w", h, got, ErrBlobMismatch)
	}
	return nil
}

// copyTo copies r to both w and sum through buf.
func copyTo(w, sum io.Writer, r io.Reader, buf []byte) (int64, error) {
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return n, werr
			}
			sum.Write(buf[:k]) // a hash never fails
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (b *BlobBatch) copyBuf() []byte {
	if b.buf == nil {
		b.buf = make([]byte, 32<<10)
	}
	return b.buf
}

// Add appends r's content to the batch's pack as blob h, unless the batch
// has it. Content that does not hash to h is refused with an
// error wrapping ErrBlobMismatch (and left out of the pack).
func (b *BlobBatch) Add(h string, r io.Reader) error {
	if skip, err := b.skip(h); skip || err != nil {
		return err
	}
	if b.pack == nil {
		f, err := os.CreateTemp(b.s.dir, "tmp-pack-*")
		if err != nil {
			return fmt.Errorf("blob store: %w", err)
		}
		b.pack, b.packBuf, b.entries = f, bufio.NewWriterSize(f, 256<<10), map[string]packed{}
	}
	// One hash for the batch and no MultiWriter: a pull adds tens of
	// thousands of small blobs, where what is made per blob shows.
	if b.sum == nil {
		b.sum = sha256.New()
	}
	b.sum.Reset()
	n, err := copyTo(b.packBuf, b.sum, r, b.copyBuf())
	if err == nil {
		var sum [sha256.Size]byte
		err = mismatch(h, b.sum.Sum(sum[:0]))
	}
	if err != nil {
		// Back to where this blob began: the pack holds whole blobs only.
		ferr := b.packBuf.Flush()
		if ferr == nil {
			ferr = b.pack.Truncate(b.off)
		}
		if ferr == nil {
			_, ferr = b.pack.Seek(b.off, io.SeekStart)
		}
		return errors.Join(err, ferr)
	}
	line := append(append(b.line[:0], h...), ' ')
	line = append(strconv.AppendInt(line, b.off, 10), ' ')
	b.line = append(strconv.AppendInt(line, n, 10), '\n')
	b.index.Write(b.line)
	b.entries[h] = packed{off: b.off, size: n}
	b.off += n
	b.added[h] = true
	return nil
}

// Commit moves the blobs into place, durably.
func (b *BlobBatch) Commit() error {
	var idx string
	if b.pack != nil && b.index.Len() == 0 { // every Add was refused
		b.pack.Close()
		os.Remove(b.pack.Name())
		b.pack = nil
	}
	if b.pack != nil {
		err := b.packBuf.Flush()
		if cerr := b.pack.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			idx, err = b.writeIndex()
		}
		if err != nil {
			b.Abort()
			return fmt.Errorf("blob store: %w", err)
		}
	}
	if b.pack == nil {
		return nil
	}
	if err := syncFiles(b.s.dir, []string{b.pack.Name(), idx}); err != nil {
		b.Abort()
		os.Remove(idx)
		return fmt.Errorf("blob store: fsync: %w", err)
	}
	// The pack first, its index last: a pack is seen only whole.
	dir := filepath.Join(b.s.dir, packDir)
	name := filepath.Join(dir, HashBytes(b.index.Bytes()))
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.Chmod(b.pack.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(b.pack.Name(), name+".pack")
	}
	if err == nil {
		_, had := os.Stat(name + ".idx") // the same pack, whole already
		if err = os.Rename(idx, name+".idx"); err != nil && had != nil {
			os.Remove(name + ".pack") // never seen without its index
		}
	}
	if err != nil {
		b.Abort()
		os.Remove(idx)
		return fmt.Errorf("blob store: %w", err)
	}
	b.pack = nil
	b.s.addPacked(filepath.Base(name), b.entries)
	return syncDirs(b.s.dir, map[string]bool{dir: true})
}

// writeIndex writes the pack's index to a temporary file.
func (b *BlobBatch) writeIndex() (string, error) {
	f, err := os.CreateTemp(b.s.dir, "tmp-idx-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(b.index.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// Abort removes what was not committed.
func (b *BlobBatch) Abort() {
	if b.pack != nil {
		b.pack.Close()
		os.Remove(b.pack.Name())
		b.pack = nil
	}
	b.added = map[string]bool{}
	b.index.Reset()
	b.off = 0
}
