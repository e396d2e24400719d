package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Lock is the work tree's lock ($(git rev-parse --git-dir)/implloop/lock):
// one run or resume per work tree at a time. It is an advisory flock on
// the file, so the kernel releases it when the holder dies (even by kill
// -9): a stale lock of a dead process is taken over without any guessing
// about pids. The file's content names the holder for the error message.
type Lock struct {
	f *os.File
}

// LockHolder is what the lock file says about the run holding it.
type LockHolder struct {
	RunID   string    `json:"run_id"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// ErrLocked is returned when another implloop process holds the lock.
type ErrLocked struct {
	Holder LockHolder
	// Path is the lock file, as a message shows it.
	Path string
}

func (e *ErrLocked) Error() string {
	if e.Holder.PID == 0 {
		return fmt.Sprintf("another implloop run holds this work tree's lock (%s)", e.Path)
	}
	return fmt.Sprintf("run %s (pid %d) holds this work tree's lock (%s) since %s",
		e.Holder.RunID, e.Holder.PID, e.Path, e.Holder.Started.Format(time.RFC3339))
}

// AcquireLock takes the lock in dir (cache.Dirs.Lock) for runID.
func AcquireLock(dir, runID string, now time.Time) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var h LockHolder
			if b, rerr := os.ReadFile(path); rerr == nil {
				_ = json.Unmarshal(b, &h)
			}
			return nil, &ErrLocked{Holder: h, Path: path}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	b, _ := json.Marshal(LockHolder{RunID: runID, PID: os.Getpid(), Started: now.UTC()})
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(b, '\n'), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up. The file stays (removing it would race with a
// process that has it open and is about to lock it).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
