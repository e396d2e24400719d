package boundary

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseNameStatus: whatever git prints, the parser does not panic, and
// entries written the way git writes them come back unchanged.
func FuzzParseNameStatus(f *testing.F) {
	f.Add([]byte("A\x00BLOCKED.md\x00M\x00plan.md\x00"), "M", "dir/a b.md")
	f.Add([]byte(""), "D", ".implloop/state.db")
	f.Add([]byte("A\x00"), "T", "x")
	f.Fuzz(func(t *testing.T, raw []byte, status, path string) {
		_ = parseNameStatus(raw)
		if status == "" || path == "" || strings.ContainsRune(status+path, 0) {
			return
		}
		var b bytes.Buffer
		for range 3 {
			b.WriteString(status + "\x00" + path + "\x00")
		}
		got := parseNameStatus(b.Bytes())
		if len(got) != 3 {
			t.Fatalf("%d entries, want 3", len(got))
		}
		for _, e := range got {
			if e.Status != status || e.Path != path {
				t.Fatalf("got %+v, want %q %q", e, status, path)
			}
		}
	})
}
