package worker

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

// Two workers in this process (under the race detector), in two clones
// of one remote, six independent tasks whose agents outlast a look:
// each sees the other's results, which no task of its waits for, and
// pulls them behind its next agent (pullBehind) while its own run writes
// the shared journal of its clone. Every task is done once, and no
// result is refused.
func TestReviewTwoWorkersPullBehind(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	r, bare, s := signedRepo(t, 6, "", sleeper("0.5"))
	dir2 := filepath.Join(t.TempDir(), "two")
	gittest.At(t, filepath.Dir(dir2)).Git("clone", "-q", bare, dir2)
	r2 := gittest.At(t, dir2)
	for _, k := range []string{"gpg.format", "user.signingKey", "gpg.ssh.allowedSignersFile", "implloop.signRuns"} {
		r2.Git("config", k, strings.TrimSpace(r.Git("config", k)))
	}
	r2.Git("checkout", "-q", "main")
	var mu sync.Mutex
	var events []Event
	log := func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
	var wg sync.WaitGroup
	sums := make([]*Summary, 2)
	errs := make([]error, 2)
	for i, root := range []string{r.Dir, r2.Dir} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i], errs[i] = Work(context.Background(), Options{Root: root, Remote: "origin", Settings: s, Lease: 2 * time.Second, ID: []string{"a", "b"}[i], Log: log})
		}()
	}
	wg.Wait()
	done := 0
	for i := range sums {
		if errs[i] != nil {
			t.Fatalf("worker %d: %v", i, errs[i])
		}
		done += len(sums[i].Tasks)
	}
	if done != 6 {
		t.Errorf("tasks done %d, want 6: %+v %+v", done, sums[0], sums[1])
	}
	for _, e := range events {
		if e.Type == "refused" {
			t.Errorf("refused: %+v", e)
		}
	}
}
