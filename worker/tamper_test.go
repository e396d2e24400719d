package worker

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

// A worker's next task starts from its input whatever the task before
// did to the worktree and the repository: its agent left files (one
// ignored), staged and committed, made a stash and moved refs/stash,
// packed and pruned every object (git gc), removed implloop's state of
// the worktree (its private index, the notes the reset leaves). The
// runs that follow take shortcuts on what the worker did itself (a
// reset's notes, trees and answers remembered, objects read in process):
// their results still hold their own task's work and nothing of the
// first task's.
func TestWorkAfterAnAgentTampered(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	mark := filepath.Join(t.TempDir(), "tampered")
	agent := "if mkdir " + mark + " 2>/dev/null; then\n" +
		"  echo left > left-behind.txt && echo '*.log' > .gitignore && echo built > build.log\n" +
		"  git add -A && git -c user.name=a -c user.email=a@a commit -qm 'the agent commits' || exit 1\n" +
		"  echo staged > staged.txt && git add staged.txt && echo stashed >> left-behind.txt\n" +
		"  git -c user.name=a -c user.email=a@a stash -q || exit 1\n" +
		"  git update-ref refs/stash HEAD && git gc -q --prune=now || exit 1\n" +
		"  rm -rf \"$(git rev-parse --git-dir)/implloop\"\n" +
		"fi\n" +
		"echo done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
	r, bare, s := signedRepo(t, 3, "", agent)
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Tasks) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	remote := gittest.At(t, bare)
	first := sum.Tasks[0]
	for _, tr := range sum.Tasks[1:] {
		if !tr.Pushed || tr.Verdict != "DONE" {
			t.Errorf("task %s after the tampering: %+v", tr.Task, tr)
		}
		files := strings.Fields(remote.Git("ls-tree", "-r", "--name-only", "refs/implloop/runs/"+tr.Run))
		want := []string{"out-" + tr.Task + ".txt"}
		if strings.Join(files, " ") != strings.Join(want, " ") {
			t.Errorf("task %s's result holds %q, want %q (nothing of task %s's)", tr.Task, files, want, first.Task)
		}
	}
}
