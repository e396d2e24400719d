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
	cmd, err := command(ctx, name, argv, req)
	if err != nil {
		return Result{}, err
	}
	// The parent-death signal is tied to the thread that starts the agent:
	// keep this goroutine on it until the agent is reaped (procgroup).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	p, err := openPipes()
	if err != nil {
		return Result{}, fmt.Errorf("agent %s: %w", name, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	if err := cmd.Start(); err != nil {
		p.closeAll()
		return Result{}, fmt.Errorf("agent %s: start %s: %w", name, cmd.Args[0], err)
	}
	defer p.closeAll()
	// The child has its copies; ours of its ends must go, or we never see EOF.
	p.inR.Close()
	p.outW.Close()
	p.errW.Close()
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

	s := p.stream(req)
	// exited closes when the leader has exited; on Linux it is not reaped
	// yet, so its pid (the group id) cannot be reused while we signal the
	// group (see watchExit).
	exited, wait := watchExit(cmd)
	killedBy := awaitExit(ctx, pgid, exited, req.Timeout, grace)
	// The agent is gone; whatever it left behind in its group goes too.
	procgroup.Kill(pgid)
	stopWatch()
	waitErr := wait()
	procgroup.Reap(pgid)
	// And whatever left its group: found by the call's environment among
	// implloop's descendants (it is their child subreaper, procgroup).
	procgroup.Sweep(envList(req.Env))
	p.drain(&s.copies, grace)
	return s.outcome(name, cmd.ProcessState.ExitCode(), req, killedBy, waitErr)
}

// command is the agent's exec.Cmd, not started: argv as the request's
// wrapper (the sandbox) rewrites it, in the request's directory and
// environment, set up to lead a process group of its own.
func command(ctx context.Context, name string, argv []string, req Request) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("agent %s: empty command", name)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("agent %s: not started: %w", name, err)
	}
	if req.Wrap != nil {
		wrapped, err := req.Wrap(argv)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		argv = wrapped
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("agent %s: %w", name, cmd.Err)
	}
	cmd.Dir = req.Dir
	cmd.Env = mergeEnv(os.Environ(), req.Env)
	cmd.SysProcAttr = procgroup.Attr()
	if req.Hold != nil {
		cmd.ExtraFiles = []*os.File{req.Hold}
	}
	return cmd, nil
}

// streams is one call's output in flight: stdout through the accounting
// parser, the end of stderr kept for the limit reading, both copied to the
// request's writers.
type streams struct {
	parser         *parser
	errTail        *tail
	stdout, stderr *sink
	copies         sync.WaitGroup
}

// stream starts copying the agent's stdout and stderr and writing its
// prompt to its stdin.
func (p *pipes) stream(req Request) *streams {
	s := &streams{parser: newParser(), errTail: &tail{max: 16 << 10}}
	s.parser.onTokens = req.OnTokens
	s.stdout = &sink{dst: orDiscard(req.Stdout), tap: s.parser}
	s.stderr = &sink{dst: orDiscard(req.Stderr), tap: s.errTail}
	s.copies.Add(2)
	go func() { defer s.copies.Done(); io.Copy(s.stdout, p.outR) }()
	go func() { defer s.copies.Done(); io.Copy(s.stderr, p.errR) }()
	go func() {
		// An agent that exits without reading gives EPIPE here: fine.
		p.inW.Write(req.Prompt)
		p.inW.Close()
	}()
	return s
}

// outcome is the call's Result once its output is drained, and the error
// that says why it did not end on its own (killed, not waited for, output
// not written).
func (s *streams) outcome(name string, exitCode int, req Request, killedBy, waitErr error) (Result, error) {
	res := s.parser.result()
	res.ExitCode = exitCode
	if killedBy != nil {
		res.TimedOut = errors.Is(killedBy, ErrTimedOut)
		return res, fmt.Errorf("agent %s: killed: %w", name, killedBy)
	}
	now := time.Now
	if req.Now != nil {
		now = req.Now
	}
	res.Limit = limitOf(name, res, s.parser.sig, s.errTail.buf, now())
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, fmt.Errorf("agent %s: wait: %w", name, waitErr)
	}
	if err := s.stdout.err; err != nil {
		return res, fmt.Errorf("agent %s: writing its stdout: %w", name, err)
	}
	if err := s.stderr.err; err != nil {
		return res, fmt.Errorf("agent %s: writing its stderr: %w", name, err)
	}
	return res, nil
}

// pipes are an agent's stdin, stdout and stderr: our own rather than
// exec's, since exec.Cmd.Wait would wait for a grandchild that keeps
// stdout open, and we want to kill the group between the agent's exit and
// the end of its output.
type pipes struct {
	inR, inW, outR, outW, errR, errW *os.File
}

// openPipes opens the three pipes, or none.
func openPipes() (*pipes, error) {
	p := &pipes{}
	var err error
	if p.inR, p.inW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return p, nil
}

// closeAll closes every end still open (closing one twice is harmless).
func (p *pipes) closeAll() {
	for _, f := range []*os.File{p.inR, p.inW, p.outR, p.outW, p.errR, p.errW} {
		if f != nil {
			f.Close()
		}
	}
}

// drain waits for the copies of stdout and stderr to end, at most grace
// once the group is gone: someone outside it may hold a pipe open, and
// then we stop reading. Stdin is closed after.
func (p *pipes) drain(copies *sync.WaitGroup, grace time.Duration) {
	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(grace):
		p.outR.Close()
		p.errR.Close()
		<-drained
	}
	p.inW.Close()
}

// awaitExit waits for the agent (group pgid) to exit, for at most timeout
// (0: no limit) and while ctx lasts; on either it terminates the group,
// with grace, and returns why (ErrTimedOut, or ctx's cause). nil: the
// agent exited by itself.
func awaitExit(ctx context.Context, pgid int, exited <-chan struct{}, timeout, grace time.Duration) error {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-exited:
		return nil
	case <-expired:
		procgroup.Terminate(pgid, exited, grace)
		return fmt.Errorf("%w after %s", ErrTimedOut, timeout)
	case <-ctx.Done():
		procgroup.Terminate(pgid, exited, grace)
		return context.Cause(ctx)
	}
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

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		p = p[len(p)-t.max:]
		t.buf = t.buf[:0]
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// envList is extra as KEY=VALUE entries, sorted.
func envList(extra map[string]string) []string {
	out := make([]string, 0, len(extra))
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
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
