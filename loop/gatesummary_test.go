package loop

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A failed gate is summed up by its first error line, not its last line
// (FAIL, exit status 1), for each common toolchain's output.
func TestGateSummary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, out, want string }{
		{"go build error", "# example.com/x\n./main.go:12:3: undefined: Foo\n./main.go:14:1: missing return\nFAIL\texample.com/x [build failed]\nFAIL\n", "./main.go:12:3: undefined: Foo"},
		{"go test failure", "--- FAIL: TestWords (0.00s)\n    words_test.go:17: Words(\"a b\") = 1, want 2\nFAIL\nexit status 1\nFAIL\texample.com/x\t0.004s\n", "words_test.go:17: Words(\"a b\") = 1, want 2"},
		{"go test name only", "--- FAIL: TestWords (0.00s)\nFAIL\nexit status 1\n", "--- FAIL: TestWords (0.00s)"},
		{"pytest", "============ FAILURES ============\n___ test_add ___\n    def test_add():\n>       assert add(1, 2) == 4\nE       assert 3 == 4\n\ntests/test_calc.py:4: AssertionError\n=== short test summary info ===\nFAILED tests/test_calc.py::test_add - assert 3 == 4\n==== 1 failed in 0.02s ====\n", "tests/test_calc.py:4: AssertionError"},
		{"cargo", "   Compiling x v0.1.0\nerror[E0425]: cannot find value `y` in this scope\n --> src/main.rs:2:5\n\nerror: could not compile `x`\n", "error[E0425]: cannot find value `y` in this scope"},
		{"npm/jest", "> x@1.0.0 test\n> jest\n\n FAIL  ./sum.test.js\n  ● adds 1 + 2 to equal 3\n\n    expect(received).toBe(expected)\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 1\n", "● adds 1 + 2 to equal 3"},
		{"plain message", "checking out.txt\nout.txt: wrong content\nexit status 1\n", "out.txt: wrong content"},
		{"only noise", "FAIL\nexit status 1\n", "exit status 1"},
		{"a silent gate", "", ""},
		{"make", "cc -o x x.c\nx.c: In function 'main':\nx.c:3:5: error: 'y' undeclared\nmake: *** [Makefile:2: x] Error 1\n", "x.c:3:5: error: 'y' undeclared"},
	} {
		if got := GateSummary(c.out); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// FuzzGateSummary: any gate output gives one line of it (or nothing for
// blank output), at most 160 runes.
func FuzzGateSummary(f *testing.F) {
	f.Add("--- FAIL: TestX (0.00s)\nFAIL\nexit status 1\n")
	f.Add("x.go:1:2: undefined: y\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, out string) {
		s := GateSummary(out)
		if strings.Contains(s, "\n") || utf8.RuneCountInString(s) > 160 {
			t.Errorf("summary %q is not one short line", s)
		}
		if strings.TrimSpace(out) == "" && s != "" {
			t.Errorf("blank output summed up as %q", s)
		}
	})
}
