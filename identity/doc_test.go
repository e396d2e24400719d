package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/identity.md is generated from the tables; a stale copy fails.
func TestDocIsCurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "docs", "identity.md")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go generate ./identity", err)
	}
	if string(got) != string(Markdown()) {
		t.Fatalf("%s is stale: run go generate ./identity and commit the result", path)
	}
	for _, want := range []string{"Current version: **" + Version + "**", "bumps the version", "| `task-marker` |", "| `params.*` |", "environment variable values"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s does not say %q", path, want)
		}
	}
}

// pinnedFingerprints ties each version to the behaviour of its tables: the
// rules' names, order and examples, Normalize's output on normalizeCases,
// and the hashed keys. A change to either
// table fails here until it is decided what it is:
//   - it changes identities (a rule matches more or less, a key changes
//     meaning): bump Version, add the new version's fingerprint, update the
//     golden vectors (go test ./identity -update) and docs (go generate);
//   - it cannot change any existing identity (a new optional key absent
//     when unset, or a clearer example of the same rule): update the
//     current version's fingerprint and say why in the commit message.
var pinnedFingerprints = map[string]string{
	// Re-pinned when agent_cmd was added: a new optional key, absent for
	// every preimage made before it, so no existing identity changed.
	// Re-pinned when the run-id rule's example moved from .implloop/runs/
	// to .git/implloop/runs/: an example only, the rule matches as before.
	// Re-pinned when gate was added (the prompt now names the task's gate
	// command): a new optional key, absent when there is no gate and for
	// every preimage made before it, so no existing identity changed by
	// the scope. (The implementer's template changed in the same step, so
	// its units' instructions hash did: that is the template's own key.)
	"1": "6d12cfac4c655295c93a8c26a17edbb2fb4fdbb9703e5d23610462b959831472",
}

func tablesFingerprint() string {
	h := sha256.New()
	for _, r := range rules {
		fmt.Fprintf(h, "rule %q %q %q\n", r.Name, r.Example.In, r.Example.Out)
	}
	for _, e := range hashedScope {
		fmt.Fprintf(h, "key %q\n", e.Key)
	}
	for _, c := range normalizeCases {
		fmt.Fprintf(h, "case %q %q\n", c.in, Normalize(c.in, normalizeEnv))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestTablesPinnedToVersion(t *testing.T) {
	t.Parallel()
	if got, want := tablesFingerprint(), pinnedFingerprints[Version]; got != want {
		t.Fatalf("the rules or scope table changed under version %s (fingerprint %s, pinned %s).\n"+
			"A change that alters identities bumps Version; see pinnedFingerprints in doc_test.go.", Version, got, want)
	}
}

// Every key the preimage can hold is in the scope table, and the other way
// round, so the doc and Diff's reasons cannot miss a field.
func TestScopeTableCoversPreimage(t *testing.T) {
	t.Parallel()
	p := Preimage{Role: "r", Agent: "a", AgentCmd: []string{"my-agent", "--fast"}, Model: "m", Instructions: "i", Task: &TaskInput{ID: "1", Text: "t"},
		PreambleSHA256: "p", PlanSHA256: "s", Prompt: "x", Attempt: 1, GateFeedback: "g", Gate: "go test ./...", Artifacts: []string{"h"},
		TimeoutSeconds: 1, Env: []string{"E"}, Params: map[string]string{"k": "v"}}
	c := mustCanonical(t, p)
	empty := mustCanonical(t, Preimage{Role: "r", Agent: "a", Attempt: 1})
	changes, err := Diff(empty, c)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{"v": true, "role": true, "agent": true, "attempt": true, "instructions": true}
	for _, ch := range changes {
		fields[ch.Field] = true
	}
	keys := map[string]bool{}
	for _, e := range hashedScope {
		keys[e.Key] = true
		if e.What == "" || e.Why == "" || e.Reason == "" {
			t.Errorf("scope row %q is incomplete", e.Key)
		}
	}
	for f := range fields {
		k := f
		if strings.HasPrefix(f, "params.") {
			k = "params.*"
		}
		if !keys[k] {
			t.Errorf("preimage key %q is not in the scope table", f)
		}
		delete(keys, k)
	}
	for k := range keys {
		t.Errorf("scope table row %q is not a preimage key", k)
	}
	for _, e := range notHashedScope {
		if e.What == "" || e.Why == "" {
			t.Errorf("not-hashed row %q is incomplete", e.What)
		}
	}
}
