package procgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Alive reports whether pid is a running process: a zombie (dead, not yet
// reaped by its parent) holds no files and does no work, so it is not.
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) == syscall.ESRCH {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// Holding lists the processes (of those this user may inspect) that have
// the file at path open while someone holds an flock on it, sorted: who
// keeps an inherited lock alive.
func Holding(path string) []int {
	want, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if st, ok := want.Sys().(*syscall.Stat_t); ok && !flocked(st.Ino) {
		return nil // nobody holds a lock on it: no need to look at every process
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	seen := map[int]bool{}
	var pids []int
	for _, fd := range fds {
		pid, err := strconv.Atoi(strings.Split(fd, "/")[2])
		if err != nil || seen[pid] {
			continue
		}
		if fi, err := os.Stat(fd); err == nil && os.SameFile(fi, want) {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// flocked reports whether /proc/locks lists an flock on inode ino (any
// device: a cheap filter before Holding's scan, which compares files).
func flocked(ino uint64) bool {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return true // cannot tell: scan
	}
	suffix := ":" + strconv.FormatUint(ino, 10)
	for _, line := range strings.Split(string(b), "\n") {
		// 1: FLOCK  ADVISORY  WRITE 7947 fe:00:9978027 0 EOF
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && strings.HasSuffix(f[5], suffix) {
			return true
		}
	}
	return false
}

// FlockPID is the pid /proc/locks names for an flock on the file (or
// directory) at path, 0 when none (or it cannot tell).
func FlockPID(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	dev := uint64(st.Dev)
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	suffix := ":" + strconv.FormatUint(st.Ino, 10)
	pid := 0
	for _, line := range strings.Split(string(b), "\n") {
		// 1: FLOCK  ADVISORY  WRITE 7947 fe:00:9978027 0 EOF
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		switch {
		case f[5] == want:
			pid, _ = strconv.Atoi(f[4])
			return pid
		case strings.HasSuffix(f[5], suffix) && pid == 0:
			// The inode on another device number (an overlay's): the
			// best guess, unless the exact one follows.
			pid, _ = strconv.Atoi(f[4])
		}
	}
	return pid
}
