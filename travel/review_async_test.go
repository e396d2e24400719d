package travel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/travel"
)

// reviewTrees checks writeTrees against main's writeTree for run in r,
// and that the records ref there (when written) holds main's trees.
func reviewTrees(t *testing.T, r *gittest.Repo, run string) (lite, full string) {
	t.Helper()
	j, err := cache.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	diff, lite, full, err := travel.ReviewTrees(context.Background(), j, run)
	if err != nil {
		t.Fatal(err)
	}
	if diff != "" {
		t.Fatalf("records trees differ from main's:\n%s", diff)
	}
	return lite, full
}

// Records trees written in one hash-object and two mktree --batch are
// the trees main wrote one mktree at a time: for a run made here (blobs
// as files of their own), in any order and number of records, with a
// records that names no blob among them; and for the same run pulled
// into another clone (blobs in a pack, staged), written there again.
func TestReviewAsyncTreesMatchMain(t *testing.T) {
	t.Parallel()
	r, run := ranRepo(t)
	lite, full := reviewTrees(t, r, run)
	ref := travel.RecordsRef(run)
	if got := strings.TrimSpace(r.Git("rev-parse", ref+"^{tree}")); got != full {
		t.Fatalf("records tree %s, main writes %s", got, full)
	}
	if got := strings.TrimSpace(r.Git("rev-parse", ref+"^1^{tree}")); got != lite {
		t.Fatalf("records tree without transcripts %s, main writes %s", got, lite)
	}
	c := pushedAndPulled(t, r)
	c.Git("update-ref", "-d", ref)
	if l, f := reviewTrees(t, c, run); l != lite || f != full {
		t.Fatalf("pulled: trees %s %s, made here %s %s", l, f, lite, full)
	}
}

// pushedAndPulled is a clone that pulled the runs r pushed to a bare
// repository.
func pushedAndPulled(t *testing.T, r *gittest.Repo) *gittest.Repo {
	t.Helper()
	bare, j := bareAndJournal(t, r)
	if _, err := travel.Push(context.Background(), j, travel.PushOptions{Remote: bare}); err != nil {
		t.Fatal(err)
	}
	c, _, err := pullInto(t, bare, []travel.PullOption{travel.SkipRefused()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeRecords writes run's records in r (travel.Write) and returns the
// records commit.
func writeRecords(t *testing.T, r *gittest.Repo, run string) string {
	t.Helper()
	j, err := cache.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	c, err := travel.Write(context.Background(), j, run)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Where git writes the objects (here, because core.sharedRepository is
// set), the records trees are main's too: the JSON files, and the blobs
// that came with a pull, staged as files first.
func TestRecordsTreesWhereGitWrites(t *testing.T) {
	t.Parallel()
	r, run := ranRepo(t)
	lite, full := reviewTrees(t, r, run)
	for _, repo := range []*gittest.Repo{r, pushedAndPulled(t, r)} {
		repo.Git("config", "core.sharedRepository", "group")
		repo.Git("update-ref", "-d", travel.RecordsRef(run))
		if l, f := reviewTrees(t, repo, run); l != lite || f != full {
			t.Fatalf("%s: trees %s %s where git writes, %s %s in process", repo.Dir, l, f, lite, full)
		}
		c := writeRecords(t, repo, run)
		if got := strings.TrimSpace(repo.Git("rev-parse", c+"^{tree}")); got != full {
			t.Fatalf("%s: records tree %s where git writes, %s in process", repo.Dir, got, full)
		}
	}
}

// A worker's run (records deferred to its push, written signed at once)
// and the same run written unsigned and signed at push (main's way) give
// the same records commits but for their signatures (ssh-keygen's are not
// deterministic): the same on the remote, with transcripts or without
// (push --no-transcripts), and the same local records ref, both commits
// signed.
func TestReviewAsyncDeferredRecordsSameCommits(t *testing.T) {
	t.Parallel()
	alice := sshKey(t, "alice")
	r := planRepo(t)
	signWith(r, alice)
	run := runPlan(t, r, func(o *loop.Options) { o.DeferRecords = true })
	ref := travel.RecordsRef(run)
	push := func(o travel.PushOptions) (remote, local string) {
		t.Helper()
		bare, j := bareAndJournal(t, r)
		o.Remote = bare
		if _, err := travel.Push(context.Background(), j, o); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(gittest.At(t, bare).Git("rev-parse", ref)), strings.TrimSpace(r.Git("rev-parse", ref))
	}
	for _, o := range []travel.PushOptions{{New: true}, {}, {NoTranscripts: true}, {NoTranscripts: true, New: true}} {
		r.Git("update-ref", "-d", ref)
		deferredRemote, deferredLocal := push(o)
		// main's way: written unsigned when the run ended, signed by the push.
		r.Git("update-ref", "-d", ref)
		unsigned := writeRecords(t, r, run)
		if raw := r.Git("cat-file", "commit", unsigned); strings.Contains(raw, "\ngpgsig") {
			t.Fatalf("Write signed:\n%s", raw)
		}
		mainRemote, mainLocal := push(o)
		for _, c := range [][2]string{{deferredRemote, mainRemote}, {deferredLocal, mainLocal}, {deferredLocal + "^1", mainLocal + "^1"}} {
			if d, m := unsignedCommit(t, r, c[0]), unsignedCommit(t, r, c[1]); d != m || !isSignedCommit(t, r, c[0]) {
				t.Fatalf("%+v: deferred records %s:\n%s\nmain's %s:\n%s", o, c[0], d, c[1], m)
			}
		}
		if o.NoTranscripts && deferredRemote != strings.TrimSpace(r.Git("rev-parse", deferredLocal+"^1")) {
			t.Fatalf("--no-transcripts pushed %s, not the signed records without transcripts", deferredRemote)
		}
	}
}

// unsignedCommit is commit c as git stores it, its signature left out
// (the parent's id, which the signature of the parent changes, too), and
// the message's last newline: main's signRecords wrote the message again
// as travel's git helper returned it, trimmed, so that main's signed
// records end without one; written signed at once, they end with one.
func unsignedCommit(t *testing.T, r *gittest.Repo, c string) string {
	t.Helper()
	var out []string
	insig := false
	for _, line := range strings.Split(r.Git("cat-file", "commit", c), "\n") {
		switch {
		case strings.HasPrefix(line, "gpgsig "):
			insig = true
			continue
		case insig && strings.HasPrefix(line, " "):
			continue
		case strings.HasPrefix(line, "parent "):
			if p := strings.TrimPrefix(line, "parent "); strings.Contains(r.Git("cat-file", "-t", p), "commit") &&
				strings.Contains(r.Git("cat-file", "commit", p), "implloop records of run") {
				line = "parent (records) " + unsignedCommit(t, r, p)
			}
		}
		insig = false
		out = append(out, line)
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

func isSignedCommit(t *testing.T, r *gittest.Repo, c string) bool {
	t.Helper()
	return strings.Contains(r.Git("cat-file", "commit", c), "\ngpgsig ")
}

// PushOptions.Sealed is taken as given: a run named there is sealed with
// the pusher's key whoever made it. A run Alice made and signed, pulled
// by Bob and passed in Sealed with a run of his own, goes out under Bob's
// seal, and Carol, who allows Bob's key only, trusts Alice's run: a push
// vouches for another's run. The worker passes only runs it pushed
// itself, so this is latent; Push should leave pulled runs (and runs it
// does not sign) out of a seal, as it does for Runs.
func TestReviewAsyncSealedForeignRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice, bob := sshKey(t, "alice"), sshKey(t, "bob")
	a := planRepo(t)
	signWith(a, alice)
	foreign := runPlan(t, a, nil)
	bare1 := t.TempDir()
	gittest.At(t, bare1).Git("init", "-q", "--bare")
	ja, err := cache.Open(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = travel.Push(ctx, ja, travel.PushOptions{Remote: bare1})
	ja.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := planRepo(t)
	signWith(b, bob)
	if _, err := travel.Pull(ctx, b.Dir, bare1, func() (*cache.Journal, error) { return cache.Open(b.Dir) }); err != nil {
		t.Fatal(err)
	}
	own := runPlan(t, b, func(o *loop.Options) { o.Fresh = true })
	foreignRecords := strings.TrimSpace(b.Git("rev-parse", travel.RecordsRef(foreign)))
	bare2 := t.TempDir()
	gittest.At(t, bare2).Git("init", "-q", "--bare")
	jb, err := cache.Open(b.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = travel.Push(ctx, jb, travel.PushOptions{Remote: bare2, Runs: []string{foreign, own}, New: true, Sealed: map[string]string{foreign: foreignRecords}})
	jb.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := pullInto(t, bare2, nil, "gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"bob@example.com": bob}))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Trust[own].Trusted {
		t.Fatalf("Bob's own run is not trusted: %+v", res.Trust[own])
	}
	if res.Trust[foreign].Trusted {
		t.Fatalf("Alice's run, signed by a key Carol does not allow, is trusted by Bob's seal: %+v", res.Trust[foreign])
	}
}
