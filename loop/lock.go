package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/procgroup"
)

// Lock is the work tree's lock ($(git rev-parse --git-dir)/implloop/lock):
// one run or resume per work tree at a time. It is an advisory flock on
// the file, so the kernel releases it when the last descriptor of it goes,
// without any guessing about pids. The run's agents and gates inherit a
// descriptor ([Lock.File]): after a kill -9 of implloop the lock lives on
// while anything it started does (its process group is killed with it,
// internal/procgroup, but a process can leave its group), and a resume
// refuses with [ChildRunningError] instead of running the same task beside
// it. The file's content names the holder, and the agent or gate it runs
// now, for the error messages and 'implloop runs'.
//
// An flock belongs to a file, not to a path: an agent that deletes the
// lock file (or puts another in its place) would let a second run take a
// lock of its own on the new file. So the run also holds an flock on the
// work tree's git directory (the anchor), which no agent can delete
// without destroying the repository; a second run that got the file's
// lock still finds the anchor taken and refuses. The anchor is not handed
// down: after a kill -9 it goes with implloop, and the file's lock, held
// by what implloop left running, says who that is. The run notices a
// deleted or replaced lock file at its next boundary ([Lock.Gone]), which
// blocks the task that did it.
type Lock struct {
	mu     sync.Mutex
	f      *os.File
	anchor *os.File
	path   string
	shown  string // path as messages show it
	holder LockHolder
}

// LockHolder is what the lock file says about the run holding it.
type LockHolder struct {
	RunID   string    `json:"run_id"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Child is the agent or gate the run is waiting for ("" between
	// them), ChildPID its pid (and process group).
	Child    string `json:"child,omitempty"`
	ChildPID int    `json:"child_pid,omitempty"`
}

// LockedError is returned when another implloop process holds the lock.
type LockedError struct {
	Holder LockHolder
	// Path is the lock file, as a message shows it.
	Path string
	// FileGone: the lock file let this run in, but the run holding the
	// work tree's git directory (the anchor) has its own lock file no
	// longer at Path (an agent deleted or replaced it).
	FileGone bool
}

func (e *LockedError) Error() string {
	if e.FileGone {
		who := "another implloop run"
		if e.Holder.PID != 0 {
			who += fmt.Sprintf(" (pid %d)", e.Holder.PID)
		}
		return fmt.Sprintf("%s holds this work tree's lock, although its lock file %s was deleted or replaced", who, e.Path)
	}
	if e.Holder.PID == 0 {
		return fmt.Sprintf("another implloop run holds this work tree's lock (%s)", e.Path)
	}
	return fmt.Sprintf("run %s (pid %d) holds this work tree's lock (%s) since %s",
		e.Holder.RunID, e.Holder.PID, e.Path, e.Holder.Started.Format(time.RFC3339))
}

// ChildRunningError is returned when the implloop that holds the lock is
// dead but an agent (or gate) it started still runs and holds the lock.
type ChildRunningError struct {
	RunID string
	Child string // "agent" or "gate"
	PID   int    // a live process holding the lock; 0 when none could be named
	Path  string // the lock file, as a message shows it
	// Process is set for a process found by the run's IMPLLOOP_RUN_ID in
	// its environment, not by the lock (leftovers.go): its command name
	// ("?" when unknown).
	Process string
}

func (e *ChildRunningError) Error() string {
	if e.Process != "" {
		return fmt.Sprintf("run %s left a process running (pid %d, %s), started by its agent or gate; wait for it or kill it",
			e.RunID, e.PID, e.Process)
	}
	if e.PID == 0 {
		return fmt.Sprintf("run %s's %s, or a process it started, is still running and holds this work tree's lock (%s); wait for it or kill it",
			e.RunID, e.Child, e.Path)
	}
	return fmt.Sprintf("run %s's %s (pid %d) is still running; wait for it or kill it", e.RunID, e.Child, e.PID)
}

// orphanWait is how long acquireLock gives a dead holder's agent to die
// (its watchdog KILLs its group as soon as it sees implloop gone) before
// it refuses with ChildRunningError.
const orphanWait = 2 * time.Second

// probeWait is how long acquireLock retries a held lock before it looks
// at who holds it: lockHeld's probe holds it for an instant.
const probeWait = 200 * time.Millisecond

// acquireLock takes the lock in dir (cache.Dirs.Lock) for runID.
func acquireLock(dir, runID string, now time.Time) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	deadline, probed := time.Now().Add(orphanWait), time.Now().Add(probeWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().Before(probed) {
			// A read-only command's shared probe (lockHeld) may hold
			// it for an instant, whatever the file names: after a
			// kill -9 it names the dead run, whose pid may be another
			// live process's by now.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		h := readLockHolder(path)
		if h.PID == 0 || procgroup.Alive(h.PID) {
			f.Close()
			return nil, &LockedError{Holder: h, Path: path}
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, childRunning(h, path)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The anchor: the git directory the state directory is in.
	anchor, err := os.Open(filepath.Dir(dir))
	if err != nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(anchor.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := procgroup.FlockPID(anchor.Name())
		anchor.Close()
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Holder: LockHolder{PID: pid}, Path: path, FileGone: true}
		}
		return nil, fmt.Errorf("lock %s: %w", anchor.Name(), err)
	}
	l := &Lock{f: f, anchor: anchor, path: path, shown: path, holder: LockHolder{RunID: runID, PID: os.Getpid(), Started: now.UTC()}}
	l.write()
	return l, nil
}

// Gone says what happened to the lock file since the run took it:
// "deleted", "replaced" (another file at its path), or "" while it is in
// place. Whatever it was, the run takes the file at the path again (a new
// one when it was deleted) when it can, so that the run shows as running
// and what it starts next inherits the lock that 'implloop runs' and a
// second run look at; the anchor kept a second run out meanwhile.
func (l *Lock) Gone() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ""
	}
	have, err := l.f.Stat()
	if err != nil {
		return ""
	}
	how := ""
	switch fi, err := os.Stat(l.path); {
	case errors.Is(err, os.ErrNotExist):
		how = "deleted"
	case err != nil:
		how = "made unreadable (" + err.Error() + ")"
	case !os.SameFile(fi, have):
		how = "replaced"
	default:
		return ""
	}
	if f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644); err == nil {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			// The old file's descriptor goes: what inherited it keeps
			// its own, and with it that lock, until it exits.
			l.f.Close()
			l.f = f
			l.write()
		} else {
			f.Close()
		}
	}
	return how
}

// Shown is the lock file's path as messages show it.
func (l *Lock) Shown() string {
	if l == nil {
		return ""
	}
	return l.shown
}

// childRunning names what holds the lock of h's dead implloop: the child
// it journaled if that lives, else any process with the lock file open.
func childRunning(h LockHolder, path string) *ChildRunningError {
	e := &ChildRunningError{RunID: h.RunID, Child: h.Child, Path: path}
	if e.Child == "" {
		e.Child = "agent"
	}
	if procgroup.Alive(h.ChildPID) {
		e.PID = h.ChildPID
	} else if pids := procgroup.Holding(path); len(pids) > 0 {
		e.PID = pids[0]
	}
	return e
}

// lockHeld reports whether a live process holds the work tree's lock (see
// acquireLock), without creating or writing anything: a shared flock for
// an instant, which acquireLock waits out (probeWait).
func lockHeld(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "lock"))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// readLockHolder reads the lock file at path; the zero holder when it is
// empty (released) or unreadable.
func readLockHolder(path string) LockHolder {
	var h LockHolder
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &h)
	}
	return h
}

func (l *Lock) write() {
	b, _ := json.Marshal(l.holder)
	if err := l.f.Truncate(0); err == nil {
		_, _ = l.f.WriteAt(append(b, '\n'), 0)
	}
}

// File is the lock's descriptor for an agent or gate to inherit; nil for
// a nil Lock (a dry run, a test without one).
func (l *Lock) File() *os.File {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f
}

// SetChild records in the lock file the agent or gate the run now waits
// for (kind "" and pid 0 once it is over).
func (l *Lock) SetChild(kind string, pid int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	l.holder.Child, l.holder.ChildPID = kind, pid
	l.write()
}

// Release gives the lock up, also for the processes that inherited its
// descriptor (it is one open file), and for those that have a copy of the
// anchor's for an instant (forked, not yet exec'd): it unlocks both, since
// closing a descriptor frees an flock only when it is the last one. The
// file stays (removing it would race with a process that has it open and
// is about to lock it).
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	if l.anchor != nil {
		// Before the file: a run that gets the file then finds the
		// anchor free. Unlocked, not just closed: a process forked
		// meanwhile by another goroutine (a git command, another run's
		// agent) has a copy of the descriptor until its exec closes it,
		// and the flock would live on in that copy.
		_ = syscall.Flock(int(l.anchor.Fd()), syscall.LOCK_UN)
		_ = l.anchor.Close()
		l.anchor = nil
	}
	_ = l.f.Truncate(0)
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// Running maps the id of every run that is running now, in any work tree
// of the repository at repoRoot, to its pid: implloop's, or, when that
// died, the pid of the agent or gate it left holding the lock. It reads
// the lock files and nothing else (for read-only commands). A lock file
// counts only while its flock is held: after a kill -9 the file goes on
// naming its run until the next run takes the lock, and the pid it names
// may meanwhile be another process's.
func Running(repoRoot string) (map[string]int, error) {
	dirs, err := cache.StateDir(repoRoot)
	if err != nil {
		return nil, err
	}
	common := filepath.Dir(dirs.State)
	paths, _ := filepath.Glob(filepath.Join(common, "worktrees", "*", filepath.Base(dirs.State), "lock"))
	paths = append(paths, filepath.Join(dirs.State, "lock"))
	running := map[string]int{}
	for _, p := range paths {
		h := readLockHolder(p)
		switch {
		case h.RunID == "", !lockHeld(filepath.Dir(p)):
		case procgroup.Alive(h.PID):
			running[h.RunID] = h.PID
		default:
			if pid := childRunning(h, p).PID; pid != 0 {
				running[h.RunID] = pid
			}
		}
	}
	return running, nil
}
