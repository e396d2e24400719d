package loop

import (
	"encoding/json"
	"os"
	"path/filepath"
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
