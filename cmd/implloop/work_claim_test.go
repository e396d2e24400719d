package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/runid"
	"github.com/implloop/implloop/travel"
)

// holdFirstClaim installs a pre-receive hook that holds the first claim
// push of worker (up to 20 s) until the claim exists, made by another:
// its create then fails. It returns the hook's path (path.held appears
// once it holds).
func (f *fleet) holdFirstClaim(worker string) string {
	return f.preReceive("#!/bin/sh\nin=$(cat)\ncase \"$in\" in *refs/implloop/claims/*) ;; *) exit 0;; esac\n" +
		"set -- $in\n[ \"$1\" = 0000000000000000000000000000000000000000 ] || exit 0\n" +
		"git cat-file commit \"$2\" | grep -qx 'worker " + worker + "' || exit 0\n" +
		"[ -e \"$0.held\" ] && exit 0\ntouch \"$0.held\"\n" +
		"i=0; while ! git rev-parse -q --verify \"$3\" >/dev/null; do i=$((i+1)); [ $i -gt 400 ] && exit 0; sleep 0.05; done\n")
}

// A worker's claim is pushed beside the start of the task's run; here it
// loses the race (the server holds its push until another worker's claim
// of the same task landed): its run is stopped before any agent call,
// shows nothing, and the worker goes on (it waits for the other's
// result, and ends). The task is done once, by the other worker.
func TestWorkClaimLostBesideTheRun(t *testing.T) {
	t.Parallel()
	f := newFleetOn(t, independentPlan(1), serveGitDaemon)
	hook := f.holdFirstClaim("slow")
	slow := f.start("slow", nil)
	waitFile(t, hook+".held", slow)
	fast := f.start("fast", nil)
	f.wait(fast)
	f.wait(slow)
	logs := "slow:\n" + slow.err.String() + "\nfast:\n" + fast.err.String()
	if calls := f.callLines(); !slices.Equal(calls, []string{"T001"}) {
		t.Fatalf("calls %v\n%s", calls, logs)
	}
	if e := slow.err.String(); strings.Contains(e, "implloop: run ") || strings.Contains(e, "T001: claimed") || strings.Contains(e, "INTERRUPTED") {
		t.Fatalf("the run that lost its claim was shown:\n%s", logs)
	}
	if !strings.Contains(fast.err.String(), "T001: claimed") {
		t.Fatalf("the other worker did not claim T001:\n%s", logs)
	}
	// Its run did start beside the claim (its first boundary is there,
	// beside the boundaries of the other's run it pulled), and was
	// stopped before any agent call.
	own := 0
	for _, line := range strings.Split(strings.TrimSpace(f.run(filepath.Join(f.dir, "slow"), "git", "for-each-ref", "--format=%(refname:lstrip=3)", "refs/implloop/runs/")), "\n") {
		if line != "" && !strings.Contains(fast.err.String(), line) {
			own++
		}
	}
	if own != 1 {
		t.Fatalf("slow made %d run(s) of its own, want the one stopped\n%s", own, logs)
	}
}

// A worker pulls the results its plan's claims name, not every run on
// the remote: a fresh clone of a remote with another plan's run imports
// the one result it needs only.
func TestWorkPullsItsPlansResultsOnly(t *testing.T) {
	t.Parallel()
	f := newFleetOn(t, independentPlan(1), serveGitDaemon)
	o := f.clone("other")
	must(t, os.WriteFile(filepath.Join(o, "other.md"), []byte("# Other\n\n- [ ] T001 write out-T001.txt\n"), 0o644))
	f.run(o, "implloop", append([]string{"run", "other.md"}, f.agentFlags()...)...)
	f.run(o, "implloop", "push", "origin")
	other := strings.TrimSpace(f.run(o, "git", "for-each-ref", "--format=%(refname:lstrip=3)", "refs/implloop/records/"))
	f.wait(f.start("w1", nil))
	w2 := f.start("w2", nil)
	f.wait(w2)
	if calls := f.callLines(); len(calls) != 2 {
		t.Fatalf("calls %v: want one for each plan\n%s", calls, w2.err.String())
	}
	records := strings.Fields(f.run(filepath.Join(f.dir, "w2"), "git", "for-each-ref", "--format=%(refname:lstrip=3)", "refs/implloop/records/"))
	if len(records) != 1 || records[0] == other {
		t.Fatalf("w2 imported %v (the other plan's run: %s)\n%s", records, other, w2.err.String())
	}
}

// Found in review, fixed: a worker whose claim another worker won while
// its run started beside the claim's push shows nothing of that run
// (heldEvents), but the run still ends INTERRUPTED inside loop.Run, whose
// --notify fired run_finished for it: the person away from the terminal
// heard of a run the worker never showed, for a task another worker did.
// Its notifications are held and dropped with its events.
func TestWorkClaimLostBesideTheRunNotifiesNothing(t *testing.T) {
	t.Parallel()
	f := newFleetOn(t, independentPlan(1), serveGitDaemon)
	hook := f.holdFirstClaim("slow")
	notes := filepath.Join(t.TempDir(), "notes")
	slow := f.start("slow", nil, "--notify", "printf '%s\\n' \"$IMPLLOOP_EVENT\" >> "+notes)
	waitFile(t, hook+".held", slow)
	fastNotes := filepath.Join(t.TempDir(), "notes")
	fast := f.start("fast", nil, "--notify", "printf '%s\\n' \"$IMPLLOOP_EVENT\" >> "+fastNotes)
	f.wait(fast)
	f.wait(slow)
	logs := "slow:\n" + slow.err.String() + "\nfast:\n" + fast.err.String()
	if calls := f.callLines(); !slices.Equal(calls, []string{"T001"}) {
		t.Fatalf("calls %v\n%s", calls, logs)
	}
	if b, _ := os.ReadFile(notes); strings.TrimSpace(string(b)) != "" {
		t.Fatalf("slow, which ran nothing, notified %q\n%s", b, logs)
	}
	// The worker that ran the task notifies its run's end, once.
	if b, _ := os.ReadFile(fastNotes); strings.TrimSpace(string(b)) != "run_finished" {
		t.Fatalf("fast notified %q, want run_finished\n%s", b, logs)
	}
}

// A claim moved (by anyone with push access) to a garbage records ref: a
// worker pulls that run, as the result of the claim's task; its pull
// refuses it, names it, and the worker does the task again (the task
// after it builds on that, not on the garbage).
func TestWorkRefusedResultDoneAgain(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n## Task 1: first\n\nWrite out-1.txt.\n\n## Task 2: second\n\nDepends on: 1\n\nWrite out-2.txt.\n"
	f := newFleetOn(t, plan, serveGitDaemon)
	a := filepath.Join(f.dir, "a")
	f.forge(a, "", 1024, travel.RecordsRefPrefix+runid.New(time.Now().Add(-time.Hour)), travel.ClaimRef(f.planKeyOf(a), "1"))
	w := f.start("w", nil)
	f.wait(w)
	logs := w.err.String() + w.out.String()
	if calls := f.callLines(); !slices.Equal(calls, []string{"1", "2"}) {
		t.Fatalf("calls %v\n%s", calls, logs)
	}
	if !strings.Contains(logs, "refused "+travel.RecordsRefPrefix) || !strings.Contains(logs, "done again") {
		t.Fatalf("the worker did not name the records it refused, or did not do task 1 again:\n%s", logs)
	}
}
