package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/implloop/implloop/internal/procgroup"
)

// runProcess runs argv as one agent call: in its own process group, prompt
// on stdin, output streamed to the request's writers and to an accounting
// parser. See the package doc for the kill and pipe rules.
func runProcess(ctx context.Context, name string, argv []string, req Request, grace time.Duration) (Result, error) {
	if len(argv) == 0 {
		return Result{}, fmt.Errorf("agent %s: empty command", name)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("agent %s: not started: %w", name, err)
	}
	// The parent-death signal is tied to the thread that starts the agent:
	// keep this goroutine on it until the agent is reaped (procgroup).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return Result{}, fmt.Errorf("agent %s: %w", name, cmd.Err)
	}
	cmd.Dir = req.Dir
	cmd.Env = mergeEnv(os.Environ(), req.Env)
	cmd.SysProcAttr = procgroup.Attr()
	if req.Hold != nil {
		cmd.ExtraFiles = []*os.File{req.Hold}
	}

	// Our own pipes rather than exec's: exec.Cmd.Wait would wait for a
	// grandchild that keeps stdout open, and we want to kill the group
	// between the agent's exit and the end of its output.
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return Result{}, fmt.Errorf("agent %s: stdin pipe: %w", name, err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return Result{}, fmt.Errorf("agent %s: stdout pipe: %w", name, err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return Result{}, fmt.Errorf("agent %s: stderr pipe: %w", name, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return Result{}, fmt.Errorf("agent %s: start %s: %w", name, argv[0], err)
	}
	defer closeAll()
	// The child has its copies; ours of its ends must go, or we never see EOF.
	inR.Close()
	outW.Close()
	errW.Close()
	pgid := cmd.Process.Pid
	// Without a watchdog (no /bin/sh) the parent-death signal and the
	// lock are still there.
	stopWatch := func() {}
	if stop, err := procgroup.Watch(pgid); err == nil {
		stopWatch = stop
	}
	if req.Started != nil {
		req.Started(pgid)
	}

	parser := newParser()
	stdout := &sink{dst: orDiscard(req.Stdout), tap: parser}
	stderr := &sink{dst: orDiscard(req.Stderr)}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(stdout, outR) }()
	go func() { defer copies.Done(); io.Copy(stderr, errR) }()
	go func() {
		// An agent that exits without reading gives EPIPE here: fine.
		inW.Write(req.Prompt)
		inW.Close()
	}()

	// exited closes when the leader has exited; on Linux it is not reaped
	// yet, so its pid (the group id) cannot be reused while we signal the
	// group (see watchExit).
	exited, wait := watchExit(cmd)

	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var killedBy error
	select {
	case <-exited:
	case <-timeout:
		killedBy = fmt.Errorf("%w after %s", ErrTimedOut, req.Timeout)
		procgroup.Terminate(pgid, exited, grace)
	case <-ctx.Done():
		killedBy = context.Cause(ctx)
		procgroup.Terminate(pgid, exited, grace)
	}
	// The agent is gone; whatever it left behind in its group goes too.
	procgroup.Kill(pgid)
	stopWatch()
	waitErr := wait()

	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(grace):
		// Someone outside the group holds a pipe open: stop reading.
		outR.Close()
		errR.Close()
		<-drained
	}
	inW.Close()

	res := parser.result()
	res.ExitCode = cmd.ProcessState.ExitCode()
	if killedBy != nil {
		res.TimedOut = errors.Is(killedBy, ErrTimedOut)
		return res, fmt.Errorf("agent %s: killed: %w", name, killedBy)
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, fmt.Errorf("agent %s: wait: %w", name, waitErr)
	}
	if err := stdout.err; err != nil {
		return res, fmt.Errorf("agent %s: writing its stdout: %w", name, err)
	}
	if err := stderr.err; err != nil {
		return res, fmt.Errorf("agent %s: writing its stderr: %w", name, err)
	}
	return res, nil
}

// sink copies to dst and tap. A failing dst is remembered and skipped, but
// the pipe keeps being drained so the agent never blocks on a full pipe.
type sink struct {
	dst io.Writer
	tap io.Writer
	err error
}

func (s *sink) Write(p []byte) (int, error) {
	if s.err == nil {
		if _, err := s.dst.Write(p); err != nil {
			s.err = err
		}
	}
	if s.tap != nil {
		s.tap.Write(p)
	}
	return len(p), nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// mergeEnv returns base with extra's variables set (extra wins), sorted by
// name for a deterministic environment.
func mergeEnv(base []string, extra map[string]string) []string {
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' && i > 0 {
				k = kv[:i]
				break
			}
		}
		if _, ok := extra[k]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}
