package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// While a task's agent works, its worker pulls the results the remote
// had when it looked (none of its tasks waits for them): the worker's
// last pull, which verifies every result of the plan before it ends,
// is then left only those that landed since. Here w1 did one task and
// stopped (--max-cost); w2's agent, for the other task, sees w1's run
// imported into its clone while it works, before any run of w2's own
// has records.
func TestWorkPullsResultsBehindTheAgent(t *testing.T) {
	t.Parallel()
	f := newFleetOn(t, independentPlan(2), serveGitDaemon)
	w1 := f.start("w1", []string{"COST=1"}, "--max-cost", "0.5")
	f.wait(w1)
	first := strings.TrimSpace(f.run(filepath.Join(f.dir, "w1"), "git", "for-each-ref", "--format=%(refname)", "refs/implloop/records/"))
	if strings.Count(first, "\n") != 0 || first == "" {
		t.Fatalf("w1's records: %q\n%s", first, w1.err.String())
	}
	seen := filepath.Join(t.TempDir(), "seen")
	w2 := f.start("w2", []string{"BEHIND=" + seen})
	f.wait(w2)
	if calls := f.callLines(); len(calls) != 2 {
		t.Fatalf("calls %v, want one a task\n%s", calls, w2.err.String())
	}
	b, err := os.ReadFile(seen)
	must(t, err)
	if strings.TrimSpace(string(b)) != first {
		t.Fatalf("w2's agent saw records %q while it worked, want w1's run %s\n%s", b, first, w2.err.String())
	}
}
