//go:build linux

package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemonize is shell that starts body as a daemon: in a session of its
// own, its descriptors closed (the lock's too), once it has written its
// pid to file (a shell word, expanded by the caller's shell), which the
// caller's script waits for.
func daemonize(file, body string) string {
	return `setsid sh -c 'exec 3>&- </dev/null >/dev/null 2>&1; echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; ` + body + `' ` + file + ` &
while [ ! -s ` + file + ` ]; do sleep 0.01; done`
}

// TestLeftoversDieWhenTheCallEnds is issue 26's daemon an agent forks: it
// left the agent's process group and closed every descriptor, and wrote
// into the tree after the run said DONE. implloop is the child subreaper
// of what it starts and kills what a call (an agent's, a gate's, one made
// ahead with --jobs) left running when the call ends: nothing writes
// after the run.
func TestLeftoversDieWhenTheCallEnds(t *testing.T) {
	for _, c := range []struct {
		name, agent, gate string
		jobs              int
	}{
		{name: "agent", agent: "d"},
		{name: "gate", gate: "d"},
		{name: "jobs", agent: "d", jobs: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t, map[string]string{"plan.md": parPlan("1[P]", "2[P]")})
			pids := t.TempDir()
			// The daemons write once the test says so, after the run.
			later := filepath.Join(pids, "later")
			late := func(task string) string {
				return daemonize(`"`+filepath.Join(pids, task)+`"`,
					"while [ ! -e "+shellQuote(later)+" ]; do sleep 0.02; done; echo late > late-"+task+".txt")
			}
			body := `echo "$IMPLLOOP_TASK_ID" > "f$IMPLLOOP_TASK_ID.txt"`
			if c.agent != "" {
				body = late(`$IMPLLOOP_TASK_ID`) + "\n" + body
			}
			agentPath, _ := fakeAgent(t, body)
			s := settingsFor(agentPath)
			if c.gate != "" {
				s.Verify = late("gate-$IMPLLOOP_TASK_ID")
			}
			s.Jobs = max(c.jobs, 1)
			out := runIn(t, repo, s)
			if out.Verdict != "DONE" {
				t.Fatalf("verdict %s", out.Verdict)
			}
			es, _ := os.ReadDir(pids)
			if len(es) != 2 {
				t.Fatalf("%d daemons started, want 2", len(es))
			}
			writeFile(t, later, "")
			for _, e := range es {
				pid := readPID(t, filepath.Join(pids, e.Name()))
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
				if alive(pid) {
					t.Errorf("daemon %s (pid %d) outlived its call", e.Name(), pid)
				}
			}
			time.Sleep(300 * time.Millisecond) // when a live daemon would have written
			if m, _ := filepath.Glob(filepath.Join(repo, "late-*")); len(m) > 0 {
				t.Errorf("written after the run: %v", m)
			}
		})
	}
}

// TestResumeRefusedWhileLeftoverLives is issue 26's orphan that closes its
// descriptors: the agent starts a process that leaves its group and
// closes the lock's descriptor (as Python's Popen does), so after implloop's
// kill -9 the lock is free. A resume still refuses, naming the process,
// found by the run's IMPLLOOP_RUN_ID in its environment, and runs once it
// is gone.
func TestResumeRefusedWhileLeftoverLives(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	pidFile := filepath.Join(t.TempDir(), "leftover")
	agentPath, logDir := firstCallAgent(t, daemonize(shellQuote(pidFile), "exec sleep 60"), "sleep 60", "echo line >> b.txt")
	s := settingsFor(agentPath)
	child, _, _ := startAgentChild(t, Options{Settings: s, RepoRoot: repo}, logDir)
	pid := readPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	runID := killRun(t, repo, child)

	_, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: runID})
	var running *ChildRunningError
	if !errors.As(err, &running) {
		t.Fatalf("resume beside a leftover: %v, want ChildRunningError", err)
	}
	want := fmt.Sprintf("run %s left a process running (pid %d, sleep), started by its agent or gate; wait for it or kill it", runID, pid)
	if err.Error() != want {
		t.Errorf("error\n %q\nwant\n %q", err, want)
	}
	// A fresh run in the same tree refuses too: the tree is the same.
	s2 := s
	if _, err := Run(context.Background(), Options{Settings: s2, RepoRoot: repo}); !errors.As(err, &running) {
		t.Errorf("fresh run beside a leftover: %v, want ChildRunningError", err)
	}

	_ = syscall.Kill(pid, syscall.SIGKILL)
	for alive(pid) {
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
