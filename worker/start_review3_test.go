package worker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestStartFailedSignsNothing: a start that fails on the plan (edited
// and not committed) does not sign (main wrote the base's commit without
// the plan already, boundary.CommitTree, and still does): before startGroup, the
// signing probe (travel.CheckSelfTrust: `git commit-tree -S`, which may
// ask a hardware key for a touch or an agent for a passphrase, and
// writes the probe's commit) came after the plan's checks. Now it runs
// beside them and is not stopped when they fail.
func TestStartFailedSignsNothing(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	r, _, s := signedRepo(t, 1, "", "true")
	mark := filepath.Join(t.TempDir(), "signed")
	prog := filepath.Join(t.TempDir(), "ssh-keygen")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ncase \" $* \" in *\" sign \"*) echo \"$*\" >> "+mark+";; esac\nexec ssh-keygen \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Git("config", "gpg.ssh.program", prog)
	r.Write("plan.md", "# Plan\n\n- [ ] T1 [P] edited, not committed\n")
	_, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, ID: "w"})
	var pe *PlanNotCommittedError
	if !errors.As(err, &pe) {
		t.Fatalf("start: %v, want the plan not committed", err)
	}
	if b, err := os.ReadFile(mark); err == nil {
		t.Errorf("a failed start signed: %s", b)
	}
}
