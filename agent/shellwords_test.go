package agent

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"claude -p", []string{"claude", "-p"}},
		{"\n  a\tb c \n ", []string{"a", "b", "c"}},
		{`my-agent --prompt-file "$IMPLLOOP_PROMPT_FILE"`, nil}, // needs a shell
		{`my-agent --name 'two words' "and more"`, []string{"my-agent", "--name", "two words", "and more"}},
		{`a 'it'\''s' b`, []string{"a", "it's", "b"}},
		{`a "x\"y\\z\$w\a"`, []string{"a", `x"y\z$w\a`}},
		{`a 'no $expansion or \escapes'`, []string{"a", `no $expansion or \escapes`}},
		{`a b\ c d\\e`, []string{"a", "b c", `d\e`}},
		{"a \\\nb", []string{"a", "b"}},
		{"a 'x\\\ny'", []string{"a", "x\\\ny"}},
		{`a '' ""`, []string{"a", "", ""}},
		{`a x'y'"z"`, []string{"a", "xyz"}},
		{`a b#c`, []string{"a", "b#c"}},
		{`a '#c' \#d`, []string{"a", "#c", "#d"}},
		{`a x=1`, []string{"a", "x=1"}},
		{`'X=1' a`, []string{"X=1", "a"}},
		{`a *.go ~/x`, []string{"a", "*.go", "~/x"}},
	} {
		got, err := SplitCommand(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("SplitCommand(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestSplitCommandRefuses(t *testing.T) {
	for _, in := range []string{
		"", "   ", "a 'b", `a "b`, `a b\`,
		"a | b", "a && b", "a; b", "a > f", "a < f", "a (b)", "a $HOME", "a `id`",
		`a "$HOME"`, "a \"`id`\"", "a #comment", "a\nb", "FOO=1 a", "FOO=1",
	} {
		if got, err := SplitCommand(in); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", in, got)
		}
	}
}

func TestQuoteCommandRoundTrip(t *testing.T) {
	argv := []string{"agent", "", "two words", "it's", `back\slash`, "$HOME", "a|b", "#x", "X=1", "new\nline", "`tick`", "*"}
	got, err := SplitCommand(QuoteCommand(argv))
	if err != nil || !reflect.DeepEqual(got, argv) {
		t.Fatalf("round trip: %q, %v", got, err)
	}
}

// shWords is what /bin/sh makes of `printf '%s\0' WORDS`: the oracle for
// how a POSIX shell splits words.
func shWords(words string) ([]string, error) {
	// Blank lines before the words would end the printf command early.
	words = strings.TrimLeft(words, " \t\n")
	out, err := exec.Command("sh", "-c", `printf '%s\0' `+words).Output()
	if err != nil {
		return nil, err
	}
	s := strings.TrimSuffix(string(out), "\x00")
	return strings.Split(s, "\x00"), nil
}

// comparableWithSh reports whether sh would split s the way SplitCommand
// promises to: no NUL, no glob or tilde expansion in play.
func comparableWithSh(s string) bool {
	return !strings.ContainsAny(s, "\x00*?[~") && strings.TrimSpace(s) != ""
}

func TestSplitCommandMatchesSh(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	for _, in := range []string{
		`a 'b c' "d e" f\ g`, `x"y\"z"'w'`, `"a\b\$c\\d"`, "a\\\nb 'c\\\nd' \"e\\\nf\"", `'' "" x`, `a#b '#' \#`,
	} {
		got, err := SplitCommand("printf " + in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		want, err := shWords(in)
		if err != nil || !reflect.DeepEqual(got[1:], want) {
			t.Errorf("%q: split %q, sh %q (%v)", in, got[1:], want, err)
		}
	}
}

func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{
		"claude -p", `a 'b c' "d\"e" f\ g`, "a \\\nb", `''`, `x=1 y`, "a | b", `"$x"`, "a\tb\nc", "\na b\n", `a 'it'\''s'`,
	} {
		f.Add(s)
	}
	_, err := exec.LookPath("sh")
	haveSh := err == nil
	f.Fuzz(func(t *testing.T, s string) {
		argv, err := SplitCommand(s)
		if err != nil {
			return
		}
		if len(argv) == 0 {
			t.Fatal("no error and no words")
		}
		// Quoting the words gives them back.
		again, err := SplitCommand(QuoteCommand(argv))
		if err != nil || !reflect.DeepEqual(again, argv) {
			t.Fatalf("round trip of %q: %q, %v", argv, again, err)
		}
		// And a real shell agrees on every word.
		if haveSh && comparableWithSh(s) {
			want, err := shWords(s)
			if err != nil || !reflect.DeepEqual(argv, want) {
				t.Fatalf("SplitCommand(%q) = %q, sh says %q (%v)", s, argv, want, err)
			}
		}
	})
}
