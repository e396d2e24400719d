package worker

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

// The renewals of a result being pushed go on while the worker claims
// its next task: both make lease commits (newLease). Here the first
// result's push is refused once, so that it is tried again after 1 s,
// its lease renewed every 100 ms meanwhile, while the worker claims and
// checks out the next task. Under the race detector (make test runs
// worker with -race) the two must not touch the worker's state
// unsynchronized.
func TestReviewRenewalRacesNextClaim(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	hook := "#!/bin/sh\nif grep -q refs/implloop/records/ && mkdir \"$0.once\" 2>/dev/null; then echo 'busy' >&2; exit 1; fi\n"
	r, bare, s := signedRepo(t, 3, hook, sleeper("0.1"))
	var mu sync.Mutex
	var kinds []string
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: 300 * time.Millisecond, ID: "w",
		Log: func(e Event) { mu.Lock(); kinds = append(kinds, e.Type+":"+e.Task); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range sum.Tasks {
		if !tr.Pushed || tr.Verdict != "DONE" {
			t.Fatalf("summary %+v\nevents %v", sum, kinds)
		}
	}
	if len(sum.Tasks) != 3 {
		t.Fatalf("summary %+v\nevents %v", sum, kinds)
	}
	records := gittest.At(t, bare).Git("for-each-ref", "refs/implloop/records/")
	if strings.Count(records, "\n") != 3 {
		t.Fatalf("records on the remote:\n%s", records)
	}
	// The case it is about: the next task claimed while the first
	// result's push waits to be tried again.
	// (Which task comes second is the worker's spread: pick.)
	first, failed, second, pushed := "", -1, -1, -1
	for i, k := range kinds {
		kind, task, _ := strings.Cut(k, ":")
		switch {
		case kind == "claimed" && first == "":
			first = task
		case kind == "claimed" && second < 0:
			second = i
		case kind == "push_failed" && task == first:
			failed = i
		case kind == "pushed" && task == first && pushed < 0:
			pushed = i
		}
	}
	if failed < 0 || second < 0 || pushed < second {
		t.Fatalf("events %v: the next task was not claimed while the first one's push was tried again", kinds)
	}
}

// newLease is called by the renewals of the result being pushed in the
// background (renewal.renew, until the push lands) while the worker
// claims its next task (do); the worker's lease counter is shared by
// both. The race detector seldom sees it in a whole run (each side forks
// a git process between two leases, and fork's lock orders them), so the
// two calls are made here side by side, as they can be.
func TestReviewNewLeaseConcurrent(t *testing.T) {
	r := gittest.New(t)
	r.Write("a.txt", "a\n")
	r.Commit("a")
	w := &worker{o: Options{Root: r.Dir, ID: "w"}, now: time.Now, key: "k", lease: time.Minute}
	ctx := context.Background()
	if _, err := w.newLease(ctx, "T0"); err != nil { // the first claim: emptyTree set
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the renewal of the task being pushed
		defer wg.Done()
		_, _ = w.newLease(ctx, "T1")
	}()
	_, _ = w.newLease(ctx, "T2") // the next task's claim
	wg.Wait()
}
