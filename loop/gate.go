package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/implloop/implloop/internal/procgroup"
)

// feedbackLimit is how much of a failed gate's output becomes the next
// attempt's gate feedback.
const feedbackLimit = 4096

// gateGrace is the TERM-to-KILL grace of a gate killed by its timeout or a
// cancelled run (an agent's is agent.DefaultGrace).
const gateGrace = 3 * time.Second

// GateResult is the outcome of one verify command.
type GateResult struct {
	Command  string
	Passed   bool
	ExitCode int
	Output   []byte // combined stdout and stderr (bounded tail, see runGate)
	Duration time.Duration
}

// Feedback is the last 4 KiB of the gate's output, cut at a line start when
// possible so the agent does not see half a line.
func (g GateResult) Feedback() string {
	return tail(g.Output, feedbackLimit)
}

func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	t := b[len(b)-n:]
	switch i := bytes.IndexByte(t, '\n'); {
	case b[len(b)-n-1] == '\n':
		// The window starts at a line start: keep that whole line.
	case i >= 0 && i < len(t)-1:
		t = t[i+1:]
	default:
		// One long line: cut it, but not inside a UTF-8 sequence (the
		// feedback is JSON text in the agent's context).
		for len(t) > 0 && !utf8.RuneStart(t[0]) {
			t = t[1:]
		}
	}
	return string(t)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// runGate runs cmd with sh -c in dir, with env added to the environment. The
// output is streamed to out (a blob) and its tail kept for feedback. A gate
// that outlives timeout is killed with its process group, and so is a gate
// whose implloop dies; lk's descriptor is inherited (Lock). wrap, when
// set, puts the gate inside the run's sandbox (--sandbox-gates); hold
// false leaves the lock out (a sandbox where nothing outlives the gate).
func runGate(ctx context.Context, lk *Lock, dir, cmd string, env map[string]string, timeout time.Duration, out io.Writer, wrap func([]string) ([]string, error), hold bool) (GateResult, error) {
	start := time.Now()
	// The parent-death signal is tied to the starting thread (procgroup).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	argv := []string{"sh", "-c", cmd}
	if wrap != nil {
		var err error
		if argv, err = wrap(argv); err != nil {
			return GateResult{}, fmt.Errorf("gate %q: %w", cmd, err)
		}
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		c.Env = append(c.Env, k+"="+env[k])
	}
	c.SysProcAttr = procgroup.Attr()
	if f := lk.File(); f != nil && hold {
		c.ExtraFiles = []*os.File{f}
	}
	tb := &tailBuffer{max: 64 * 1024}
	w := io.Writer(tb)
	if out != nil {
		w = io.MultiWriter(tb, out)
	}
	c.Stdout, c.Stderr = w, w
	c.WaitDelay = 5 * time.Second
	if err := c.Start(); err != nil {
		return GateResult{}, fmt.Errorf("gate %q: %w", cmd, err)
	}
	stopWatch := func() {}
	if stop, err := procgroup.Watch(c.Process.Pid); err == nil {
		stopWatch = stop
	}
	lk.SetChild("gate", c.Process.Pid)
	defer lk.SetChild("", 0)
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			procgroup.Terminate(c.Process.Pid, done, gateGrace)
		case <-done:
		}
	}()
	err := c.Wait()
	close(done)
	// Whatever the gate left behind in its group dies with it, and so
	// does what left the group (procgroup.Sweep).
	procgroup.Kill(c.Process.Pid)
	stopWatch()
	procgroup.Reap(c.Process.Pid)
	procgroup.Sweep(c.Env[len(c.Env)-len(env):])
	res := GateResult{Command: cmd, Output: tb.buf, Duration: time.Since(start)}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res.ExitCode = -1
			res.Output = append(res.Output, []byte(fmt.Sprintf("\nimplloop: gate killed after %s timeout\n", timeout))...)
			return res, nil
		}
		return res, ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.Passed = true
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		return res, fmt.Errorf("gate %q: %w", cmd, err)
	}
	return res, nil
}
