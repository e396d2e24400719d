package loop

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"", 4, ""},
		{"abc\ndef\n", 4, "def\n"},
		// The cut lands right after a newline: the whole line stays.
		{"ab\ncd\nef", 5, "cd\nef"},
		// The cut lands inside a line: the partial line goes.
		{"abc\nxcd\nef", 5, "ef"},
		// No newline in the tail: cut, but never inside a UTF-8 sequence.
		{"ééééé", 5, "éé"},
		{"xéééé", 4, "éé"},
		{"0123456789", 3, "789"},
	} {
		if got := tail([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestTailProperties: the feedback an agent gets is a suffix of the gate
// output, at most n bytes, valid UTF-8 when the output is, and starts at a
// line start whenever the tail holds a newline before its last byte.
func TestTailProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.SampledFrom([]rune{'a', 'b', '\n', 'é', '€', '𝄞', ' '})).Draw(t, "s")
		n := rapid.IntRange(1, 64).Draw(t, "n")
		got := tail([]byte(s), n)
		if !strings.HasSuffix(s, got) {
			t.Fatalf("tail %q is not a suffix of %q", got, s)
		}
		if len(s) <= n && got != s {
			t.Fatalf("short input %q changed to %q", s, got)
		}
		if len(got) > n {
			t.Fatalf("tail %q longer than %d", got, n)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("tail %q of %q is not valid UTF-8", got, s)
		}
		if start := len(s) - len(got); len(s) > n && start > 0 && s[start-1] != '\n' {
			cut := s[len(s)-n:]
			if i := strings.IndexByte(cut, '\n'); i >= 0 && i < len(cut)-1 {
				t.Fatalf("tail %q of %q starts mid-line though the window has a newline", got, s)
			}
		}
	})
}

func TestWriteBlockedFencesOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := "before\n```\nnot the end\n```\nafter\n"
	err := writeBlocked(dir, []blockInfo{{RunID: "r-1", PlanPath: "plan.md", TaskID: "3", Title: "T", Attempts: 2,
		Reason: "the gate failed on 2 attempt(s)", Gate: "make test", Output: out}})
	if err != nil {
		t.Fatal(err)
	}
	b := readFile(t, dir+"/"+BlockedFile)
	if !strings.Contains(b, "````text\n"+strings.TrimRight(out, "\n")+"\n````\n") {
		t.Errorf("gate output not fenced with four backticks:\n%s", b)
	}
}
