package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// cli is an external agent: the exec backend and every preset.
type cli struct {
	name  string
	bin   string // executable: a name looked up in PATH, or a path
	hint  string // what to do when bin is missing
	args  func(model string) []string
	grace time.Duration
	err   error // a configuration error, reported by Check and Run
}

// newExec is the generic backend: --agent-cmd split into an argv.
func newExec(opts Options) (Agent, error) {
	a := &cli{name: "exec", grace: opts.Grace}
	argv, err := SplitCommand(opts.Command)
	switch {
	case strings.TrimSpace(opts.Command) == "":
		a.err = &CheckError{Agent: "exec", Msg: "no command", Hint: "pass the agent's command line with --agent-cmd, or pick a preset with --agent"}
	case err != nil:
		a.err = &CheckError{Agent: "exec", Msg: "--agent-cmd: " + err.Error(), Hint: "the command is split like shell words but run without a shell"}
	default:
		a.bin = argv[0]
		rest := argv[1:]
		a.args = func(string) []string { return rest }
		a.hint = "check --agent-cmd"
	}
	return a, nil
}

func (a *cli) Name() string { return a.name }

func (a *cli) Check() error {
	if a.err != nil {
		return a.err
	}
	if _, err := exec.LookPath(a.bin); err != nil {
		msg := fmt.Sprintf("executable %q not found", a.bin)
		if errors.Is(err, exec.ErrNotFound) && !strings.Contains(a.bin, "/") {
			msg += " in $PATH"
		} else {
			msg = fmt.Sprintf("%q: %v", a.bin, unwrapExec(err))
		}
		return &CheckError{Agent: a.name, Msg: msg, Hint: a.hint}
	}
	return nil
}

func unwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

func (a *cli) argv(model string) []string {
	return append([]string{a.bin}, a.args(model)...)
}

func (a *cli) Run(ctx context.Context, req Request) (Result, error) {
	if a.err != nil {
		return Result{}, a.err
	}
	return runProcess(ctx, a.name, a.argv(req.Model), req, a.grace)
}

// Version runs `BIN --version` (presets only; an exec command's flags are
// unknown) and returns its first line.
func (a *cli) Version(ctx context.Context) (string, error) {
	if a.err != nil {
		return "", a.err
	}
	if a.name == "exec" {
		return "", fmt.Errorf("agent exec: version unknown")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	_, err := runProcess(ctx, a.name, []string{a.bin, "--version"}, Request{Stdout: &out, Timeout: 30 * time.Second}, a.grace)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	return strings.TrimSpace(line), nil
}

// preset is a known agent CLI: its executable, the npm package it comes
// from and how its argv is built. Each preset lives in its own file.
type preset struct {
	name string
	bin  string
	pkg  string // npm package
	args func(model string) []string
}

func presets() []preset {
	return []preset{claudePreset(), codexPreset(), geminiPreset(), opencodePreset()}
}

func newPreset(p preset, opts Options) Agent {
	bin := p.bin
	if opts.Binary != "" {
		bin = opts.Binary
	}
	return &cli{
		name:  p.name,
		bin:   bin,
		hint:  fmt.Sprintf("install it with `npm install -g %s`, or run another agent with --agent-cmd", p.pkg),
		args:  p.args,
		grace: opts.Grace,
	}
}

// withModel appends flag and model when model is set.
func withModel(args []string, flag, model string) []string {
	if model == "" {
		return args
	}
	return append(args, flag, model)
}
