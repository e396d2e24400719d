package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkBehindPullHoldsTheJournal: the pull made behind a task's agent
// (worker.pullBehind) imports in one journal transaction (BEGIN
// IMMEDIATE, cache.ImportRecords) that is held while git verifies the
// runs' signatures, reads them and stores their blobs; the task's own
// run writes to the same journal (linked worktrees share it) under a
// 10 s busy timeout. A verification slower than that (here a
// gpg.ssh.program that takes 25 s, as a slow gpg, a hardware key's
// program or a loaded machine at the pull's nice 10 can) makes the
// task's journal writes fail with "database is locked": the task fails
// for a pull nothing waited for. Before the pull ran beside the agent,
// a pull never overlapped the worker's run.
func TestWorkBehindPullHoldsTheJournal(t *testing.T) {
	t.Parallel()
	f := newFleetOn(t, independentPlan(2), serveGitDaemon)
	w1 := f.start("w1", []string{"COST=1"}, "--max-cost", "0.5")
	f.wait(w1)
	// A verifying program that is slow for every payload but the
	// worker's own signing probe (CheckSelfTrust at its start).
	slow := filepath.Join(f.dir, "slow-ssh-keygen")
	must(t, os.WriteFile(slow, []byte(`#!/bin/sh
case " $* " in
*" verify "*)
  tmp=$(mktemp); cat > "$tmp"
  grep -q "signing probe" "$tmp" || sleep 12
  ssh-keygen "$@" < "$tmp"; rc=$?; rm -f "$tmp"; exit $rc;;
esac
exec ssh-keygen "$@"
`), 0o755))
	home := filepath.Join(f.dir, "home")
	f.run(f.dir, "git", "config", "--file", filepath.Join(home, ".gitconfig"), "gpg.ssh.program", slow)
	w2 := f.start("w2", []string{"AGENT_SLEEP=2"})
	err := w2.cmd.Wait()
	if err != nil || strings.Contains(w2.err.String(), "locked") {
		t.Fatalf("w2: %v\n%s%s", err, w2.out.String(), w2.err.String())
	}
	if calls := f.callLines(); len(calls) != 2 {
		t.Fatalf("calls %v, want one a task\n%s", calls, w2.err.String())
	}
}
