package boundary

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A worker's runs read the stash through the Repo learned once: git is
// asked again only when a file it reads the answer from changed, so the
// answer is git's whatever an agent did to the stash in between (stash,
// drop, update-ref, a symbolic ref, a branch named refs/stash, the
// reflogs removed, gc) -- and git is not asked while nothing did (but
// always while refs/stash is a symbolic ref: git may read its target's
// reflog).
func TestRepoStashTop(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	r.write("a.txt", "a")
	r.commitAll("a")
	repo, err := LearnRepo(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	log := countGit(t)
	asked := func(step string, want int) {
		t.Helper()
		if got := calls(t, log, "log -g"); len(got) != want {
			t.Errorf("%s: git asked %d times, want %d", step, len(got), want)
		}
	}
	if top, err := repo.StashTop(ctx, r.dir); err != nil || top != (Stash{}) {
		t.Fatalf("no stash: %+v, %v", top, err)
	}
	asked("first", 1)
	for range 2 {
		if top, _ := repo.StashTop(ctx, r.dir); top != (Stash{}) {
			t.Fatalf("no stash, again: %+v", top)
		}
	}
	asked("nothing changed", 0)

	// Each step as an agent would take it; the Repo's answer must be
	// git's, which it asks again once (twice where it cannot remember
	// the answer, not at all where nothing of the stash changed). The
	// files changing under the same stat data is ruled out by the racy
	// margin, here none: each step sleeps past the file system's
	// timestamp granularity.
	repo.racy = 0
	check := func(step string, asks int) {
		t.Helper()
		time.Sleep(20 * time.Millisecond)
		want, err := StashTop(ctx, r.dir)
		if err != nil {
			t.Fatal(err)
		}
		calls(t, log, "")
		for range 2 {
			if got, err := repo.StashTop(ctx, r.dir); err != nil || got != want {
				t.Errorf("%s: %+v (%v), git says %+v", step, got, err, want)
			}
		}
		if got := calls(t, log, "log -g"); len(got) != asks {
			t.Errorf("%s: git asked %d times, want %d", step, len(got), asks)
		}
	}
	r.write("a.txt", "work")
	r.git("stash", "-q")
	check("git stash", 1)
	r.write("a.txt", "more work")
	r.git("stash", "-q")
	check("git stash again", 1)
	r.git("stash", "drop", "-q")
	check("git stash drop", 1)
	head := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	r.git("update-ref", "-m", "moved", "refs/stash", head)
	check("git update-ref refs/stash", 1)
	r.git("pack-refs", "--all")
	check("git pack-refs", 1)
	packed := r.read(".git/packed-refs")
	other := strings.TrimSpace(r.git("commit-tree", "-p", head, "-m", "other", head+"^{tree}"))
	r.write(".git/packed-refs", strings.ReplaceAll(packed, head+" refs/stash", other+" refs/stash"))
	check("refs/stash moved in packed-refs", 1)
	r.git("update-ref", "refs/heads/other", head)
	r.git("pack-refs", "--all")
	check("another ref packed", 0) // nothing of the stash changed
	r.git("gc", "-q", "--prune=now")
	check("git gc", 1)
	r.remove(".git/logs/refs/stash")
	check("reflog removed", 1)
	r.git("stash", "clear")
	check("git stash clear", 1)
	r.git("branch", "refs/stash")
	check("a branch named refs/stash", 1)
	r.git("symbolic-ref", "refs/stash", "refs/heads/refs/stash")
	check("refs/stash a symbolic ref", 2)
	r.write("a.txt", "again")
	r.git("commit", "-qam", "moves the branch refs/stash names")
	check("the branch refs/stash names moved", 2)
	os.RemoveAll(filepath.Join(r.dir, ".git", "logs"))
	check("every reflog removed", 2)
}
