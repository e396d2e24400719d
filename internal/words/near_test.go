package words

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"builtin", "claude", "codex", "exec", "gemini", "opencode"}
	for s, want := range map[string]string{
		"clade":    "claude", // one deletion
		"cluade":   "claude", // a swap of neighbours
		"gemnii":   "gemini",
		"opencde":  "opencode",
		"codx":     "codex",
		"xyzzy":    "",
		"cl":       "",
		"claude":   "claude",
		"opencodx": "opencode",
	} {
		if got := Nearest(s, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", s, got, want)
		}
	}
}
