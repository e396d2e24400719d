package procgroup

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a process that starts a group (sleep 30
// with a child sleep), puts a watchdog in it, prints the group id and
// waits to be killed.
const helperEnv = "PROCGROUP_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		c := exec.Command("/bin/sh", "-c", "sleep 30 & sleep 30")
		// No parent-death signal: the watchdog alone is under test.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		if _, err := Watch(c.Process.Pid); err != nil {
			fmt.Println("watch:", err)
			os.Exit(1)
		}
		fmt.Println(c.Process.Pid)
		select {}
	}
	os.Exit(m.Run())
}

// TestWatchKillsGroupWhenParentDies: a kill -9 of the process that started
// a group takes the whole group with it, grandchild included.
func TestWatchKillsGroupWhenParentDies(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := exec.Command(exe, "-test.run=^$")
	h.Env = append(os.Environ(), helperEnv+"=1")
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	var pgid int
	if _, err := fmt.Fscan(bufio.NewReader(out), &pgid); err != nil {
		t.Fatalf("helper: %v", err)
	}
	t.Cleanup(func() { Kill(pgid) })
	if syscall.Kill(-pgid, 0) != nil {
		t.Fatalf("group %d is not there while its parent lives", pgid)
	}
	h.Process.Kill()
	h.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("group %d outlived its parent", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchStop: a stopped watchdog leaves its group alone.
func TestWatchStop(t *testing.T) {
	c := exec.Command("sleep", "30")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { Kill(c.Process.Pid); c.Wait() }()
	stop, err := Watch(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	time.Sleep(100 * time.Millisecond)
	if !Alive(c.Process.Pid) {
		t.Fatal("the group died when its watchdog was stopped")
	}
}
