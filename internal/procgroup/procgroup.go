// Package procgroup starts commands in their own process group and stops
// the whole group: the one TERM-then-KILL mechanism behind agent calls
// (agent) and verify gates (loop).
//
// # When implloop dies
//
// A group must not outlive the implloop that started it (kill -9, a crash):
// an orphaned agent would go on editing the tree beside the resume's agent
// for the same task. Two mechanisms see to it, and the run's lock is the
// net under both (loop.Lock: the group inherits the lock's descriptor, so
// the lock lives while any process of it does):
//
//   - [Attr] sets a parent-death signal (Linux): the kernel KILLs the
//     leader when the thread that started it exits. Go runs a child's
//     start on the calling goroutine's thread but may end that thread
//     later, so the caller locks its goroutine to the thread
//     (runtime.LockOSThread) from Start until the child is reaped.
//   - [Watch] puts a watchdog into the group (every platform): a shell
//     that reads a pipe only implloop writes and KILLs its whole group
//     when the pipe closes without "ok", which is what implloop's death
//     looks like. The parent-death signal reaches the leader alone; the
//     watchdog reaches what the leader started in its group.
package procgroup

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Terminate sends TERM to the group pgid, waits up to grace for exited to
// close (the leader has exited), then sends KILL to the group and waits for
// exited.
func Terminate(pgid int, exited <-chan struct{}, grace time.Duration) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
	}
	Kill(pgid)
	<-exited
}

// Kill sends KILL to every process left in the group pgid.
func Kill(pgid int) {
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// watchdog is the group's watchdog: "ok" on stdin means implloop let the
// group go itself; end of input without it means implloop died. It ignores
// the TERM that Terminate sends the group, so that it stays on guard
// through the grace period (the KILL after it takes it too).
const watchdog = `trap '' TERM INT HUP; IFS= read -r x; [ "$x" = ok ] || kill -s KILL 0`

// Watch puts a watchdog into the group pgid that KILLs the group if this
// process dies before stop is called (see the package doc). As a member,
// it also keeps the group id from being reused while implloop may still
// signal it. Call stop once the group's work is over and before the leader
// is reaped; a KILL of the group (Kill, Terminate) takes the watchdog too,
// and stop then only reaps it.
func Watch(pgid int) (stop func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	c := exec.Command("/bin/sh", "-c", watchdog)
	c.Stdin = r
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err = c.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	return func() {
		// EPIPE when the group's KILL got it first: it is dead either way.
		_, _ = w.Write([]byte("ok\n"))
		w.Close()
		_ = c.Wait()
	}, nil
}
