package travel_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
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
	dirs, empty := leaseLab(t, remote)
	lease := func(period time.Duration) string {
		c, err := travel.NewLease(ctx, dirs, empty, "plan", "T1", "w", 1, time.Now(), period)
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

// leaseLab is r's state directories and the empty tree written there,
// which a claim's lease commit (travel.NewLease) names.
func leaseLab(t *testing.T, r *gittest.Repo) (cache.Dirs, string) {
	t.Helper()
	dirs, err := cache.StateDir(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := travel.EmptyTree(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	return dirs, empty
}

// A pull with SkipRefused leaves out each run whose records it refuses
// (garbage under a run id, a commit of anything, a ref that is no run id)
// and imports the others; nothing of a refused run is imported, no ref of
// it set, and no staging ref left. Without it, the pull refuses all.
func TestPullSkipRefused(t *testing.T) {
	t.Parallel()
	a, run := ranRepo(t)
	blob := strings.TrimSpace(gitIn(t, a, "garbage", "hash-object", "-w", "--stdin"))
	head := strings.TrimSpace(a.Git("rev-parse", "HEAD"))
	bad := map[string]string{
		"r-20260101-000000-0bad": blob,
		"r-20260101-000000-0bee": head,
		"not-a-run":              head,
	}
	for id, obj := range bad {
		a.Git("update-ref", travel.RecordsRefPrefix+id, obj)
	}
	if _, _, err := pullInto(t, a.Dir, nil); !errors.As(err, new(*travel.RefusedError)) {
		t.Fatalf("pull without SkipRefused: %v, want refused", err)
	}
	cl, res, err := pullInto(t, a.Dir, []travel.PullOption{travel.SkipRefused()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Imported, []string{run}) || len(res.Refused) != len(bad) {
		t.Fatalf("imported %v, refused %v", res.Imported, res.Refused)
	}
	for _, r := range res.Refused {
		if bad[r.Run] == "" || r.Reason == "" {
			t.Errorf("refused %q: %v", r.Run, r)
		}
	}
	refs := cl.Git("for-each-ref", "--format=%(refname)", "refs/implloop/", "refs/implloop-pull/")
	for id := range bad {
		if strings.Contains(refs, id) {
			t.Errorf("a ref of refused run %s:\n%s", id, refs)
		}
	}
	if !strings.Contains(refs, travel.RecordsRef(run)) {
		t.Errorf("no records ref of the imported run:\n%s", refs)
	}
	// Pulling again: the good run is here, the others refused again.
	res, err = travel.Pull(context.Background(), cl.Dir, a.Dir, func() (*cache.Journal, error) { return cache.Open(cl.Dir) }, travel.SkipRefused())
	if err != nil || len(res.Imported) != 0 || !slices.Equal(res.Present, []string{run}) || len(res.Refused) != len(bad) {
		t.Fatalf("pull again: %v; imported %v, present %v, refused %v", err, res.Imported, res.Present, res.Refused)
	}
}

// A remote's message keeps none of git's sideband padding.
func TestRemoteErrorStripsSideband(t *testing.T) {
	t.Parallel()
	remote := gittest.New(t)
	hook := remote.Dir + "/.git/hooks/pre-receive"
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'read-only for results' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	local := gittest.New(t)
	ctx := context.Background()
	dirs, err := cache.StateDir(local.Dir)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := travel.EmptyTree(ctx, dirs)
	if err != nil {
		t.Fatal(err)
	}
	head, err := travel.NewLease(ctx, dirs, empty, "p", "T1", "w", 1, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = travel.CASPush(context.Background(), local.Dir, remote.Dir, travel.RefUpdate{Ref: "refs/implloop/claims/p/T1", New: head})
	if err == nil || !strings.HasSuffix(err.Error(), "remote: read-only for results") {
		t.Fatalf("push through a refusing hook: %q", err)
	}
}
