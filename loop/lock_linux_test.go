package loop

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReleaseDuringAFork: a process forked by another goroutine of the
// same implloop (a git command, a gate, a worker's background push, a
// parallel test's run) has a copy of every descriptor, the lock file's and
// the anchor's among them, from the fork until its exec closes them
// (close-on-exec). When the run releases its lock inside that window, the
// next run in the same work tree must still get both. A Release that only
// closed the anchor left its flock held by the copy, and the next run,
// which got the lock file, was refused as if an agent had deleted it
// (LockedError with FileGone; TestResumePlanEdits, whose subtests run in
// parallel, failed so about one time in two on a loaded machine).
//
// "fork" holds the real window open: the forked child's exec blocks in
// the open of its program, on which the test holds a write lease (fcntl
// F_SETLEASE), until the test gives the lease up. "copy" is the same for
// the kernel without leases: a live child holds a copy of the anchor's
// descriptor.
func TestReleaseDuringAFork(t *testing.T) {
	t.Run("fork", func(t *testing.T) {
		releaseWhile(t, forkInExec)
	})
	t.Run("copy", func(t *testing.T) {
		releaseWhile(t, func(t *testing.T, l *Lock) func() {
			cmd := exec.Command("cat")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.ExtraFiles = []*os.File{l.anchor, l.File()}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			return func() {
				stdin.Close()
				if err := cmd.Wait(); err != nil {
					t.Errorf("the child holding a copy: %v", err)
				}
			}
		})
	})
}

// releaseWhile takes a work tree's lock, has copies of its descriptors
// made (hold; its result ends them), releases it and checks that the
// next run takes it at once.
func releaseWhile(t *testing.T, hold func(*testing.T, *Lock) (end func())) {
	dir := filepath.Join(t.TempDir(), "gitdir", "implloop") // the anchor is gitdir
	lock, err := acquireLock(dir, "r-first", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	end := hold(t, lock)
	defer end()
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	next, err := acquireLock(dir, "r-next", time.Now())
	if err != nil {
		t.Fatalf("the next run, while a process has copies of the released lock's descriptors: %v", err)
	}
	if err := next.Release(); err != nil {
		t.Fatal(err)
	}
}

// forkInExec starts a command from another goroutine and returns once its
// child is forked and blocked in its exec (every descriptor of this
// process copied, the close-on-exec ones not yet closed); end lets it go
// on and waits for it.
//
// The forking thread waits for the exec without giving up its P, and a
// stop of the world (a GC) would wait for it: the GC is off meanwhile,
// and another P must be free for the test.
func forkInExec(t *testing.T, _ *Lock) (end func()) {
	prog := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	leased, err := os.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(leased.Fd(), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		leased.Close()
		t.Skipf("no file lease here to hold a fork's exec open: %v", err)
	}
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	gc := debug.SetGCPercent(-1)
	cmd := exec.Command(prog)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	ran := make(chan error, 1)
	go func() { ran <- cmd.Run() }()
	end = func() {
		// The lease goes: the exec opens its program and goes on.
		_, _ = unix.FcntlInt(leased.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
		if err := <-ran; err != nil {
			t.Errorf("the forked command: %v", err)
		}
		leased.Close()
		debug.SetGCPercent(gc)
	}
	// The child is in its exec, blocked on the lease, once the lease is
	// being broken (F_GETLEASE then says what it is to become).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		how, err := unix.FcntlInt(leased.Fd(), unix.F_GETLEASE, 0)
		if err != nil {
			end()
			t.Fatalf("F_GETLEASE: %v", err)
		}
		if how != unix.F_WRLCK {
			return end
		}
		if time.Now().After(deadline) {
			end()
			t.Fatal("the forked command never reached its exec")
		}
	}
}
