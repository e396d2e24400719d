package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/loop"
)

// run and resume read their settings flags the same way and refuse the
// same values with the same words (loop.Settings.Validate), before
// anything is opened: checked through the runF seam, with no repository.
func TestSettingsFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		code   int
		stderr string                     // with code != 0
		check  func(s loop.Settings) bool // with code 0
	}{
		{args: []string{"--param", "foo"}, code: exitUsage, stderr: `error: --param "foo": expected name=value` + "\n" + "implloop: hint: write --param as name=value"},
		{args: []string{"--param", "=v"}, code: exitUsage, stderr: `--param "=v": expected name=value`},
		{args: []string{"--agent", "claude", "--agent-cmd", "echo"}, code: exitUsage, stderr: "error: --agent claude and --agent-cmd both given\nimplloop: hint: --agent-cmd runs your command with the exec backend"},
		{args: []string{"--env", "A=secret"}, code: exitUsage, stderr: `--env "A=...": expected a variable name`},
		{args: []string{"--env", "1BAD"}, code: exitUsage, stderr: `--env "1BAD": not a variable name`},
		{args: []string{"--max-attempts", "0"}, code: exitUsage, stderr: "--max-attempts must be at least 1, got 0"},
		{args: []string{"--on-blocked", "maybe"}, code: exitUsage, stderr: `--on-blocked must be stop or continue, got "maybe"`},
		{args: []string{"--plan-context", "some"}, code: exitUsage, stderr: `--plan-context must be task or full`},
		{args: []string{"--timeout", "-1s"}, code: exitUsage, stderr: "--timeout must not be negative"},
		{args: []string{"--param", "a=1", "--param", "b=x=y", "--agent-cmd", "./a.sh"}, check: func(s loop.Settings) bool {
			return s.Params["a"] == "1" && s.Params["b"] == "x=y" && s.Agent == "exec" && s.AgentCmd == "./a.sh" &&
				strings.Join(s.Flags, ",") == "agent-cmd,param"
		}},
		{args: []string{"--sandbox-network", "off", "--agent-cmd", "./a.sh"}, code: exitUsage, stderr: `--sandbox-network must be on or none, got "off"`},
		{args: []string{"--sandbox", "--agent", "builtin"}, code: exitUsage, stderr: "--sandbox with --agent builtin"},
		{args: []string{"--sandbox", "--sandbox-allow", "cache", "--sandbox-allow", "/abs", "--sandbox-network", "none", "--agent-cmd", "./a.sh"}, check: func(s loop.Settings) bool {
			return s.Sandbox && len(s.SandboxAllow) == 2 && filepath.IsAbs(s.SandboxAllow[0]) && strings.HasSuffix(s.SandboxAllow[0], "/cache") &&
				s.SandboxAllow[1] == "/abs" && s.SandboxNetwork == "none" && strings.Join(s.Flags, ",") == "agent-cmd,sandbox,sandbox-allow,sandbox-network"
		}},
		{args: []string{"--agent", "exec", "--agent-cmd", "./a.sh", "--env", "TOKEN"}, check: func(s loop.Settings) bool {
			return s.AgentCmd == "./a.sh" && len(s.Env) == 1 && strings.Join(s.Flags, ",") == "agent,agent-cmd,env"
		}},
	}
	for _, tt := range tests {
		for _, command := range []string{"run", "resume"} {
			t.Run(command+" "+strings.Join(tt.args, " "), func(t *testing.T) {
				t.Parallel()
				var got *loop.Settings
				var errb bytes.Buffer
				io := &ioStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errb, workingDir: t.TempDir()}
				var cmd *cobra.Command
				args := tt.args
				if command == "run" {
					cmd = newRunCmdWith(io, func(_ context.Context, o *runOptions) error { got = &o.settings; return nil })
					args = append([]string{"plan.md"}, args...)
				} else {
					cmd = newResumeCmdWith(io, func(_ context.Context, o *resumeOptions) error { got = &o.given; return nil })
				}
				cmd.SilenceErrors, cmd.SilenceUsage = true, true
				cmd.SetArgs(args)
				code := exitCodeFor(cmd.Execute(), &errb)
				if code != tt.code {
					t.Fatalf("exit %d, want %d\n%s", code, tt.code, errb.String())
				}
				if tt.code != 0 {
					if !strings.Contains(errb.String(), tt.stderr) || !strings.Contains(errb.String(), "implloop: hint: ") {
						t.Errorf("stderr:\n%s\nwant %q and a hint", errb.String(), tt.stderr)
					}
					if got != nil {
						t.Error("the command ran with refused settings")
					}
					return
				}
				if got == nil || !tt.check(*got) {
					t.Errorf("settings %+v", got)
				}
			})
		}
	}
}
