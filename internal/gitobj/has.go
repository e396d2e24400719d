package gitobj

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// has reports whether the object database holds id, as a loose object or
// in a pack (version 2 index), in the object directory or one of its
// alternates (objects/info/alternates). false also when it cannot tell:
// the caller then asks git, which looks everywhere it knows.
func has(objects string, h Hash, id string) bool {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != h.HexLen()/2 {
		return false
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
		if _, err := os.Stat(filepath.Join(d, id[:2], id[2:])); err == nil {
			return true
		}
		idx, _ := filepath.Glob(filepath.Join(d, "pack", "pack-*.idx"))
		for _, p := range idx {
			if inIndex(p, raw) {
				return true
			}
		}
	}
	return false
}

// inIndex looks raw up in a pack index of version 2 (a binary search with
// a few reads, not the whole file).
func inIndex(path string, raw []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [8 + 256*4]byte
	if _, err := f.ReadAt(head[:], 0); err != nil || !bytes.Equal(head[:8], []byte("\xfftOc\x00\x00\x00\x02")) {
		return false
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
			return false
		}
		switch c := bytes.Compare(name, raw); {
		case c == 0:
			return true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return false
}
