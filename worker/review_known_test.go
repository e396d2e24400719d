package worker

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestReviewIgnoreRulesRelearned: as TestWorkIgnoreRulesAsItStarted, but
// the first task's agent also leaves its worktree's index locked
// (index.lock in its git directory). The next checkout's reset fails, the
// worker makes its worktree again and learns its facts again (loop.Learn)
// after an agent ran. Learned so, the agent's core.excludesFile became
// the rules the later runs went by, and their work was left out of their
// results as ignored (DONE and empty, no concern), what Known was made to
// prevent; the worktree made again keeps the rules first learned
// (loop.Relearn).
func TestReviewIgnoreRulesRelearned(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	agent, _ := excludesFlipAgent(t, "touch \"$(git rev-parse --git-dir)/index.lock\"")
	r, bare, s := signedRepo(t, 3, "", agent)
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	resultsHoldWork(t, bare, sum)
}
