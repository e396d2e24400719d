package agent

import (
	"os/exec"

	"golang.org/x/sys/unix"
)

// watchExit returns a channel closed when cmd's process has exited, and
// the function that reaps it. On Linux the exit is seen with waitid
// (WNOWAIT) without reaping, so the pid, which is also the process group
// id, stays the group's until wait is called: signalling the group in
// between can never reach a stranger that got the pid.
func watchExit(cmd *exec.Cmd) (<-chan struct{}, func() error) {
	exited := make(chan struct{})
	pid := cmd.Process.Pid
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				return
			}
		}
	}()
	return exited, cmd.Wait
}
