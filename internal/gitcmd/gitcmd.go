// Package gitcmd runs the git binary: the one place implloop starts a git
// process. Callers give the directory, extra environment and arguments;
// gitcmd finds git on PATH (ErrNotInstalled when it is not there), never
// lets git take an optional lock (GIT_OPTIONAL_LOCKS=0: a status must not
// refresh an index an agent's own git may be waiting for), never lets
// replace refs stand in for objects (GIT_NO_REPLACE_OBJECTS=1: a `git
// replace` made by an agent, or by whoever pushed, must not change what a
// boundary commit holds when it is restored, replayed, shown or blamed,
// nor what a pulled record says), makes git speak English (LC_ALL=C:
// implloop reads git's messages, such as a lock file that exists, which
// a user's LANGUAGE=de would translate), and returns a failure as an
// *Error that carries git's exit status and stderr. A cancelled context
// wins over the error git died of.
//
// What a command means is the caller's business (the boundary package's
// plumbing, the journal's state directory, a hook's path); this package
// only runs it.
package gitcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// ErrNotInstalled is returned when there is no git on PATH.
var ErrNotInstalled = errors.New("git is not installed (not found on PATH)")

// Error is a git command that failed: it exited non-zero or could not
// start.
type Error struct {
	Args []string // the arguments after "git"
	Dir  string
	// ExitCode is git's exit status, -1 when it did not exit.
	ExitCode int
	Stderr   string // trimmed
	Err      error
}

func (e *Error) Error() string {
	name := "git"
	if sub := subcommand(e.Args); sub != "" {
		name += " " + sub
	}
	if e.Dir != "" {
		name += " in " + e.Dir
	}
	if e.Stderr != "" {
		return fmt.Sprintf("%s: %v: %s", name, e.Err, e.Stderr)
	}
	return fmt.Sprintf("%s: %v", name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// subcommand is the git command args run: the first argument after the
// command-line configuration (-c key=value) given before it.
func subcommand(args []string) string {
	for len(args) >= 2 && args[0] == "-c" {
		args = args[2:]
	}
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// Options are where and how a command runs.
type Options struct {
	Dir string
	// Env is added to the environment (a later entry wins over an earlier
	// one of the same name).
	Env   []string
	Stdin io.Reader
	// Stdout, when set, receives the output instead of Run's return value.
	Stdout io.Writer
}

// waitDelay bounds the wait for git's output once git ended or was
// killed (exec.Cmd.WaitDelay).
const waitDelay = 2 * time.Second

// Path finds git on PATH.
func Path() (string, error) {
	p, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	return p, nil
}

// Environ is the environment every git runs in: the process's, with
// no optional locks, no replace refs and git's messages untranslated
// (see the package comment).
func Environ() []string {
	return append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1", "LC_ALL=C")
}

// Run runs git with args and returns what it wrote to stdout (unless
// o.Stdout took it) and to stderr.
func Run(ctx context.Context, o Options, args ...string) (stdout, stderr []byte, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = o.Dir
	cmd.Env = append(Environ(), o.Env...)
	cmd.Stdin = o.Stdin
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	if o.Stdout != nil {
		cmd.Stdout = o.Stdout
	}
	cmd.Stderr = &errb
	// A git cut off by its context is asked to end (SIGTERM), not
	// killed: git then removes the lock files it holds (a ref's, the
	// index's) as it ends; a git killed in a ref update leaves its lock,
	// which refuses every later update of that ref in the repository.
	// One that does not end within waitDelay is killed. Once git ended,
	// its wait does not wait long for a program it started (a signing
	// program, a hook) that holds its output open.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = waitDelay
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() && ctx.Err() == nil {
		err = nil // git did its job; something it left running holds its output
	}
	if err != nil {
		if ctx.Err() != nil {
			return out.Bytes(), errb.Bytes(), ctx.Err() // killed because the command was cancelled
		}
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return out.Bytes(), errb.Bytes(), &Error{Args: args, Dir: o.Dir, ExitCode: code, Stderr: strings.TrimSpace(errb.String()), Err: err}
	}
	return out.Bytes(), errb.Bytes(), nil
}

// Output runs git with args in dir and returns its stdout without the
// trailing newline.
func Output(ctx context.Context, dir string, args ...string) (string, error) {
	out, _, err := Run(ctx, Options{Dir: dir}, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// ExitCode is the exit status of a failed git (an *Error in err's chain),
// -1 when there is none.
func ExitCode(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// IsObjectID reports whether s is a full object id as git prints it:
// lowercase hex of SHA-1 (40) or SHA-256 (64) length.
func IsObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// QuotePath quotes a path for the input of git's --stdin-paths when it
// needs it: a newline would end the path, and a leading quote would start
// a quoted one (C-style quoting, as git writes such paths).
func QuotePath(p string) string {
	need := strings.HasPrefix(p, `"`)
	for i := 0; i < len(p) && !need; i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' || c == '"' {
			need = true
		}
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
