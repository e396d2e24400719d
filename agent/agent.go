// Package agent runs one agent call: a backend picked by name (exec, claude,
// codex, gemini, opencode, builtin) gets the prompt on stdin in the repo root
// with the IMPLLOOP_* environment, and its output is parsed for accounting.
//
// # Backends
//
// [New] picks a backend by name. "exec" runs the command line given with
// --agent-cmd, split by shell-word rules ([SplitCommand]) but run without a
// shell. "claude", "codex", "gemini" and "opencode" are presets: the same
// runner with an argv built for that CLI (docs/agents.md says which flags
// and why). "builtin" runs in-process and applies the file blocks of a
// fully specified task, for demos and tests with no agent installed.
//
// # Process handling
//
// An external agent runs in its own process group. The prompt goes to its
// stdin, which is then closed; its stdout and stderr are streamed to the
// request's writers while a bounded parser reads the accounting (output of
// any size is never held in memory). A timeout or a cancelled context sends
// TERM to the whole group and KILL after a grace period; when the agent
// exits, anything it left in its group is killed, and pipes held open by a
// stray grandchild are closed after a bound, so a call always returns.
// When implloop itself dies, the group dies with it (a parent-death signal
// and a watchdog, internal/procgroup), and what escaped the group still
// holds the run's lock (Request.Hold).
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/implloop/implloop/internal/words"
)

// Request is one agent call.
type Request struct {
	Prompt  []byte
	Dir     string            // working directory: the repo root
	Env     map[string]string // IMPLLOOP_* and friends, added to the process environment
	Model   string            // "" means the agent's default
	Timeout time.Duration     // 0 means none
	Stdout  io.Writer         // the agent's stdout is streamed here (a blob writer); nil discards
	Stderr  io.Writer         // and its stderr here; nil discards
	// Context is the unit's attached context JSON (unit.Unit.Context), the
	// same object the prompt carries. The builtin agent reads the task from
	// it; external agents get it through IMPLLOOP_CONTEXT_FILE instead.
	Context []byte
	// Hold is a file every process of an external agent inherits: the
	// run's lock (loop.Lock), which then lives while any of them does, so
	// that a resume cannot start beside an agent its dead implloop left
	// behind. nil: none.
	Hold *os.File
	// Started, when set, is called with an external agent's pid as soon
	// as it runs (the lock file names it for that resume's message).
	Started func(pid int)
	// OnTokens, when set, hears the tokens so far (input of every kind,
	// output) while the call runs, from an agent that streams them
	// (Claude Code's stream-json, opencode's steps). It is called from
	// another goroutine than Run's.
	OnTokens func(in, out int64)
	// Now is the clock a limit's reset time of day is read against
	// ("resets 3:08pm"); nil: time.Now.
	Now func() time.Time
	// Wrap, when set, puts an external agent's argv inside a sandbox
	// (package sandbox): the argv it returns is what runs. The builtin
	// agent has no process to wrap and ignores it.
	Wrap func(argv []string) ([]string, error)
}

// Result is what a call reported. Zero figures mean "not reported".
//
// Token figures follow one convention across backends, Anthropic's: the
// three input columns are disjoint. InputTokens are the input tokens
// neither read from nor written to a prompt cache, CacheRead the ones read
// from it, CacheWrite the ones written to it (so their sum is the whole
// prompt), and OutputTokens include reasoning tokens. A CLI that counts
// cached tokens inside its input figure (codex, Gemini CLI) is split
// accordingly; docs/agents.md gives each preset's rule.
type Result struct {
	ExitCode     int
	Text         string // the final result text, when the agent reports one
	IsError      bool
	Error        string `json:",omitempty"` // the error message the agent reported, if any
	InputTokens  int64
	OutputTokens int64
	CacheRead    int64
	CacheWrite   int64
	CostUSD      float64
	SessionID    string
	TimedOut     bool
	// Limit is set when the call ended on a usage limit, a rate limit or
	// an overload (limit.go): not a failure, a reason to call again later.
	Limit *Limit `json:",omitempty"`
}

// Agent is one backend.
type Agent interface {
	// Name is the backend's name as it enters the identity preimage.
	Name() string
	// Check reports a missing binary or bad configuration before any task starts.
	Check() error
	// Run makes one call. An error means the call could not be made or was
	// killed (timeout, cancellation); a non-zero exit is reported in Result.
	Run(ctx context.Context, req Request) (Result, error)
}

// Versioner is implemented by backends that can report their CLI's version
// (recorded in the journal, never hashed).
type Versioner interface {
	Version(ctx context.Context) (string, error)
}

// Options configure a backend.
type Options struct {
	// Command is the --agent-cmd command line; required by "exec", ignored
	// by the others.
	Command string
	// Binary, for a preset, is the executable to run instead of looking up
	// the preset's name in PATH.
	Binary string
	// Grace is how long a timed-out or cancelled agent gets between TERM
	// and KILL, and how long Run waits for output pipes after the agent
	// has exited. Zero means DefaultGrace.
	Grace time.Duration
}

// DefaultGrace is the TERM-to-KILL grace period when Options.Grace is zero.
const DefaultGrace = 5 * time.Second

// ErrTimedOut is wrapped by the error Run returns when the request's
// timeout killed the agent.
var ErrTimedOut = fmt.Errorf("agent timed out")

// CheckError is a backend that cannot run as configured: a missing binary,
// an empty or malformed --agent-cmd. Hint says what to do about it.
type CheckError struct {
	Agent string
	Msg   string
	Hint  string
}

func (e *CheckError) Error() string {
	if e.Hint == "" {
		return fmt.Sprintf("agent %s: %s", e.Agent, e.Msg)
	}
	return fmt.Sprintf("agent %s: %s (%s)", e.Agent, e.Msg, e.Hint)
}

// Names lists the backends New accepts, sorted.
func Names() []string {
	names := []string{"builtin", "exec"}
	for _, p := range presets() {
		names = append(names, p.name)
	}
	sort.Strings(names)
	return names
}

// New returns the backend called name.
func New(name string, opts Options) (Agent, error) {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	switch name {
	case "builtin":
		return builtin{}, nil
	case "exec":
		return newExec(opts)
	}
	for _, p := range presets() {
		if p.name == name {
			return newPreset(p, opts), nil
		}
	}
	return nil, errors.New(UnknownMessage(name))
}

// UnknownMessage says that name is no agent: the one it is likely a typo
// of, and the known names.
func UnknownMessage(name string) string {
	msg := fmt.Sprintf("unknown agent %q", name)
	if near := words.Nearest(name, Names()); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return msg + " (known: " + strings.Join(Names(), ", ") + ")"
}
