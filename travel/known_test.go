package travel

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/internal/gittest"
)

// readRunRefs reads what refValue reads of each run's records and
// boundary refs, in one git process: a missing ref is "", a ref naming
// a tag is peeled to its commit, a ref of another run (a longer name
// under the same prefix) is not taken for the run's; past maxExactRefs
// runs, the same.
func TestReadRunRefs(t *testing.T) {
	ctx := context.Background()
	r := gittest.New(t)
	r.Write("a.txt", "a")
	c := r.Commit("a")
	r.Git("tag", "-a", "-m", "t", "t1", c)
	tag := strings.TrimSpace(r.Git("rev-parse", "t1"))
	var runs []string
	for i := range maxExactRefs + 2 {
		runs = append(runs, fmt.Sprintf("r-%d", i))
	}
	r.Git("update-ref", RecordsRef("r-0"), c)
	r.Git("update-ref", boundary.RunRef("r-0"), tag)
	r.Git("update-ref", RecordsRef("r-1")+"x", c) // another run, r-1x
	for _, n := range []int{2, maxExactRefs + 2} {
		records, bounds, err := readRunRefs(ctx, r.Dir, runs[:n])
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs[:n] {
			wantRec, _ := refValue(ctx, r.Dir, RecordsRef(run))
			wantBounds, _ := refValue(ctx, r.Dir, boundary.RunRef(run))
			if records[run] != wantRec || bounds[run] != wantBounds {
				t.Fatalf("%d runs: %s: records %q bounds %q, refValue says %q %q", n, run, records[run], bounds[run], wantRec, wantBounds)
			}
		}
		if records["r-0"] != c || bounds["r-0"] != c || records["r-1"] != "" {
			t.Fatalf("%d runs: records %v bounds %v", n, records, bounds)
		}
	}
}
