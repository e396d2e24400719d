package identity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

const instr = "5d41402abc4b2a76b9719d911017c592ae5d3c3e1f8d2f1a4b5c6d7e8f901234"

func basePreimage() Preimage {
	return Preimage{
		Role:         "implement",
		Agent:        "exec",
		Instructions: instr,
		Task:         &TaskInput{ID: "10", Text: "### Task 10: write the file\nWRITE out/f10.txt hello"},
		Attempt:      1,
	}
}

// tb is what both *testing.T and *rapid.T offer.
type tb interface {
	Helper()
	Fatal(args ...any)
}

func mustDigest(t tb, p Preimage) string {
	t.Helper()
	d, err := Digest(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustCanonical(t tb, p Preimage) []byte {
	t.Helper()
	c, err := Canonical(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDigestFormula(t *testing.T) {
	t.Parallel()
	p := basePreimage()
	c := mustCanonical(t, p)
	sum := sha256.Sum256(append([]byte("implloop.unit\x00v1\x00"), c...))
	want := "u1:" + hex.EncodeToString(sum[:])
	if got := mustDigest(t, p); got != want {
		t.Fatalf("Digest = %s, want %s", got, want)
	}
	if got := DigestCanonical(c); got != want {
		t.Fatalf("DigestCanonical = %s, want %s", got, want)
	}
}

func TestCanonicalOmitsUnsetOptionalKeys(t *testing.T) {
	t.Parallel()
	p := Preimage{Role: "implement", Agent: "exec", Attempt: 1, Params: map[string]string{}, Env: []string{}, Artifacts: []string{}}
	got := string(mustCanonical(t, p))
	want := `{"agent":"exec","attempt":1,"instructions":"","role":"implement","v":"1"}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	for _, key := range []string{"null", "model", "task", "preamble_sha256", "plan_sha256", "prompt", "gate_feedback", "artifacts", "timeout_s", "env", "params"} {
		if strings.Contains(got, key) {
			t.Errorf("canonical form mentions %q", key)
		}
	}
}

func TestCanonicalSortsSetsAndFillsVersion(t *testing.T) {
	t.Parallel()
	p := basePreimage()
	p.Env = []string{"PATH", "API_TOKEN", "PATH"}
	p.Artifacts = []string{"cc", "aa", "bb", "aa"}
	got := string(mustCanonical(t, p))
	if !strings.Contains(got, `"env":["API_TOKEN","PATH"]`) || !strings.Contains(got, `"artifacts":["aa","bb","cc"]`) || !strings.Contains(got, `"v":"1"`) {
		t.Fatalf("got %s", got)
	}
	if p.Env[0] != "PATH" || p.Artifacts[0] != "cc" {
		t.Fatal("Canonical modified its argument")
	}
	p.Version = "1"
	if string(mustCanonical(t, p)) != got {
		t.Fatal("an explicit version 1 differs from the default")
	}
}

func TestCanonicalRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*Preimage)
		errHas string
	}{
		{"attempt 0", func(p *Preimage) { p.Attempt = 0 }, "attempt"},
		{"no role", func(p *Preimage) { p.Role = "" }, "role"},
		{"no agent", func(p *Preimage) { p.Agent = "" }, "agent"},
		{"future version", func(p *Preimage) { p.Version = "2" }, "version"},
		{"env value", func(p *Preimage) { p.Env = []string{"API_TOKEN=hunter2"} }, "only variable names"},
		{"env not a name", func(p *Preimage) { p.Env = []string{"A B"} }, "not a variable name"},
		{"invalid utf-8", func(p *Preimage) { p.Task.Text = "a\xffb" }, "task.text is not valid UTF-8"},
		{"invalid utf-8 param", func(p *Preimage) { p.Params = map[string]string{"k": "\xc3"} }, "params.k"},
		{"empty artifact", func(p *Preimage) { p.Artifacts = []string{""} }, "artifact"},
		{"empty param name", func(p *Preimage) { p.Params = map[string]string{"": "x"} }, "param"},
		{"huge timeout", func(p *Preimage) { p.TimeoutSeconds = 1 << 60 }, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := basePreimage()
			tt.edit(&p)
			_, err := Digest(p)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("err = %v, want one containing %q", err, tt.errHas)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error message leaks the value: %v", err)
			}
		})
	}
}

func TestParseRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range goldenVectors() {
		c := mustCanonical(t, v.p)
		p, err := Parse(c)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if again := mustCanonical(t, p); !bytes.Equal(again, c) {
			t.Fatalf("%s: round trip changed the preimage:\n%s\n%s", v.name, c, again)
		}
	}
	for _, bad := range []string{`{"v":"1","role":"r","agent":"a","instructions":"","attempt":1,"extra":1}`, `{ "v":"1","role":"r","agent":"a","instructions":"","attempt":1}`, `[]`, `{"v":"1","role":"r","agent":"a","instructions":"","attempt":1,"params":{}}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) accepted it", bad)
		}
	}
}

func TestNormalizedPreimage(t *testing.T) {
	t.Parallel()
	p := basePreimage()
	p.Task.Text = "edit /home/ann/src/shop/a.go\r\n"
	p.Prompt = "at 2026-11-30T05:40:12Z "
	p.GateFeedback = "FAIL /tmp/go-build123/x_test.go:3\n\n"
	n := p.Normalized(ExampleEnv())
	if n.Task.Text != "edit <PROJECT>/a.go" || n.Prompt != "at <TIME>" || n.GateFeedback != "FAIL <TMP>/x_test.go:3" {
		t.Fatalf("got %+v %+v", n, *n.Task)
	}
	if p.Task.Text != "edit /home/ann/src/shop/a.go\r\n" {
		t.Fatal("Normalized modified its receiver's task")
	}
}

// Regressions named in issue 3.

// The endless-replay loop: a retry with identical inputs must miss.
func TestRetryWithIdenticalInputsMisses(t *testing.T) {
	t.Parallel()
	first := basePreimage()
	retry := basePreimage()
	retry.Attempt = first.Attempt + 1
	if mustDigest(t, first) == mustDigest(t, retry) {
		t.Fatal("attempt 2 with identical inputs has attempt 1's identity: a failed call would replay forever")
	}
}

func TestPlanShaInPromptIsKept(t *testing.T) {
	t.Parallel()
	sha := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	other := "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
	text := "The plan (sha256 " + sha + ") is at PLAN.md."
	if got := Normalize(text, EnvFor(t.TempDir())); !strings.Contains(got, sha) {
		t.Fatalf("the plan sha was erased: %q", got)
	}
	a, b := basePreimage(), basePreimage()
	a.Prompt = Normalize(text, ExampleEnv())
	b.Prompt = Normalize(strings.Replace(text, sha, other, 1), ExampleEnv())
	if mustDigest(t, a) == mustDigest(t, b) {
		t.Fatal("two plan shas give one identity")
	}
}

func TestTemplateSyntaxIsContent(t *testing.T) {
	t.Parallel()
	texts := []string{"deploy ${{ x }}", "deploy ${{ y }}", "for {{item}}", "for {{items}}", "deploy", "for"}
	seen := map[string]string{}
	for _, text := range texts {
		n := Normalize(text, ExampleEnv())
		if n != text {
			t.Errorf("Normalize(%q) = %q", text, n)
		}
		p := basePreimage()
		p.Task.Text = n
		d := mustDigest(t, p)
		if prev, ok := seen[d]; ok {
			t.Errorf("%q and %q share an identity", prev, text)
		}
		seen[d] = text
	}
}

func TestEnvValueNeverReachesPreimage(t *testing.T) {
	const secret = "s3cr3t-value-do-not-hash"
	t.Setenv("API_TOKEN", secret)
	p := basePreimage()
	p.Env = []string{"API_TOKEN"}
	c := mustCanonical(t, p)
	if bytes.Contains(c, []byte(secret)) {
		t.Fatalf("the value reached the preimage: %s", c)
	}
	if !bytes.Contains(c, []byte(`"env":["API_TOKEN"]`)) {
		t.Fatalf("the name is missing: %s", c)
	}
	before := mustDigest(t, p)
	t.Setenv("API_TOKEN", "rotated")
	if mustDigest(t, p) != before {
		t.Fatal("rotating a value changed the identity")
	}
	p.Env = []string{"API_TOKEN=" + secret}
	if _, err := Canonical(p); err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("NAME=VALUE: err = %v", err)
	}
}

func TestTimestampsAndDates(t *testing.T) {
	t.Parallel()
	digestOf := func(text string) string {
		p := basePreimage()
		p.Task.Text = Normalize(text, ExampleEnv())
		return mustDigest(t, p)
	}
	if digestOf("report of 2026-11-30T05:40:12Z") != digestOf("report of 2026-12-24T23:01:00+02:00") {
		t.Error("timestamps with different times give two identities")
	}
	if digestOf("log 2026-11-30 05:40:12") != digestOf("log 2026-11-30 17:00") {
		t.Error("space-separated timestamps give two identities")
	}
	if digestOf("due 2026-11-30") == digestOf("due 2026-12-01") {
		t.Error("different dates without times give one identity")
	}
}

// --agent-cmd names the worker: another command line is another agent,
// while an absent command line keeps every digest made before the key
// existed.
func TestAgentCmdInIdentity(t *testing.T) {
	base := Preimage{Role: "implement", Agent: "exec", Instructions: "i", Attempt: 1, Prompt: "do it"}
	withNil, err := Digest(base)
	if err != nil {
		t.Fatal(err)
	}
	a, b := base, base
	a.AgentCmd = []string{"claude", "-p", "--model", "opus"}
	b.AgentCmd = []string{"claude", "-p", "--model", "sonnet"}
	da, _ := Digest(a)
	db, _ := Digest(b)
	if da == db || da == withNil {
		t.Fatalf("agent_cmd does not reach the digest: %s %s %s", da, db, withNil)
	}
	c, _ := Canonical(base)
	if strings.Contains(string(c), "agent_cmd") {
		t.Fatalf("an unset agent_cmd must be absent: %s", c)
	}
	env := Env{ProjectRoots: []string{"/home/u/proj"}}
	m1 := Preimage{Role: "implement", Agent: "exec", Instructions: "i", Attempt: 1, AgentCmd: []string{"/home/u/proj/agent.sh"}}.Normalized(env)
	m2 := Preimage{Role: "implement", Agent: "exec", Instructions: "i", Attempt: 1, AgentCmd: []string{"/srv/proj/agent.sh"}}.Normalized(Env{ProjectRoots: []string{"/srv/proj"}})
	d1, _ := Digest(m1)
	d2, _ := Digest(m2)
	if d1 != d2 {
		t.Fatalf("a moved project changed the agent_cmd identity: %v vs %v", m1.AgentCmd, m2.AgentCmd)
	}
}
