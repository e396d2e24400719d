package loop

import (
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
)

// liveReasons is the one place a live unit's reasons are worded: the
// loop journals them at dispatch and Explain uses them for a unit
// journaled without any.
func TestLiveReasons(t *testing.T) {
	t.Parallel()
	pre := func(model, artifact string) string {
		b, err := identity.Canonical(identity.Preimage{Role: "implement", Agent: "exec", Instructions: "00", Attempt: 1,
			Model: model, Artifacts: []string{artifact}, Task: &identity.TaskInput{ID: "2", Text: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := identity.DigestPrefix+strings.Repeat("a", 64), identity.DigestPrefix+strings.Repeat("b", 64)
	old := pre("a", a)
	named := func(deps ...string) func([]string) []string {
		return func([]string) []string { return deps }
	}
	tests := []struct {
		name     string
		c        *cache.Unit
		preimage string
		named    func([]string) []string
		want     string
		changes  int
	}{
		{name: "no journaled unit", want: "never ran"},
		{name: "same identity, interrupted", c: &cache.Unit{Identity: "u1:same", Status: cache.UnitInterrupted}, want: "interrupted before it completed"},
		{name: "same identity, failed", c: &cache.Unit{Identity: "u1:same", Status: cache.UnitFailed}, want: "failed before"},
		{name: "same identity, completed", c: &cache.Unit{Identity: "u1:same", Status: cache.UnitCompleted}, want: "result missing from the journal"},
		{name: "model", c: &cache.Unit{Identity: "u1:old", Preimage: []byte(old)},
			preimage: pre("b", a), want: "model changed", changes: 1},
		{name: "artifacts, dependencies named", c: &cache.Unit{Identity: "u1:old", Preimage: []byte(old)},
			preimage: pre("a", b), named: named(depReason("1", true, true)),
			want: "dependency 1 runs live", changes: 1},
		{name: "artifacts, none named", c: &cache.Unit{Identity: "u1:old", Preimage: []byte(old)},
			preimage: pre("a", b), named: named(),
			want: "dependency artifacts changed", changes: 1},
		{name: "unreadable preimage", c: &cache.Unit{Identity: "u1:old", Preimage: []byte("{")}, preimage: `{}`, want: "identity changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.named == nil {
				tt.named = named()
			}
			why, changes := liveReasons(tt.c, "u1:same", []byte(tt.preimage), tt.named)
			if got := strings.Join(why, ", "); got != tt.want || len(changes) != tt.changes {
				t.Errorf("reasons %q with %d changes, want %q with %d", got, len(changes), tt.want, tt.changes)
			}
		})
	}
}
