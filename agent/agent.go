// Package agent runs one agent call: a backend picked by name (exec, claude,
// codex, gemini, opencode, builtin) gets the prompt on stdin in the repo root
// with the IMPLLOOP_* environment, and its output is parsed for accounting.
package agent

import (
	"context"
	"io"
	"time"
)

// Request is one agent call.
type Request struct {
	Prompt  []byte
	Dir     string            // working directory: the repo root
	Env     map[string]string // IMPLLOOP_* and friends, added to the process environment
	Model   string            // "" means the agent's default
	Timeout time.Duration     // 0 means none
	Stdout  io.Writer         // the agent's stdout is streamed here (a blob writer)
	Stderr  io.Writer         // and its stderr here
}

// Result is what a call reported. Zero figures mean "not reported".
type Result struct {
	ExitCode     int
	Text         string // the final result text, when the agent reports one
	IsError      bool
	InputTokens  int64
	OutputTokens int64
	CacheRead    int64
	CacheWrite   int64
	CostUSD      float64
	SessionID    string
	TimedOut     bool
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
