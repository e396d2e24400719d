package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Review (branch behind): a worker whose claim another worker won while
// its run started beside the claim's push shows nothing of that run
// (heldEvents), but the run still ends INTERRUPTED inside loop.Run, whose
// --notify fires run_finished for it: the person away from the terminal
// hears of a run the worker never showed, for a task another worker did.
func TestWorkClaimLostBesideTheRunNotifiesNothing(t *testing.T) {
	t.Skip("bug: a run stopped because its claim was lost beside its start still fires --notify run_finished (INTERRUPTED)")
	t.Parallel()
	f := newFleetOn(t, independentPlan(1), serveGitDaemon)
	hook := f.preReceive("#!/bin/sh\nin=$(cat)\ncase \"$in\" in *refs/implloop/claims/*) ;; *) exit 0;; esac\n" +
		"set -- $in\n[ \"$1\" = 0000000000000000000000000000000000000000 ] || exit 0\n" +
		"git cat-file commit \"$2\" | grep -qx 'worker slow' || exit 0\n" +
		"[ -e \"$0.held\" ] && exit 0\ntouch \"$0.held\"\n" +
		"i=0; while ! git rev-parse -q --verify \"$3\" >/dev/null; do i=$((i+1)); [ $i -gt 400 ] && exit 0; sleep 0.05; done\n")
	notes := filepath.Join(t.TempDir(), "notes")
	slow := f.start("slow", nil, "--notify", "printf '%s\\n' \"$IMPLLOOP_EVENT\" >> "+notes)
	waitFile(t, hook+".held", slow)
	fast := f.start("fast", nil)
	f.wait(fast)
	f.wait(slow)
	logs := "slow:\n" + slow.err.String() + "\nfast:\n" + fast.err.String()
	if calls := f.callLines(); !slices.Equal(calls, []string{"T001"}) {
		t.Fatalf("calls %v\n%s", calls, logs)
	}
	if b, _ := os.ReadFile(notes); strings.TrimSpace(string(b)) != "" {
		t.Fatalf("slow, which ran nothing, notified %q\n%s", b, logs)
	}
}
