package procgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// subreaper counts the holders of Subreaper in this process: the child
// subreaper attribute is the process's (the kernel's), so who holds it is
// too. It is set while one holds it.
var subreaper struct {
	sync.Mutex
	n int
}

// Subreaper makes this process the child subreaper of everything it
// starts (Linux PR_SET_CHILD_SUBREAPER) until release is called: a
// process whose parent dies meanwhile is reparented to it, not to init,
// so what an agent forks and leaves behind (a daemon, a Popen child that
// closed the lock's descriptor and left its group) stays among this
// process's descendants, where [Sweep] finds it. A run holds it while it
// runs; held by several at once (runs of one test binary), it is given up
// with the last, so that a process that only hosts runs now and then (a
// test binary, an editor's plugin) is not the reaper of what it starts
// otherwise, whose zombies it would never reap. An error means the
// attribute could not be set; release is to be called either way.
func Subreaper() (release func(), err error) {
	subreaper.Lock()
	defer subreaper.Unlock()
	if subreaper.n == 0 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return func() {}, fmt.Errorf("child subreaper: %w", err)
		}
	}
	subreaper.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			subreaper.Lock()
			defer subreaper.Unlock()
			if subreaper.n--; subreaper.n == 0 {
				_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
				reapSessionLeaders()
			}
		})
	}, nil
}

// reapSessionLeaders reaps this process's zombie children that lead a
// session of their own: implloop starts none (no Setsid anywhere), so
// each is an orphan reparented here (a setsid daemon that exited by
// itself), which no exec.Cmd waits for.
func reapSessionLeaders() {
	self := os.Getpid()
	mine, _ := unix.Getsid(self)
	for _, pid := range childrenOf(self) {
		state, sid := stateAndSession(pid)
		if state == 'Z' && sid == pid && sid != mine {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// childrenOf lists pid's children, from the kernel's per-thread lists.
func childrenOf(pid int) []int {
	var out []int
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, _ := os.ReadDir(dir) // names only: no stat of each thread
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(w); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// stateAndSession is process pid's state letter and session id, from
// /proc/<pid>/stat (0, 0 when it is gone).
func stateAndSession(pid int) (byte, int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	// After the command name: state, ppid, pgrp, session.
	f := strings.Fields(s[i+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return 0, 0
	}
	sid, _ := strconv.Atoi(f[3])
	return f[0][0], sid
}

// Sweep kills, among this process's descendants, every process whose
// environment holds each of env's entries ("KEY=VALUE": the protocol
// environment of one agent call or gate, unique to it), with everything
// below it, and reaps those that are this process's children (orphans
// reparented to it: see Subreaper). It returns their pids, sorted.
//
// A call's process group is killed when the call ends; Sweep is for what
// left the group (setsid, setpgid) and so outlives it. The environment
// tells one call's leftovers from another's that runs at the same time
// (--jobs), and from the processes implloop starts itself (git), which
// never carry a call's environment. A process that cleared its
// environment is found only while it is below one that did not.
//
// It repeats until a pass finds nothing, so that a process forked while
// the last pass killed is not missed. An empty env sweeps nothing.
func Sweep(env []string) []int {
	if len(env) == 0 {
		return nil
	}
	self := os.Getpid()
	seen := map[int]bool{}
	var killed []int
	for pass := 0; pass < 20; pass++ {
		below := belowFunc()
		var hit []int
		for _, pid := range below(self) {
			if !seen[pid] && environHas(pid, env) {
				hit = append(hit, pid)
			}
		}
		if len(hit) == 0 {
			break
		}
		var doomed []int
		for _, pid := range hit {
			doomed = append(doomed, pid)
			doomed = append(doomed, below(pid)...)
		}
		for _, pid := range doomed {
			if !seen[pid] {
				seen[pid] = true
				killed = append(killed, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		// What was ours is an orphan (no exec.Cmd waits for it), and so
		// is what it started, once it died.
		reap(doomed)
	}
	reapSessionLeaders()
	sort.Ints(killed)
	return killed
}

// Carrying maps every live process (of those this user may inspect, this
// one and its ancestors left out) whose environment sets key to the value
// it sets: what a dead implloop run left running is found by the
// IMPLLOOP_RUN_ID every agent and gate it started carries, and so is what
// they started, unless it cleared its environment.
func Carrying(key string) map[int]string {
	mine := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !mine[pid]; pid = parentOf(pid) {
		mine[pid] = true
	}
	ents, _ := os.ReadDir("/proc")
	out := map[int]string{}
	for _, en := range ents {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || mine[pid] {
			continue
		}
		b, err := os.ReadFile("/proc/" + en.Name() + "/environ")
		if err != nil || len(b) == 0 {
			continue // another user's, a kernel thread's, or a zombie's
		}
		if v, ok := envValue(b, key); ok && Alive(pid) {
			out[pid] = v
		}
	}
	return out
}

// envValue is key's value in environ (NUL-separated KEY=VALUE entries).
func envValue(environ []byte, key string) (string, bool) {
	prefix := key + "="
	for len(environ) > 0 {
		i := bytes.IndexByte(environ, 0)
		if i < 0 {
			i = len(environ)
		}
		if kv := environ[:i]; len(kv) >= len(prefix) && string(kv[:len(prefix)]) == prefix {
			return string(kv[len(prefix):]), true
		}
		environ = environ[min(i+1, len(environ)):]
	}
	return "", false
}

// Reap reaps this process's children in the process group pgid, after
// the group was killed (Kill) and its leader and watchdog were reaped:
// members whose parent died before them were reparented here (see
// Subreaper), and no exec.Cmd waits for them. Without it each
// would stay a zombie until implloop exits.
func Reap(pgid int) {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return // nothing left in it, not even a zombie: the usual case
	}
	self := os.Getpid()
	tree := readTree()
	var ours []int
	for pid, ppid := range tree.parent {
		if ppid == self && tree.group[pid] == pgid && pid != pgid {
			ours = append(ours, pid)
		}
	}
	reap(ours)
}

// reap waits for each of pids, killed, to die, and reaps those that are,
// or become (their parent died too), this process's children; a second
// at most. Only orphans may be passed: an exec.Cmd's child reaped here
// would never be reaped by its Wait.
func reap(pids []int) {
	pending := append([]int(nil), pids...)
	for try := 0; len(pending) > 0 && try < 100; try++ {
		left := pending[:0]
		for _, pid := range pending {
			var ws unix.WaitStatus
			got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			switch {
			case got == pid:
			case err == nil || errors.Is(err, unix.EINTR):
				left = append(left, pid) // ours, not dead yet
			case parentOf(pid) > 0:
				// Its parent dies too: then it is ours (and it may have
				// become ours since Wait4 said it was not).
				left = append(left, pid)
			}
		}
		pending = left
		if len(pending) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// parentOf is process pid's parent, 0 when it is gone.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// belowFunc is how the descendants of a process are listed: from the
// kernel's lists of each thread's children, which reads only the subtree
// (the usual case), or, on a kernel without them, from the whole process
// table, read once.
func belowFunc() func(pid int) []int {
	self := strconv.Itoa(os.Getpid())
	if _, err := os.Stat("/proc/" + self + "/task/" + self + "/children"); err == nil {
		return belowByChildren // the main thread's list: the kernel keeps them
	}
	return readTree().below
}

// belowByChildren lists every descendant of pid from
// /proc/<pid>/task/<tid>/children.
func belowByChildren(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range childrenOf(p) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// procTree is the process table's parent links, read from /proc.
type procTree struct {
	parent   map[int]int
	group    map[int]int
	children map[int][]int
}

func readTree() procTree {
	t := procTree{parent: map[int]int{}, group: map[int]int{}, children: map[int][]int{}}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After the command name: state, ppid, pgrp.
		f := strings.Fields(s[i+1:])
		pid, err1 := strconv.Atoi(strings.Fields(s)[0])
		if len(f) < 3 || err1 != nil {
			continue
		}
		ppid, err2 := strconv.Atoi(f[1])
		pgrp, err3 := strconv.Atoi(f[2])
		if err2 != nil || err3 != nil {
			continue
		}
		t.parent[pid], t.group[pid] = ppid, pgrp
		t.children[ppid] = append(t.children[ppid], pid)
	}
	return t
}

// below lists every descendant of pid.
func (t procTree) below(pid int) []int {
	var out []int
	queue := append([]int(nil), t.children[pid]...)
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		queue = append(queue, t.children[p]...)
	}
	return out
}

// environHas reports whether process pid's environment (as it was
// started) holds every entry of env.
func environHas(pid int, env []string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(b) == 0 {
		return false
	}
	// Framed by NULs, an entry matches only whole.
	framed := make([]byte, 0, len(b)+2)
	framed = append(append(append(framed, 0), b...), 0)
	for _, kv := range env {
		if !bytes.Contains(framed, []byte("\x00"+kv+"\x00")) {
			return false
		}
	}
	return true
}
