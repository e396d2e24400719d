package mdfence

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// BLOCKED.md fences a blocked task's gate output with For; a unit's attached
// context and the reference pages' blocks are fenced the same way.
func TestFenceFor(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "```"},
		{"plain output", "```"},
		{"a `b` ``c``", "```"},
		{"```go\ncode\n```", "````"},
		{"x ````` y ``` z", "``````"},
		{"`", "```"},
	} {
		if got := For(tc.in); got != tc.want {
			t.Errorf("For(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFenceForProperty: no backtick run in the text is as long as the
// fence, so gate output can never close BLOCKED.md's block early.
func TestFenceForProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.SampledFrom([]rune{'`', 'a', '\n', '~'})).Draw(t, "s")
		f := For(s)
		if len(f) < 3 || strings.Trim(f, "`") != "" {
			t.Fatalf("fence %q", f)
		}
		if strings.Contains(s, f) {
			t.Fatalf("fence %q occurs in %q", f, s)
		}
	})
}

// For takes bytes as it takes a string.
func TestForBytes(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a `code` span", "```go\nx\n```", "`````` and ``"} {
		if For([]byte(s)) != For(s) {
			t.Errorf("For([]byte(%q)) = %q, For(%q) = %q", s, For([]byte(s)), s, For(s))
		}
	}
}
