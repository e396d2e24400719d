package extractor

import (
	"errors"
	"testing"
)

// FuzzParseRange: --task-range is user input. Any string either parses or
// is a *RangeSyntaxError naming the accepted forms; a parsed range answers
// Contains for any id without panicking, and parses again from its String.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"", "10:13", "10:", ":5", "7", "T010:T013", "3.2", "3.2:4", "a:b", "::", "1:2:3", " 7 ", "T", "-1", "99999999999999999999"} {
		f.Add(s, "10")
	}
	f.Fuzz(func(t *testing.T, s, id string) {
		r, err := ParseRange(s)
		if err != nil {
			var se *RangeSyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseRange(%q): %T is not a *RangeSyntaxError", s, err)
			}
			return
		}
		got := r.Contains(id)
		r2, err := ParseRange(r.String())
		if err != nil {
			t.Fatalf("ParseRange(%q).String() = %q does not parse: %v", s, r.String(), err)
		}
		if r2.Contains(id) != got {
			t.Fatalf("range %q and its String %q disagree on %q", s, r.String(), id)
		}
	})
}
