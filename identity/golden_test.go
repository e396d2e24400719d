package identity

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden vectors in testdata/identity")

// goldenDir holds one file per vector with its exact canonical bytes (no
// trailing newline) and digests.txt with "NAME DIGEST" lines, so any tool
// can check a vector: printf 'implloop.unit\0v1\0' | cat - NAME.json | sha256sum
var goldenDir = filepath.Join("..", "testdata", "identity")

type vector struct {
	name string
	p    Preimage
}

// goldenVectors are ten fixed preimages. Never edit one in place: a changed
// vector means identities changed, which needs a version bump.
func goldenVectors() []vector {
	plan := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	pre := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	return []vector{
		{"01-minimal", Preimage{Role: "implement", Agent: "exec", Instructions: instr, Attempt: 1}},
		{"02-task", Preimage{Role: "implement", Agent: "claude", Model: "sonnet", Instructions: instr,
			Task: &TaskInput{ID: "10", Text: "### Task 10: write the file\nWRITE out/f10.txt hello"}, PreambleSHA256: pre, Attempt: 1}},
		{"03-retry-with-feedback", Preimage{Role: "implement", Agent: "claude", Model: "sonnet", Instructions: instr,
			Task: &TaskInput{ID: "10", Text: "### Task 10: write the file\nWRITE out/f10.txt hello"}, PreambleSHA256: pre, Attempt: 2,
			GateFeedback: "FAIL <PROJECT>/out/f10_test.go:12: want \"hello\", got \"\"\n--- at <TIME>"}},
		{"04-plan-reader", Preimage{Role: "review", Agent: "codex", Model: "gpt-5", Instructions: instr, PlanSHA256: plan,
			PreambleSHA256: pre, Task: &TaskInput{ID: "T010", Text: "- [ ] T010 [P] [US1] review the login flow"}, Attempt: 1, TimeoutSeconds: 900}},
		{"05-deps-and-env", Preimage{Role: "implement", Agent: "exec", Instructions: instr, Attempt: 1,
			Task:      &TaskInput{ID: "3.2", Text: "depends on 3.1\nbuild the API"},
			Artifacts: []string{"sha256:c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2", "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"},
			Env:       []string{"PATH", "GOFLAGS", "API_TOKEN"}}},
		{"06-params-utf16-order", Preimage{Role: "implement", Agent: "exec", Instructions: instr, Attempt: 1,
			Params: map[string]string{"z": "last", "A": "upper", "é": "e-acute", "\U0001F600": "emoji", "\uff61": "halfwidth", "a b": "space"}}},
		{"07-free-prompt", Preimage{Role: "implement", Agent: "exec", Instructions: "", Attempt: 1,
			Prompt: "Fix <PROJECT>/main.go\tnow.\nQuote \" backslash \\ control \x01 line-sep \u2028 <UUID-1> & <RUN-1>"}},
		{"08-unicode-composed", Preimage{Role: "implement", Agent: "gemini", Instructions: instr, Attempt: 1,
			Task: &TaskInput{ID: "1", Text: "caf\u00e9 — 日本語 ✓"}}},
		{"09-unicode-decomposed", Preimage{Role: "implement", Agent: "gemini", Instructions: instr, Attempt: 1,
			Task: &TaskInput{ID: "1", Text: "cafe\u0301 — 日本語 ✓"}}},
		{"10-templates-and-hex", Preimage{Role: "implement", Agent: "builtin", Model: "none", Instructions: instr, Attempt: 3,
			Task: &TaskInput{ID: "7", Text: "run ${{ x }} for {{item}}; plan " + plan}, GateFeedback: "exit status 1",
			TimeoutSeconds: 60, Env: []string{"HOME"}, Params: map[string]string{"branch": "main"}}},
	}
}

func TestGoldenVectors(t *testing.T) {
	var digests strings.Builder
	for _, v := range goldenVectors() {
		c := mustCanonical(t, v.p)
		d := DigestCanonical(c)
		fmt.Fprintf(&digests, "%s %s\n", v.name, d)
		path := filepath.Join(goldenDir, v.name+".json")
		if *update {
			if err := os.MkdirAll(goldenDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, c, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./identity -run TestGoldenVectors -update to create it)", err)
		}
		if !bytes.Equal(c, want) {
			t.Errorf("%s: canonical bytes changed: identities of version %s must never change; bump Version instead\n got %s\nwant %s", v.name, Version, c, want)
		}
	}
	path := filepath.Join(goldenDir, "digests.txt")
	if *update {
		if err := os.WriteFile(path, []byte(digests.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != digests.String() {
		t.Errorf("digests changed:\n got:\n%s\nwant:\n%s", digests.String(), want)
	}
}

// The files alone define the digests: re-hashing each stored file gives its
// listed digest, and the vectors are pairwise distinct.
func TestGoldenFilesSelfConsistent(t *testing.T) {
	if *update {
		t.Skip("updating")
	}
	list, err := os.ReadFile(filepath.Join(goldenDir, "digests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(list)), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d vectors, want 10", len(lines))
	}
	seen := map[string]bool{}
	for _, line := range lines {
		name, digest, _ := strings.Cut(line, " ")
		b, err := os.ReadFile(filepath.Join(goldenDir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if got := DigestCanonical(b); got != digest {
			t.Errorf("%s: stored bytes hash to %s, listed %s", name, got, digest)
		}
		if _, err := Parse(b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if seen[digest] {
			t.Errorf("%s: duplicate digest", name)
		}
		seen[digest] = true
	}
}
