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
		if top, _ := repo.StashTop(ctx, filepath.Join(r.dir)); top != (Stash{}) {
			t.Fatalf("no stash, again: %+v", top)
		}
	}
	asked("nothing changed", 0)

	// Each step as an agent would take it; the Repo's answer must be
	// git's (the files changing under the same stat data is ruled out
	// by the racy margin, here none: each step sleeps past the file
	// system's timestamp granularity).
	repo.racy = 0
	check := func(step string, remembered bool) {
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
		want1 := 2
		if remembered {
			want1 = 1
		}
		if got := calls(t, log, "log -g"); len(got) != want1 {
			t.Errorf("%s: git asked %d times, want %d", step, len(got), want1)
		}
	}
	r.write("a.txt", "work")
	r.git("stash", "-q")
	check("git stash", true)
	r.write("a.txt", "more work")
	r.git("stash", "-q")
	check("git stash again", true)
	r.git("stash", "drop", "-q")
	check("git stash drop", true)
	head := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	r.git("update-ref", "-m", "moved", "refs/stash", head)
	check("git update-ref refs/stash", true)
	r.git("pack-refs", "--all")
	check("git pack-refs", true)
	r.git("gc", "-q", "--prune=now")
	check("git gc", true)
	r.remove(".git/logs/refs/stash")
	check("reflog removed", true)
	r.git("stash", "clear")
	check("git stash clear", true)
	r.git("branch", "refs/stash")
	check("a branch named refs/stash", true)
	r.git("symbolic-ref", "refs/stash", "refs/heads/refs/stash")
	check("refs/stash a symbolic ref", false)
	r.write("a.txt", "again")
	r.git("commit", "-qam", "moves the branch refs/stash names")
	check("the branch refs/stash names moved", false)
	os.RemoveAll(filepath.Join(r.dir, ".git", "logs"))
	check("every reflog removed", false)
}
