package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script writes an executable /bin/sh script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func newExecAgent(t *testing.T, cmd string, grace time.Duration) Agent {
	t.Helper()
	a, err := New("exec", Options{Command: cmd, Grace: grace})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	return a
}

// alive reports whether pid is a live process (a zombie counts as dead).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: trust kill -0
	}
	// pid (comm) STATE ...; comm may hold spaces, so look after the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func waitForFile(t *testing.T, p string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(p); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
	return ""
}

func pidFrom(t *testing.T, p string) int {
	t.Helper()
	pid, err := strconv.Atoi(waitForFile(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// eventuallyDead waits briefly for pid to be gone (an orphan is reaped by
// init asynchronously), then fails.
func eventuallyDead(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL) // don't leave it behind
			t.Fatalf("%s (pid %d) survived", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExecAgent(t *testing.T) {
	dir := t.TempDir()
	agentPath := script(t, dir, "my agent", `
echo "args:$#:$1:$2"
echo "task:$IMPLLOOP_TASK_ID extra:$EXTRA"
wc -c | tr -d ' '
pwd -P
echo oops >&2
exit 3
`)
	repo := t.TempDir()
	a := newExecAgent(t, QuoteCommand([]string{agentPath, "two words", "it's"}), time.Second)
	var out, errOut bytes.Buffer
	res, err := a.Run(context.Background(), Request{
		Prompt: []byte("12345"), Dir: repo, Stdout: &out, Stderr: &errOut,
		Env: map[string]string{"IMPLLOOP_TASK_ID": "7", "EXTRA": "x y"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "args:2:two words:it's\ntask:7 extra:x y\n5\n" + evalSymlinks(t, repo) + "\n"
	if out.String() != want || errOut.String() != "oops\n" {
		t.Errorf("stdout %q stderr %q, want %q", out.String(), errOut.String(), want)
	}
	if res.ExitCode != 3 || res.TimedOut {
		t.Errorf("result %+v: want exit 3 reported, not an error", res)
	}
	if a.Name() != "exec" {
		t.Errorf("Name() = %q", a.Name())
	}
}

// An agent that never reads its stdin, given a prompt larger than a pipe
// buffer, still completes.
func TestExecAgentIgnoresStdin(t *testing.T) {
	a := newExecAgent(t, "true", time.Second)
	res, err := a.Run(context.Background(), Request{Prompt: bytes.Repeat([]byte("p"), 1<<20), Dir: t.TempDir()})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	for _, tc := range []struct{ name, leader string }{
		{"leader obeys TERM", ""},
		{"leader ignores TERM", `trap '' TERM`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			childPid := filepath.Join(dir, "child.pid")
			agentPath := script(t, dir, "agent", tc.leader+`
sh -c 'trap "" TERM; echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; while :; do sleep 1; done' child '`+childPid+`' &
echo $$ > '`+dir+`/leader.pid.tmp'; mv '`+dir+`/leader.pid.tmp' '`+dir+`/leader.pid'
echo '{"type":"result","result":"partial","usage":{"output_tokens":9}}'
while :; do sleep 1; done
`)
			a := newExecAgent(t, QuoteCommand([]string{agentPath}), 300*time.Millisecond)
			start := time.Now()
			res, err := a.Run(context.Background(), Request{Dir: dir, Timeout: 700 * time.Millisecond})
			took := time.Since(start)
			if !errors.Is(err, ErrTimedOut) || !res.TimedOut {
				t.Fatalf("err = %v, result %+v: want a timeout", err, res)
			}
			if took > 5*time.Second {
				t.Errorf("Run took %s", took)
			}
			if res.OutputTokens != 9 || res.Text != "partial" {
				t.Errorf("output before the kill was not parsed: %+v", res)
			}
			eventuallyDead(t, "leader", pidFrom(t, filepath.Join(dir, "leader.pid")))
			eventuallyDead(t, "child that ignores TERM", pidFrom(t, childPid))
		})
	}
}

func TestCancelKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	childPid := filepath.Join(dir, "child.pid")
	agentPath := script(t, dir, "agent", `
sh -c 'trap "" TERM INT; echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; while :; do sleep 1; done' child '`+childPid+`' &
while :; do sleep 1; done
`)
	a := newExecAgent(t, QuoteCommand([]string{agentPath}), 200*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitForFile(t, childPid)
		cancel()
	}()
	_, err := a.Run(ctx, Request{Dir: dir})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	eventuallyDead(t, "child", pidFrom(t, childPid))
}

// An agent that exits but leaves a child holding its stdout: Run returns
// without waiting for the child, and the child is killed with the group.
func TestLeftoverChildDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	childPid := filepath.Join(dir, "child.pid")
	agentPath := script(t, dir, "agent", `
sh -c 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 300' child '`+childPid+`' &
while [ ! -s '`+childPid+`' ]; do sleep 0.01; done
echo '{"type":"result","result":"done"}'
exit 0
`)
	a := newExecAgent(t, QuoteCommand([]string{agentPath}), 3*time.Second)
	start := time.Now()
	res, err := a.Run(context.Background(), Request{Dir: dir})
	if err != nil || res.Text != "done" || res.ExitCode != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Run waited %s for a leftover child", took)
	}
	eventuallyDead(t, "leftover child", pidFrom(t, childPid))
}

// A grandchild that escaped the group (setsid) and holds stdout open:
// Run still returns, after the grace bound.
func TestEscapedGrandchildHoldingPipe(t *testing.T) {
	dir := t.TempDir()
	escPid := filepath.Join(dir, "esc.pid")
	agentPath := script(t, dir, "agent", `
setsid sh -c 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 300' esc '`+escPid+`' &
while [ ! -s '`+escPid+`' ]; do sleep 0.01; done
exit 0
`)
	a := newExecAgent(t, QuoteCommand([]string{agentPath}), 300*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), Request{Dir: dir})
		done <- err
	}()
	defer func() {
		// We started it, we end it: by its pid.
		if b, err := os.ReadFile(escPid); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run hung on a pipe held by an escaped grandchild")
	}
}

// 50 MB of output streams through without being held: the allocations of
// the whole call stay far below the output's size, and the result record
// at the end is still found.
func TestLargeOutputIsStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("50 MB of output")
	}
	dir := t.TempDir()
	agentPath := script(t, dir, "agent", `
yes 'progress: still working on it, nothing to see here' | head -c 31457280
head -c 20971520 /dev/zero | tr '\0' 'x'
echo
echo '{"type":"result","result":"big","total_cost_usd":1.5,"usage":{"input_tokens":100,"output_tokens":200}}'
`)
	a := newExecAgent(t, QuoteCommand([]string{agentPath}), time.Second)
	counter := &countingWriter{}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := a.Run(context.Background(), Request{Dir: dir, Stdout: counter, Stderr: io.Discard})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if counter.n < 50<<20 {
		t.Fatalf("only %d bytes streamed", counter.n)
	}
	if res.Text != "big" || res.OutputTokens != 200 || res.CostUSD != 1.5 {
		t.Fatalf("result %+v", res)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MB streamed, %d MB allocated", counter.n>>20, alloc>>20)
	if alloc > 24<<20 {
		t.Errorf("allocated %d MB for %d MB of output", alloc>>20, counter.n>>20)
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// A failing blob writer does not block the agent on a full pipe, and the
// failure is reported.
func TestFailingWriter(t *testing.T) {
	a := newExecAgent(t, `sh -c 'head -c 1000000 /dev/zero'`, time.Second)
	_, err := a.Run(context.Background(), Request{Dir: t.TempDir(), Stdout: failWriter{}})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
