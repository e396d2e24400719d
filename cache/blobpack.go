package cache

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Packs hold blobs that arrive many at once (a pull of a hundred runs
// brings tens of thousands of small blobs): one file per blob would cost a
// file creation, a rename and a directory entry each, several times the
// `git fetch` that brought them. A pack is objects/packs/<name>.pack, the
// blobs' contents end to end, and <name>.idx beside it, one line
// "<sha256> <offset> <size>" per blob. The index is renamed into place
// after the pack is durable, so a pack is seen only whole; a pack without
// an index (a batch killed between the two renames) is not seen at all,
// and the journal's next open removes it once it is an hour old. A blob is looked up as a loose file first,
// then in the packs, whose indexes are read on the first miss and again
// whenever a miss meets an index not read yet.
const packDir = "packs"

// packed is where a packed blob's bytes are.
type packed struct {
	pack      string // path of the .pack file
	off, size int64
}

// knownPacked finds h in the pack indexes read so far, without a system
// call.
func (s *Blobs) knownPacked(h string) (packed, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.packed[h]
	return p, ok
}

// lookupPacked finds h in the packs, reading the indexes of packs added
// since the last look.
func (s *Blobs) lookupPacked(h string) (packed, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.packed[h]; ok {
		return p, true
	}
	s.refreshLocked()
	p, ok := s.packed[h]
	return p, ok
}

// refreshLocked reads the indexes of packs added since the last look (the
// packs directory changed); under s.mu.
func (s *Blobs) refreshLocked() {
	dir := filepath.Join(s.dir, packDir)
	fi, err := os.Stat(dir)
	// An mtime is trusted once it is a second old: a pack added in the
	// same clock tick as the last look leaves it as it was.
	if err != nil || fi.ModTime().Equal(s.packsMod) && time.Since(fi.ModTime()) > time.Second {
		return
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	s.packsMod = fi.ModTime()
	for _, e := range es {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || s.packsRead[name] {
			continue
		}
		if err := s.readIndex(name); err != nil {
			continue // a damaged index hides its pack; Check reports the blobs it lacks
		}
	}
}

// readIndex adds pack name's index to s.packed; under s.mu.
func (s *Blobs) readIndex(name string) error {
	f, err := os.Open(filepath.Join(s.dir, packDir, name+".idx"))
	if err != nil {
		return err
	}
	defer f.Close()
	return s.addIndex(name, f)
}

// addIndex adds the index of pack name, read from r, to s.packed; under
// s.mu.
func (s *Blobs) addIndex(name string, r io.Reader) error {
	entries := map[string]packed{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || !validHash(fs[0]) {
			return fmt.Errorf("pack index %s: bad line %q", name, sc.Text())
		}
		off, err1 := strconv.ParseInt(fs[1], 10, 64)
		size, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 != nil || err2 != nil || off < 0 || size < 0 {
			return fmt.Errorf("pack index %s: bad line %q", name, sc.Text())
		}
		entries[fs[0]] = packed{off: off, size: size}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	s.addPackedLocked(name, entries)
	return nil
}

// addPacked adds the entries of pack name (offsets and sizes) to s.packed.
func (s *Blobs) addPacked(name string, entries map[string]packed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addPackedLocked(name, entries)
}

func (s *Blobs) addPackedLocked(name string, entries map[string]packed) {
	if s.packed == nil {
		s.packed, s.packsRead = map[string]packed{}, map[string]bool{}
	}
	pack := filepath.Join(s.dir, packDir, name+".pack")
	for h, p := range entries {
		if _, ok := s.packed[h]; !ok {
			p.pack = pack
			s.packed[h] = p
		}
	}
	s.packsRead[name] = true
}

// Missing are the hashes of hs the store does not have: one look at the
// packs for all of them, then a file look for each not packed.
func (s *Blobs) Missing(hs []string) []string {
	s.mu.Lock()
	s.refreshLocked()
	s.mu.Unlock()
	var out []string
	// A fan-out directory that is not there holds none of its blobs: one
	// look at it, not one per blob (a pull into a new clone asks for
	// tens of thousands).
	noDir := map[string]bool{}
	for _, h := range hs {
		if _, ok := s.knownPacked(h); ok {
			continue
		}
		p, err := s.Path(h)
		if err != nil {
			out = append(out, h)
			continue
		}
		dir := p[:len(p)-len(h)+1] // p less its separator and h[2:]
		absent, seen := noDir[dir]
		if !seen {
			_, err := os.Stat(dir)
			absent = errors.Is(err, fs.ErrNotExist)
			noDir[dir] = absent
		}
		if absent {
			out = append(out, h)
			continue
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			out = append(out, h)
		}
	}
	return out
}

// openPacked opens a packed blob.
func (s *Blobs) openPacked(h string) (io.ReadCloser, error) {
	p, ok := s.lookupPacked(h)
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", h, ErrBlobNotFound)
	}
	f, err := os.Open(p.pack)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("blob %s: its pack is gone: %w", h, ErrBlobNotFound)
		}
		return nil, err
	}
	return packReader{io.NewSectionReader(f, p.off, p.size), f}, nil
}

type packReader struct {
	*io.SectionReader
	f *os.File
}

func (r packReader) Close() error { return r.f.Close() }
