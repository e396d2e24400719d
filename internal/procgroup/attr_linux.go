package procgroup

import "syscall"

// Attr is the SysProcAttr that starts a command as the leader of a new
// process group, whose id is then its pid, and KILLs it when the thread
// that started it exits (see the package doc: lock that thread).
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
