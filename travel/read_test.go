package travel

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// FuzzReadTree: a tree object from a remote (untrusted) is parsed without
// panicking, and every entry it accepts has a mode, a name and an object
// id of the right length.
func FuzzReadTree(f *testing.F) {
	oid := bytes.Repeat([]byte{0xab}, 20)
	f.Add(append([]byte("100644 run.json\x00"), oid...), 20)
	f.Add(append(append([]byte("40000 blobs\x00"), oid...), append([]byte("100644 x\x00"), oid...)...), 20)
	f.Add([]byte("100644 short\x00abc"), 32)
	f.Fuzz(func(t *testing.T, data []byte, oidLen int) {
		if oidLen != 20 && oidLen != 32 {
			return
		}
		_ = readTree(bytes.NewReader(data), oidLen, func(mode, name, oid string) error {
			if mode == "" || strings.ContainsRune(name, 0) || len(oid) != 2*oidLen {
				t.Fatalf("entry %q %q %q", mode, name, oid)
			}
			if _, err := hex.DecodeString(oid); err != nil {
				t.Fatal(err)
			}
			return nil
		})
	})
}

// TestParseCatHeader: the headers `git cat-file --batch` writes, and what
// it writes for an object it lacks.
func TestParseCatHeader(t *testing.T) {
	for _, c := range []struct {
		in   string
		typ  string
		size int64
		ok   bool
	}{
		{"0123abcd blob 12\n", "blob", 12, true},
		{"0123abcd tree 0\n", "tree", 0, true},
		{"0123abcd commit 250\n", "commit", 250, true},
		{"0123abcd tag 7\n", "tag", 7, true},
		{"0123abcd missing\n", "", 0, false},
		{"0123abcd ambiguous\n", "", 0, false},
		{"0123abcd blob -1\n", "", 0, false},
		{"0123abcd blob 1x\n", "", 0, false},
		{"0123abcd blob \n", "", 0, false},
		{"0123abcd blob 9999999999999999999\n", "", 0, false},
		{"\n", "", 0, false},
	} {
		typ, size, ok := parseCatHeader([]byte(c.in))
		if ok != c.ok || ok && (typ != c.typ || size != c.size) {
			t.Errorf("%q: %q %d %v, want %q %d %v", c.in, typ, size, ok, c.typ, c.size, c.ok)
		}
	}
}
