package procgroup

import (
	"runtime"
	"syscall"
)

// Background lowers the priority (nice 10) of the calling goroutine and
// of every process it starts from then on: work done beside a task, which
// must not take the cores from what a task waits for (other workers on
// the same machine, the worker's own next step). Linux keeps a priority
// per thread, and a child process takes its starting thread's: the
// goroutine is locked to its thread, and must end locked (never call
// runtime.UnlockOSThread), so that the thread ends with it. Elsewhere it
// does nothing.
func Background() {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	// The raw getpriority returns 20 - nice; never raise a priority.
	if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil && 20-p >= backgroundNice {
		return
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, backgroundNice)
}

// backgroundNice is Background's priority: below the default (0), above
// the least (19).
const backgroundNice = 10
