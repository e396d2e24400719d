package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// Every command's flags and arguments, through its runF seam: what the
// command line gives the options, and what it refuses before anything is
// opened. No repository is needed (run and resume: TestSettingsFlags).
func TestCommandFlags(t *testing.T) {
	t.Parallel()
	// capture builds a command whose runF records its options in *got.
	type capture func(io *ioStreams, got *any) *cobra.Command
	explain := func(io *ioStreams, got *any) *cobra.Command {
		return newExplainCmdWith(io, record[explainOptions](got))
	}
	restore := func(io *ioStreams, got *any) *cobra.Command {
		return newRestoreCmdWith(io, recordCtx[restoreOptions](got))
	}
	check := func(io *ioStreams, got *any) *cobra.Command { return newCheckCmdWith(io, record[checkOptions](got)) }
	watch := func(io *ioStreams, got *any) *cobra.Command { return newWatchCmdWith(io, recordCtx[watchOptions](got)) }
	blame := func(io *ioStreams, got *any) *cobra.Command { return newBlameCmdWith(io, recordCtx[blameOptions](got)) }
	runs := func(io *ioStreams, got *any) *cobra.Command { return newRunsCmdWith(io, record[runsOptions](got)) }
	hook := func(io *ioStreams, got *any) *cobra.Command {
		return newHookInstallCmdWith(io, record[hookOptions](got))
	}
	status := func(io *ioStreams, got *any) *cobra.Command {
		return newStatusCmdWith(io, recordCtx[statusOptions](got))
	}
	tests := []struct {
		name   string
		cmd    capture
		args   []string
		code   int
		stderr string         // with code != 0
		check  func(any) bool // with code 0
	}{
		{name: "explain", cmd: explain, check: func(g any) bool {
			o := g.(explainOptions)
			return o.run == "" && o.task == "" && !o.asJSON
		}},
		{name: "explain", cmd: explain, args: []string{"r-1", "--task", "10", "--json"}, check: func(g any) bool {
			o := g.(explainOptions)
			return o.run == "r-1" && o.task == "10" && o.asJSON
		}},
		{name: "explain", cmd: explain, args: []string{"r-1", "r-2"}, code: exitUsage, stderr: "at most one RUN"},

		{name: "restore", cmd: restore, check: func(g any) bool {
			o := g.(restoreOptions)
			return o.run == "" && o.task == "" && len(o.paths) == 0 && !o.force
		}},
		{name: "restore", cmd: restore, args: []string{"--run", "r-1", "--task", "3", "a.txt", "dir/b.txt", "--force"}, check: func(g any) bool {
			o := g.(restoreOptions)
			return o.run == "r-1" && o.task == "3" && strings.Join(o.paths, ",") == "a.txt,dir/b.txt" && o.force
		}},

		{name: "check", cmd: check, check: func(g any) bool { return len(g.(checkOptions).globs) == 0 }},
		{name: "check", cmd: check, args: []string{"--plans", "docs/*.md", "--plans", "specs/*/tasks.md"}, check: func(g any) bool {
			return strings.Join(g.(checkOptions).globs, ",") == "docs/*.md,specs/*/tasks.md"
		}},
		{name: "check", cmd: check, args: []string{"--plans", "[a"}, code: exitUsage, stderr: `--plans "[a": syntax error in pattern`},
		{name: "check", cmd: check, args: []string{"plan.md"}, code: exitUsage, stderr: "no arguments (use --plans GLOB)"},

		{name: "watch", cmd: watch, args: []string{"plan.md"}, check: func(g any) bool {
			o := g.(watchOptions)
			return o.plan == "plan.md" && o.run == "" && !o.resume && o.quiet == 2*time.Second && o.exitAfter == 0
		}},
		{name: "watch", cmd: watch, args: []string{"docs/plan.md", "--run", "r-1", "--resume", "--quiet", "5s", "--exit-after", "2", "--debounce", "10ms", "--give-up", "1m"}, check: func(g any) bool {
			o := g.(watchOptions)
			return o.plan == "docs/plan.md" && o.run == "r-1" && o.resume && o.quiet == 5*time.Second &&
				o.exitAfter == 2 && o.debounce == 10*time.Millisecond && o.giveUp == time.Minute
		}},
		{name: "watch", cmd: watch, args: []string{"plan.md", "--exit-after", "-1"}, code: exitUsage, stderr: "--exit-after must not be negative"},
		{name: "watch", cmd: watch, code: exitUsage, stderr: "a PLAN file"},

		{name: "blame", cmd: blame, args: []string{"src/a.go"}, check: func(g any) bool {
			o := g.(blameOptions)
			return o.path == "src/a.go" && o.run == "" && o.from == 0 && o.to == 0 && !o.asJSON
		}},
		{name: "blame", cmd: blame, args: []string{"src/a.go", "-L", "10,20", "--run", "r-1", "--json"}, check: func(g any) bool {
			o := g.(blameOptions)
			return o.path == "src/a.go" && o.run == "r-1" && o.from == 10 && o.to == 20 && o.asJSON
		}},
		{name: "blame", cmd: blame, args: []string{"src/a.go", "-L", "10,"}, check: func(g any) bool {
			o := g.(blameOptions)
			return o.from == 10 && o.to == 0
		}},
		{name: "blame", cmd: blame, args: []string{"src/a.go", "-L", "20,10"}, code: exitUsage, stderr: `-L "20,10": not a line range`},

		{name: "runs", cmd: runs, check: func(g any) bool { return !g.(runsOptions).asJSON }},
		{name: "runs", cmd: runs, args: []string{"--json"}, check: func(g any) bool { return g.(runsOptions).asJSON }},
		{name: "runs", cmd: runs, args: []string{"r-1"}, code: exitUsage, stderr: "no arguments"},

		{name: "hook install", cmd: hook, check: func(g any) bool { return !g.(hookOptions).force }},
		{name: "hook install", cmd: hook, args: []string{"--force"}, check: func(g any) bool { return g.(hookOptions).force }},
		{name: "hook install", cmd: hook, args: []string{"now"}, code: exitUsage, stderr: "no arguments"},

		{name: "status", cmd: status, args: []string{"--json"}, check: func(g any) bool { return g.(statusOptions).json }},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var got any
			var errb bytes.Buffer
			io := &ioStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errb, workingDir: t.TempDir()}
			cmd := tt.cmd(io, &got)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			cmd.SetArgs(tt.args)
			code := exitCodeFor(cmd.Execute(), &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errb.String())
			}
			if tt.code != 0 {
				if !strings.Contains(errb.String(), tt.stderr) {
					t.Errorf("stderr:\n%s\nwant %q", errb.String(), tt.stderr)
				}
				if got != nil {
					t.Error("the command ran with refused flags")
				}
				return
			}
			if got == nil || !tt.check(got) {
				t.Errorf("options %+v", got)
			}
		})
	}
}

// record is a runF that keeps a copy of the options it is given in *got.
func record[O any](got *any) func(*O) error {
	return func(o *O) error { *got = *o; return nil }
}

// recordCtx is record for a runF that takes a context.
func recordCtx[O any](got *any) func(context.Context, *O) error {
	return func(_ context.Context, o *O) error { *got = *o; return nil }
}

// `implloop id --env` holds names to the rule every preimage's env is held
// to (identity.ValidEnvName), as run and resume do: refused as usage, not
// left to fail when the preimage is built.
func TestIDEnvName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"1BAD", "NOT A NAME", "A-B", ""} {
		var errb bytes.Buffer
		io := &ioStreams{In: strings.NewReader("a prompt\n"), Out: &bytes.Buffer{}, ErrOut: &errb, workingDir: t.TempDir()}
		if code := run([]string{"id", "--project", io.workingDir, "--env", name}, io); code != exitUsage || !strings.Contains(errb.String(), "not a variable name") {
			t.Errorf("id --env %q: exit %d\n%s", name, code, errb.String())
		}
	}
}
