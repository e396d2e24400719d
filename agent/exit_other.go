//go:build !linux

package agent

import "os/exec"

// watchExit returns a channel closed when cmd's process has exited, and
// the function that returns its wait status. Without waitid(WNOWAIT) the
// process is reaped as soon as it exits; its group lives on while members
// do, and the window for the group id to be reused before it is signalled
// is the few microseconds between the two.
func watchExit(cmd *exec.Cmd) (<-chan struct{}, func() error) {
	exited := make(chan struct{})
	var err error
	go func() {
		err = cmd.Wait()
		close(exited)
	}()
	return exited, func() error { <-exited; return err }
}
