//go:build linux

package procgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sweepEnv makes the test binary run sweepHelper: the child subreaper is
// the process's, so it is tried in a process of its own.
const sweepEnv = "PROCGROUP_TEST_SWEEP"

func init() {
	if dir := os.Getenv(sweepEnv); dir != "" {
		os.Exit(sweepHelper(dir))
	}
}

// TestSweep: what two calls left running when their starters exited (in
// sessions of their own, descriptors closed) is reparented to the child
// subreaper; Sweep with one call's environment kills and reaps that
// call's process and what it started (a grandchild whose environment was
// cleared included), and leaves the other call's alone.
func TestSweep(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := exec.Command(exe, "-test.run=^$")
	c.Env = append(os.Environ(), sweepEnv+"="+dir)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "ok" {
		t.Error(got)
	}
}

// leftBehind starts sh with env that leaves a process of its own session
// running (sleep, below a shell that cleared its environment when name
// is "one") and exits; it returns that session's leader's pid.
func leftBehind(dir, name string, env ...string) (int, error) {
	pidFile := filepath.Join(dir, name)
	inner := "exec sleep 60"
	if name == "one" {
		inner = "env -i /bin/sh -c \"sleep 60 & wait\""
	}
	c := exec.Command("/bin/sh", "-c", `setsid sh -c 'exec </dev/null >/dev/null 2>&1; echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; `+inner+`' "$1" &
while [ ! -s "$1" ]; do sleep 0.01; done`, "sh", pidFile)
	c.Env = append(os.Environ(), env...)
	if err := c.Run(); err != nil {
		return 0, err
	}
	var pid int
	b, err := os.ReadFile(pidFile)
	if err == nil {
		_, err = fmt.Sscan(string(b), &pid)
	}
	return pid, err
}

// isSubreaper reports this process's PR_GET_CHILD_SUBREAPER.
func isSubreaper() bool {
	var v int32
	_ = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0)
	return v != 0
}

func sweepHelper(dir string) int {
	fail := func(f string, a ...any) int { fmt.Printf(f+"\n", a...); return 1 }
	release, err := Subreaper()
	if err != nil {
		return fail("%v", err)
	}
	defer func() {
		// Held twice, given up with the last.
		again, _ := Subreaper()
		release()
		if !isSubreaper() {
			fmt.Println("given up while still held")
		}
		again()
		if isSubreaper() {
			fmt.Println("still the child subreaper after the last release")
		}
	}()
	one, err := leftBehind(dir, "one", "CALL=one", "RUN=r")
	if err != nil {
		return fail("one: %v", err)
	}
	two, err := leftBehind(dir, "two", "CALL=two", "RUN=r")
	if err != nil {
		return fail("two: %v", err)
	}
	defer syscall.Kill(two, syscall.SIGKILL)
	for _, pid := range []int{one, two} {
		if p := parentOf(pid); p != os.Getpid() {
			return fail("pid %d's parent is %d, not the subreaper %d", pid, p, os.Getpid())
		}
	}
	// Its grandchild, below the shell that cleared its environment.
	time.Sleep(100 * time.Millisecond)
	below := readTree().below(one)
	if len(below) < 2 {
		return fail("below %d: %v, want the env -i shell and its sleep", one, below)
	}
	killed := Sweep([]string{"CALL=one", "RUN=r"})
	if len(killed) != 1+len(below) {
		return fail("killed %v, want %d and %v", killed, one, below)
	}
	for _, pid := range append([]int{one}, below...) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			return fail("pid %d is still there (alive: %v): not reaped", pid, Alive(pid))
		}
	}
	if !Alive(two) {
		return fail("the other call's process (pid %d) was killed", two)
	}
	if got := Carrying("CALL"); got[two] != "two" || len(got) != 1 {
		return fail("carrying CALL: %v, want only %d", got, two)
	}
	if Sweep(nil) != nil {
		return fail("an empty environment swept something")
	}
	fmt.Println("ok")
	return 0
}

func TestEnvValue(t *testing.T) {
	for _, c := range []struct {
		environ, key, want string
		ok                 bool
	}{
		{"A=1\x00IMPLLOOP_RUN_ID=r-1\x00B=2\x00", "IMPLLOOP_RUN_ID", "r-1", true},
		{"IMPLLOOP_RUN_ID=r-2", "IMPLLOOP_RUN_ID", "r-2", true},
		{"XIMPLLOOP_RUN_ID=r-3\x00", "IMPLLOOP_RUN_ID", "", false},
		{"IMPLLOOP_RUN_IDS=r-4\x00", "IMPLLOOP_RUN_ID", "", false},
		{"IMPLLOOP_RUN_ID=\x00", "IMPLLOOP_RUN_ID", "", true},
		{"", "IMPLLOOP_RUN_ID", "", false},
	} {
		if got, ok := envValue([]byte(c.environ), c.key); got != c.want || ok != c.ok {
			t.Errorf("envValue(%q) = %q, %v; want %q, %v", c.environ, got, ok, c.want, c.ok)
		}
	}
}
