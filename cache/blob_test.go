package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestBlobStreams50MB(t *testing.T) {
	j := openT(t, newRepo(t))
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	const total = 50 << 20
	want := sha256.New()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, err := j.NewBlobWriter()
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < total; n += len(chunk) {
		chunk[0] = byte(n >> 16) // not all chunks alike
		want.Write(chunk)
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("writing 50 MB allocated %d bytes: the writer buffers", alloc)
	}
	if got := hex.EncodeToString(want.Sum(nil)); w.Hash() != got || w.Size() != total {
		t.Fatalf("hash %s size %d, want %s %d", w.Hash(), w.Size(), got, total)
	}

	runtime.ReadMemStats(&before)
	rc, err := j.Blobs().Open(w.Hash())
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, rc, make([]byte, 32<<10))
	rc.Close()
	runtime.ReadMemStats(&after)
	if err != nil || n != total || hex.EncodeToString(h.Sum(nil)) != w.Hash() {
		t.Fatalf("read back %d bytes, %v", n, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("reading 50 MB allocated %d bytes", alloc)
	}
	// Nothing but the blob is left in the store (no temp files).
	var files []string
	filepath.WalkDir(filepath.Join(j.Dir(), "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 1 {
		t.Errorf("objects/ holds %v", files)
	}
}

func TestBlobErrors(t *testing.T) {
	j := openT(t, newRepo(t))
	if _, err := j.ReadBlob(HashBytes([]byte("absent"))); !errors.Is(err, ErrBlobNotFound) {
		t.Errorf("absent blob: %v", err)
	}
	for _, bad := range []string{"", "../../etc/passwd", "AB" + HashBytes(nil)[2:], HashBytes(nil)[:63]} {
		if _, err := j.ReadBlob(bad); err == nil {
			t.Errorf("ReadBlob(%q) accepted", bad)
		}
		if j.Blobs().Has(bad) {
			t.Errorf("Has(%q)", bad)
		}
	}
	w, _ := j.NewBlobWriter()
	w.Write([]byte("half"))
	w.Abort()
	if err := w.Close(); err == nil {
		t.Error("Close after Abort succeeded")
	}
	entries, _ := os.ReadDir(filepath.Join(j.Dir(), "objects"))
	if len(entries) != 0 {
		t.Errorf("aborted write left %v", entries)
	}
}

func TestBlobRoundTripProperty(t *testing.T) {
	j := openT(t, newRepo(t))
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 0, 4096).Draw(t, "b")
		h, err := j.PutBlob(b)
		if err != nil {
			t.Fatal(err)
		}
		if h != HashBytes(b) {
			t.Fatalf("hash %s, want sha256 %s", h, HashBytes(b))
		}
		got, err := j.ReadBlob(h)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("round trip: %q, %v", got, err)
		}
		// Same content, same hash, whichever way it is written.
		w, _ := j.NewBlobWriter()
		split := rapid.IntRange(0, len(b)).Draw(t, "split")
		w.Write(b[:split])
		w.Write(b[split:])
		if err := w.Close(); err != nil || w.Hash() != h {
			t.Fatalf("streamed hash %s, %v; Put gave %s", w.Hash(), err, h)
		}
		if !j.Blobs().Has(h) {
			t.Fatal("Has after Put is false")
		}
	})
}

// A batch stores blobs checked against their names; one that does not
// match is refused, and an aborted batch leaves nothing behind. Committed,
// the blobs read back from the pack, in this store and in another that
// opens the same directory.
func TestBlobBatch(t *testing.T) {
	s := openT(t, newRepo(t)).Blobs()
	good, bad, file := []byte("good\n"), []byte("bad\n"), []byte("gate output\n")
	b, err := s.NewBatch()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add(HashBytes(good), bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if s.Has(HashBytes(good)) {
		t.Fatal("a blob is in place before Commit")
	}
	if err := b.Add(HashBytes(file), bytes.NewReader(bad)); !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("mismatched content: %v, want ErrBlobMismatch", err)
	}
	b.Abort()
	if es, _ := os.ReadDir(s.dir); len(es) != 0 {
		t.Fatalf("left after Abort: %v", es)
	}
	b, _ = s.NewBatch()
	if err := b.Add(HashBytes(bad), bytes.NewReader(good)); !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("mismatched content: %v, want ErrBlobMismatch", err)
	}
	if err := b.Add(HashBytes(good), bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(HashBytes(file), bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	other := &Blobs{dir: s.dir, readOnly: true}
	for _, store := range []*Blobs{s, other} {
		for _, want := range [][]byte{good, file} {
			h := HashBytes(want)
			if got, err := store.ReadAll(h); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("after Commit: %q, %v", got, err)
			}
			r, err := store.Open(h)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(got, want) || !store.Has(h) {
				t.Fatalf("opened after Commit: %q, %v", got, err)
			}
		}
		if store.Has(HashBytes(bad)) {
			t.Fatal("a refused blob is in the store")
		}
	}
	for _, b := range [][]byte{good, file} {
		if p, _ := s.Path(HashBytes(b)); fileExists(p) {
			t.Errorf("Add's blob %q is a file of its own, not in the pack", b)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Missing names the blobs neither loose nor packed, whether or not their
// fan-out directory exists.
func TestBlobsMissing(t *testing.T) {
	j := openT(t, newRepo(t))
	have, err := j.PutBlob([]byte("have"))
	if err != nil {
		t.Fatal(err)
	}
	sameDir := have[:2] + strings.Repeat("0", 62)
	otherDir := func() string {
		if have[:2] == "ff" {
			return "00"
		}
		return "ff"
	}() + strings.Repeat("1", 62)
	got := j.Blobs().Missing([]string{have, sameDir, otherDir})
	if want := []string{sameDir, otherDir}; !slices.Equal(got, want) {
		t.Errorf("Missing = %v, want %v", got, want)
	}
}

// A pack a killed batch renamed into place without its index (the kill
// came between the two renames) was never seen; the next open of the
// journal removes it once it is old, as it removes stale temporary files,
// and leaves whole packs and a young pack (a live batch's) alone.
func TestStalePackRemoved(t *testing.T) {
	repo := newRepo(t)
	j := openT(t, repo)
	s := j.Blobs()
	b, err := s.NewBatch()
	if err != nil {
		t.Fatal(err)
	}
	blob := []byte("kept\n")
	if err := b.Add(HashBytes(blob), bytes.NewReader(blob)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.dir, packDir)
	old := time.Now().Add(-2 * time.Hour)
	orphan, young, temp := filepath.Join(dir, "orphan.pack"), filepath.Join(dir, "young.pack"), filepath.Join(s.dir, "tmp-pack-1")
	for _, p := range []string{orphan, temp} {
		if err := os.WriteFile(p, []byte("half a pull"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	es, _ := os.ReadDir(dir)
	for _, e := range es { // the whole pack is old too
		if err := os.Chtimes(filepath.Join(dir, e.Name()), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(temp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(young, []byte("a live batch's"), 0o444); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j = openT(t, repo)
	for _, p := range []string{orphan, temp} {
		if fileExists(p) {
			t.Errorf("%s is still there", filepath.Base(p))
		}
	}
	if !fileExists(young) {
		t.Error("a young pack without its index (a live batch's) was removed")
	}
	if got, err := j.Blobs().ReadAll(HashBytes(blob)); err != nil || !bytes.Equal(got, blob) {
		t.Errorf("the whole pack's blob: %q, %v", got, err)
	}
}
