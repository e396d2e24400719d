package procgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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
// the file at path open, sorted: who keeps an inherited lock alive.
func Holding(path string) []int {
	want, err := os.Stat(path)
	if err != nil {
		return nil
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
