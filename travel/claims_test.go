package travel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/travel"
)

// A watcher reads the holder's lease period from the claim's lease
// commit, fetched from the remote: clamped against hostile values, none
// from garbage or a lease that names none, and "moved" when the claim no
// longer holds the value seen.
func TestLeasePeriod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	remote := gittest.New(t)
	empty, err := travel.EmptyTree(ctx, remote.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lease := func(period time.Duration) string {
		c, err := travel.NewLease(ctx, remote.Dir, empty, "plan", "T1", "w", 1, time.Now(), period)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	raw := func(msg string) string {
		return strings.TrimSpace(gitIn(t, remote, "tree "+empty+"\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\n"+msg, "hash-object", "-t", "commit", "-w", "--stdin"))
	}
	garbage := strings.TrimSpace(gitIn(t, remote, "not a lease", "hash-object", "-w", "--stdin"))
	ref := travel.ClaimRef("plan", "T1")
	for _, c := range []struct {
		name  string
		value string
		want  time.Duration
	}{
		{"its own", lease(90 * time.Second), 90 * time.Second},
		{"too long", lease(1000 * time.Hour), travel.MaxLeasePeriod},
		{"too short", raw("implloop claim\n\nlease 1ns\n"), travel.MinLeasePeriod},
		{"negative", raw("implloop claim\n\nlease -5m\n"), travel.MinLeasePeriod},
		{"no period (an older worker's)", raw("implloop claim\n\nplan p\ntask T1\n"), 0},
		{"not a claim", raw("something else\n\nlease 5h\n"), 0},
		{"unparsable", raw("implloop claim\n\nlease forever\n"), 0},
		{"a blob", garbage, 0},
	} {
		remote.Git("update-ref", ref, c.value)
		local := gittest.New(t) // fetches the value
		got, moved, err := travel.LeasePeriod(ctx, local.Dir, remote.Dir, ref, c.value)
		if err != nil || moved || got != c.want {
			t.Errorf("%s: period %s, moved %v, err %v; want %s", c.name, got, moved, err, c.want)
		}
	}
	local := gittest.New(t)
	seen := lease(time.Minute)
	remote.Git("update-ref", ref, lease(2*time.Minute))
	if _, moved, err := travel.LeasePeriod(ctx, local.Dir, remote.Dir, ref, seen); err != nil || !moved {
		t.Errorf("a claim renewed since: moved %v, err %v", moved, err)
	}
}
