package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killRun SIGKILLs the implloop child (only it: what happens to its agent
// is the question) and returns the run's id.
func killRun(t *testing.T, repo string, child *exec.Cmd) string {
	t.Helper()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	runs, err := openJournal(t, repo).ListRuns()
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	return runs[0].ID
}

// firstCallAgent is a fake agent (fakeAgent) whose first call runs first,
// says it runs as startAgentChild expects (agent.pid, marker) and runs
// then; every call, the first included, ends with rest.
func firstCallAgent(t *testing.T, first, then, rest string) (path, logDir string) {
	return fakeAgent(t, `
if [ ! -f "$LOG/marker" ]; then
	`+first+`
	echo $$ > "$LOG/agent.pid"
	touch "$LOG/marker"
	`+then+`
	:
fi
`+rest)
}

// waitGone waits up to d for every process of group pgid to be gone (a
// zombie counts as gone: it does no work and holds no files).
func waitGone(t *testing.T, pgid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent group %d still has processes %v %s after implloop died", pgid, left, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the live processes of group pgid, from /proc.
func groupMembers(pgid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if err != nil || i < 0 {
			continue
		}
		// After the command name: state, ppid, pgrp.
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestKill9KillsAgent is issue 13's orphaned agent: implloop is SIGKILLed
// while its agent sleeps 3 s before appending a line to b.txt, and a resume
// starts at once. The agent's whole process group (the shell and its
// sleep) dies with implloop, so b.txt gets the line once, from the resume.
func TestKill9KillsAgent(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, logDir := firstCallAgent(t, "", "", `
sleep 3
echo line >> b.txt`)
	s := settingsFor(agentPath)
	child, _, agentPID := startAgentChild(t, Options{Settings: s, RepoRoot: repo}, logDir)
	runID := killRun(t, repo, child)
	waitGone(t, agentPID, 2*time.Second)

	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: runID})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	checkJournal(t, repo)
	if out.Verdict != "DONE" {
		t.Errorf("resume: %s, want DONE", out.Verdict)
	}
	// The killed agent would have written by now (it started first).
	time.Sleep(200 * time.Millisecond)
	if got := readFile(t, filepath.Join(repo, "b.txt")); got != "line\n" {
		t.Errorf("b.txt = %q, want the line once", got)
	}
}

// TestResumeRefusedWhileAgentRuns: a process the agent started outside its
// group (setsid) survives implloop's kill -9, as the whole agent does where
// nothing kills it. It holds the run's lock, so a resume refuses, naming
// the run and the pid, until it is gone.
func TestResumeRefusedWhileAgentRuns(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, logDir := firstCallAgent(t, `
	setsid sleep 60 &
	echo $! > "$LOG/escaped.pid"`, "sleep 60", "echo line >> b.txt")
	s := settingsFor(agentPath)
	child, _, _ := startAgentChild(t, Options{Settings: s, RepoRoot: repo}, logDir)
	escaped := readPID(t, filepath.Join(logDir, "escaped.pid"))
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	runID := killRun(t, repo, child)

	_, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: runID})
	var running *ChildRunningError
	if !errors.As(err, &running) {
		t.Fatalf("resume beside a live agent: %v, want ChildRunningError", err)
	}
	want := fmt.Sprintf("run %s's agent (pid %d) is still running; wait for it or kill it", runID, escaped)
	if err.Error() != want {
		t.Errorf("error\n %q\nwant\n %q", err, want)
	}

	_ = syscall.Kill(escaped, syscall.SIGKILL)
	for alive(escaped) {
		time.Sleep(20 * time.Millisecond)
	}
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: runID})
	if err != nil {
		t.Fatalf("resume once it is gone: %v", err)
	}
	checkJournal(t, repo)
	if out.Verdict != "DONE" || strings.TrimSpace(readFile(t, filepath.Join(repo, "b.txt"))) != "line" {
		t.Errorf("resume: %s, b.txt %q", out.Verdict, readFile(t, filepath.Join(repo, "b.txt")))
	}
}
