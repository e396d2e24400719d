package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
)

// TestRunningNeedsTheLock: after a kill -9 the lock file goes on naming
// its run and pid; when that pid is reused by another process (here: this
// test's own, alive), the run is not RUNNING, since nobody holds the
// lock. Once a run holds it, it is.
func TestRunningNeedsTheLock(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	dirs, err := cache.StateDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dirs.Lock, 0o755); err != nil {
		t.Fatal(err)
	}
	stale, _ := json.Marshal(LockHolder{RunID: "r-killed", PID: os.Getpid(), Started: time.Now()})
	if err := os.WriteFile(filepath.Join(dirs.Lock, "lock"), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	if running, err := Running(repo); err != nil || len(running) != 0 {
		t.Fatalf("a lock file nobody holds, naming a live pid: running %v, %v; want none", running, err)
	}
	lock, err := acquireLock(dirs.Lock, "r-live", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if running, err := Running(repo); err != nil || running["r-live"] != os.Getpid() {
		t.Fatalf("while a run holds the lock: running %v, %v", running, err)
	}
}

// TestAcquireWaitsOutAProbe: a read-only command's probe of the lock
// (lockHeld: a shared flock for an instant) does not make a run starting
// at that instant refuse as if another run held the work tree: neither
// with an empty lock file, nor with a stale one, which after a kill -9
// goes on naming the dead run whose pid may be another live process's by
// now (the probe is what holds the flock, not the process the file names).
func TestAcquireWaitsOutAProbe(t *testing.T) {
	stale, _ := json.Marshal(LockHolder{RunID: "r-killed", PID: os.Getpid(), Started: time.Now()})
	for name, content := range map[string][]byte{"empty": nil, "stale": stale} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "lock")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			fd, unlocked := int(f.Fd()), make(chan struct{})
			go func() {
				defer close(unlocked)
				time.Sleep(50 * time.Millisecond)
				_ = syscall.Flock(fd, syscall.LOCK_UN)
			}()
			defer func() { <-unlocked }() // before f closes
			lock, err := acquireLock(dir, "r-new", time.Now())
			if err != nil {
				t.Fatalf("acquire during a probe: %v", err)
			}
			lock.Release()
		})
	}
}

// TestLockFileDeletedByAgent is issue 26's "lock file deleted": task 1's
// agent removes the work tree's lock file (an flock is the file's, not
// the path's) and, while it still runs, a second run starts in the same
// tree. The second run creates a new lock file and gets its flock, but
// not the git directory's (the anchor): it refuses, naming the pid. The
// first run notices the deletion at the boundary after task 1 and blocks
// it; no task was called twice.
func TestLockFileDeletedByAgent(t *testing.T) {
	for _, c := range []struct {
		how    string // what the agent does to the lock file
		second bool   // a second run starts meanwhile
		want   string // what the first run says of it
	}{
		{"deleted", true, "replaced"}, // by the second run's new file
		{"replaced", true, "replaced"},
		{"deleted", false, "deleted"},
	} {
		how := c.how
		t.Run(fmt.Sprintf("%s second=%v", c.how, c.second), func(t *testing.T) {
			repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
			lockPath := filepath.Join(repo, ".git", "implloop", "lock")
			take := "rm -f " + shellQuote(lockPath)
			if how == "replaced" {
				take += "; echo '{}' > " + shellQuote(lockPath)
			}
			agentPath, logDir := fakeAgent(t, `
echo "$IMPLLOOP_RUN_ID $IMPLLOOP_TASK_ID" >> "$LOG/calls"
if [ "$IMPLLOOP_TASK_ID" = 1 ]; then
	`+take+`
	touch "$LOG/taken"
	while [ ! -f "$LOG/go" ]; do sleep 0.02; done
fi
echo "$IMPLLOOP_TASK_ID" > "f$IMPLLOOP_TASK_ID.txt"`)
			s := settingsFor(agentPath)
			type result struct {
				out *Outcome
				err error
			}
			first := make(chan result, 1)
			go func() {
				out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo})
				first <- result{out, err}
			}()
			waitFile(t, filepath.Join(logDir, "taken"), 20*time.Second)

			if c.second {
				_, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo})
				var locked *LockedError
				if !errors.As(err, &locked) || !locked.FileGone || locked.Holder.PID != os.Getpid() {
					t.Errorf("a second run beside the first: %v (%+v), want LockedError naming pid %d", err, locked, os.Getpid())
				}
			}
			writeFile(t, filepath.Join(logDir, "go"), "")
			r := <-first
			if r.err != nil {
				t.Fatal(r.err)
			}
			checkJournal(t, repo)
			rows := taskRows(t, openJournal(t, repo), r.out.RunID)
			if rows["1"].Status != cache.TaskBlocked || !strings.Contains(rows["1"].BlockReason, "lock file .git/implloop/lock was "+c.want) {
				t.Errorf("task 1: %s %q, want blocked for the lock file", rows["1"].Status, rows["1"].BlockReason)
			}
			if calls := strings.Count(readFile(t, filepath.Join(logDir, "calls")), "\n"); calls != 1 {
				t.Errorf("%d agent calls, want 1 (task 1, once):\n%s", calls, readFile(t, filepath.Join(logDir, "calls")))
			}
			// The run took the lock file again: nothing is left held.
			if running, err := Running(repo); err != nil || len(running) != 0 {
				t.Errorf("after the run: running %v, %v", running, err)
			}
		})
	}
}
