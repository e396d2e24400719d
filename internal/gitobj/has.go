package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// has reports whether the object database holds id, as a loose object or
// in a pack (version 2 index), in the object directory or one of its
// alternates (objects/info/alternates). false also when it cannot tell:
// the caller then asks git, which looks everywhere it knows.
func has(objects string, h Hash, id string) bool {
	return typeOf(objects, h, id) != ""
}

// typeOf is the type of object id ("commit", "tree", "blob", "tag") as
// has finds it; "" when it is not found, and "?" when it is found but its
// type is not read for sure (a deltified object in a pack, a loose file
// that does not inflate): the caller then asks git.
func typeOf(objects string, h Hash, id string) string {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != h.HexLen()/2 {
		return ""
	}
	dirs := []string{objects}
	if b, err := os.ReadFile(filepath.Join(objects, "info", "alternates")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if l == "" || l[0] == '#' || l[0] == '"' {
				continue
			}
			if !filepath.IsAbs(l) {
				l = filepath.Join(objects, l)
			}
			dirs = append(dirs, l)
		}
	}
	for _, d := range dirs {
		if f, err := os.Open(filepath.Join(d, id[:2], id[2:])); err == nil {
			t := looseType(f)
			f.Close()
			return t
		}
		idx, _ := filepath.Glob(filepath.Join(d, "pack", "pack-*.idx"))
		for _, p := range idx {
			if off, ok := inIndex(p, raw); ok {
				return packedType(strings.TrimSuffix(p, ".idx")+".pack", off)
			}
		}
	}
	return ""
}

// looseType is the type a loose object file's header names ("?" when it
// does not read as one).
func looseType(f *os.File) string {
	zr, err := zlib.NewReader(f)
	if err != nil {
		return "?"
	}
	defer zr.Close()
	var b [8]byte
	n, _ := io.ReadFull(zr, b[:])
	t, _, ok := strings.Cut(string(b[:n]), " ")
	switch {
	case !ok:
		return "?"
	case t == "commit" || t == "tree" || t == "blob" || t == "tag":
		return t
	}
	return "?"
}

// packedType is the type of the object at offset off of a pack, through
// the chain of bases of a deltified one (OFS_DELTA, as git packs by
// default); "?" for a REF_DELTA or a pack that does not read.
func packedType(pack string, off int64) string {
	f, err := os.Open(pack)
	if err != nil {
		return "?"
	}
	defer f.Close()
	for depth := 0; depth < 4096 && off >= 12; depth++ {
		var b [32]byte
		n, _ := f.ReadAt(b[:], off)
		if n == 0 {
			return "?"
		}
		switch (b[0] >> 4) & 7 {
		case 1:
			return "commit"
		case 2:
			return "tree"
		case 3:
			return "blob"
		case 4:
			return "tag"
		case 6: // OFS_DELTA: its base is that far before it
			i := 0
			for i < n && b[i]&0x80 != 0 { // the size
				i++
			}
			i++
			if i >= n {
				return "?"
			}
			c := b[i]
			rel := int64(c & 0x7f)
			for c&0x80 != 0 {
				i++
				if i >= n || rel >= 1<<48 {
					return "?"
				}
				c = b[i]
				rel = (rel+1)<<7 | int64(c&0x7f)
			}
			if rel <= 0 || rel > off {
				return "?"
			}
			off -= rel
		default:
			return "?"
		}
	}
	return "?"
}

// inIndex looks raw up in a pack index of version 2 (a binary search with
// a few reads, not the whole file): where it is in the pack, and whether
// it is there.
func inIndex(path string, raw []byte) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var head [8 + 256*4]byte
	if _, err := f.ReadAt(head[:], 0); err != nil || !bytes.Equal(head[:8], []byte("\xfftOc\x00\x00\x00\x02")) {
		return 0, false
	}
	fan := func(i int) uint32 {
		if i < 0 {
			return 0
		}
		return binary.BigEndian.Uint32(head[8+4*i:])
	}
	lo, hi := int64(fan(int(raw[0])-1)), int64(fan(int(raw[0])))
	n := int64(len(raw))
	name := make([]byte, n)
	for lo < hi {
		mid := (lo + hi) / 2
		if _, err := f.ReadAt(name, int64(len(head))+mid*n); err != nil {
			return 0, false
		}
		switch c := bytes.Compare(name, raw); {
		case c == 0:
			return offsetOf(f, int64(fan(255)), mid, n), true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

// offsetOf is where the i-th of the count objects of a version 2 pack
// index f (ids n bytes long) is in its pack; 0 when it cannot be read.
func offsetOf(f *os.File, count, i, n int64) int64 {
	base := int64(8+256*4) + count*(n+4) // past the ids and their CRCs
	var b [8]byte
	if _, err := f.ReadAt(b[:4], base+4*i); err != nil {
		return 0
	}
	off := binary.BigEndian.Uint32(b[:4])
	if off&0x80000000 == 0 {
		return int64(off)
	}
	if _, err := f.ReadAt(b[:], base+4*count+8*int64(off&0x7fffffff)); err != nil {
		return 0
	}
	v := binary.BigEndian.Uint64(b[:])
	if v > 1<<62 {
		return 0
	}
	return int64(v)
}

// maxLooseRead is the largest object ReadLoose reads.
const maxLooseRead = 16 << 20

// ReadLoose reads object id where objects (an object directory, its
// alternates not looked in) stores it loose: its kind and body, checked
// against id (the body hashes to it). ok is false when it is not stored
// loose there, or does not read for sure (damaged, larger than
// maxLooseRead): the caller then asks git, which looks everywhere it
// knows.
func ReadLoose(objects string, h Hash, id string) (kind string, body []byte, ok bool) {
	if _, err := hex.DecodeString(id); err != nil || len(id) != h.HexLen() {
		return "", nil, false
	}
	f, err := os.Open(filepath.Join(objects, id[:2], id[2:]))
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return "", nil, false
	}
	defer zr.Close()
	br := bufio.NewReader(io.LimitReader(zr, maxLooseRead+64))
	hdr, err := br.ReadString(0)
	if err != nil {
		return "", nil, false
	}
	kind, size, found := strings.Cut(strings.TrimSuffix(hdr, "\x00"), " ")
	n, err := strconv.ParseInt(size, 10, 64)
	if !found || err != nil || n < 0 || n > maxLooseRead {
		return "", nil, false
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return "", nil, false
	}
	if _, err := br.ReadByte(); err != io.EOF || ID(h, kind, body) != id {
		return "", nil, false // more than the header says, or not id's body
	}
	return kind, body, true
}

// HasTree reports whether the Writer's object directory (or one of its
// alternates) holds tree id, as a loose object or in a pack; false also
// when it cannot tell (the caller then asks git), or when git writes
// (not InProcess).
func (w *Writer) HasTree(id string) bool {
	return w.InProcess() && typeOf(w.objects, w.repo.Hash, id) == "tree"
}
