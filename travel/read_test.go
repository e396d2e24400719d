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

// FuzzParseSize: a size as typed for pull's caps parses to a positive
// number of bytes or an error, never a panic; what FormatSize writes of it
// reads back within its rounding.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64M", "2G", "1", "512K", "1.5G", "10MiB", "3kb", "-1", "0", "9223372036854775807T", " 7 m ", "G", "12X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n <= 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if out := FormatSize(n); out == "" {
			t.Fatalf("FormatSize(%d) is empty", n)
		}
	})
}

// TestParseSize: the units, and what is refused.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "64M": 64 << 20, "64MiB": 64 << 20, "64mb": 64 << 20, "2G": 2 << 30, "3k": 3 << 10, " 5 T": 5 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-5M", "1.5G", "12X", "M", "99999999999T", "iB"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
	for n, want := range map[int64]string{512: "512 B", 64 << 20: "64 MiB", 1536: "1.5 KiB", 2 << 30: "2 GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
