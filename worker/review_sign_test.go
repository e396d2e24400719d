package worker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestReviewSigningProgramAsItStarted: travel.Signing is learned once so
// that an agent's change to git's configuration does not change how the
// worker's results go; but only whether they are signed and whose they
// are is learned: the key and the program that signs (gpg.format,
// user.signingKey, gpg.ssh.program, gpg.program) are read by `git
// commit-tree -S` at each push, in the clone whose configuration the
// agent shares. An agent that sets gpg.ssh.program has the worker run its
// program, outside any sandbox the agent runs in, at the next push.
func TestReviewSigningProgramAsItStarted(t *testing.T) {
	t.Skip("bug: the worker's pushes sign with the signing program and key git's configuration names at push time, which an agent can set")
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	d := t.TempDir()
	mark, ran, prog := filepath.Join(d, "flipped"), filepath.Join(d, "ran"), filepath.Join(d, "sign")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+ran+"\nexec ssh-keygen \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := "if mkdir " + mark + " 2>/dev/null; then git config gpg.ssh.program " + prog + " || exit 1; fi\n" +
		"echo done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
	r, _, s := signedRepo(t, 2, "", agent)
	if _, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the worker ran the signing program an agent named (gpg.ssh.program)")
	}
}
