//go:build !linux

package procgroup

import "syscall"

// Attr is the SysProcAttr that starts a command as the leader of a new
// process group, whose id is then its pid. There is no parent-death signal
// here: the watchdog (Watch) and the run's lock stand in for it.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
