// Package procgroup starts commands in their own process group and stops
// the whole group: the one TERM-then-KILL mechanism behind agent calls
// (agent) and verify gates (loop).
package procgroup

import (
	"syscall"
	"time"
)

// Attr is the SysProcAttr that starts a command as the leader of a new
// process group, whose id is then its pid.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

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
