//go:build !linux

package procgroup

import "syscall"

// Alive reports whether pid is a process (a zombie counts: there is no
// portable way to tell one apart).
func Alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH
}

// Holding lists the processes that have the file at path open; it is
// known on Linux only.
func Holding(path string) []int { return nil }

// FlockPID is who holds an flock on path; it is known on Linux only.
func FlockPID(path string) int { return 0 }
