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
