package travel_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/travel"
)

// A pull with OnlyRuns fetches and imports the runs it names, not the
// remote's others (a worker needs its plan's results, not every run the
// remote ever had); a named run the remote lacks is no error; a run whose
// id starts with a named one's, and a staging ref an interrupted pull
// left, are neither imported nor left behind.
func TestPullOnlyRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, first := ranRepo(t)
	second := runPlan(t, a, nil)
	bare := t.TempDir()
	gittest.At(t, bare).Git("init", "-q", "--bare")
	ja, err := cache.Open(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = travel.Push(ctx, ja, travel.PushOptions{Remote: bare})
	ja.Close()
	if err != nil {
		t.Fatal(err)
	}
	// A ref whose name starts with the first run's id, naming the second
	// run's records.
	srv := gittest.At(t, bare)
	srv.Git("update-ref", travel.RecordsRef(first)+"x", strings.TrimSpace(srv.Git("rev-parse", travel.RecordsRef(second))))
	b := gittest.New(t)
	// What an interrupted pull left staged: the second run.
	b.Git("fetch", "-q", bare, "+"+travel.RecordsRef(second)+":refs/implloop-pull/"+second)
	open := func() (*cache.Journal, error) { return cache.Open(b.Dir) }
	res, err := travel.Pull(ctx, b.Dir, bare, open, travel.OnlyRuns([]string{first, "r-20260101-000000-dead"}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Imported, []string{first}) {
		t.Fatalf("imported %v, want only %s", res.Imported, first)
	}
	if refs := b.Git("for-each-ref", "--format=%(refname)", "refs/implloop-pull/", travel.RecordsRefPrefix); strings.TrimSpace(refs) != travel.RecordsRef(first) {
		t.Fatalf("refs after the pull:\n%s", refs)
	}
	// An ordinary pull then imports the rest (and refuses the odd ref).
	res, err = travel.Pull(ctx, b.Dir, bare, open, travel.SkipRefused())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Imported, []string{second}) {
		t.Fatalf("the ordinary pull imported %v, want %s", res.Imported, second)
	}
}
