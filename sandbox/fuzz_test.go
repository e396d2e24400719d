package sandbox

import (
	"strings"
	"testing"
)

// packed-refs is written by the call before: whatever it holds, the refs
// read from it are well-formed, inside the namespaces asked for, and
// cannot name a path outside refs/.
func FuzzPackedRefs(f *testing.F) {
	a := strings.Repeat("a", 40)
	f.Add([]byte("# pack-refs with: peeled fully-peeled sorted \n" + a + " refs/implloop/runs/r-1\n^" + a + "\n"))
	f.Add([]byte(a + " refs/implloop/../../../etc/passwd\n" + a + " refs/implloop/x.lock\n"))
	f.Add([]byte(a + " refs/implloop//x\n" + a + " refs/implloop-pull/o/runs/r\n\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, r := range packedRefs(b, []string{"refs/implloop", "refs/implloop-pull"}) {
			if !validOID(r.oid) {
				t.Fatalf("oid %q", r.oid)
			}
			if !strings.HasPrefix(r.name, "refs/implloop/") && !strings.HasPrefix(r.name, "refs/implloop-pull/") {
				t.Fatalf("name %q outside the namespaces", r.name)
			}
			for _, part := range strings.Split(r.name, "/") {
				if part == "" || part == "." || part == ".." {
					t.Fatalf("name %q", r.name)
				}
			}
			if strings.ContainsAny(r.name, "\x00\n\\") || strings.HasSuffix(r.name, ".lock") {
				t.Fatalf("name %q", r.name)
			}
		}
	})
}
