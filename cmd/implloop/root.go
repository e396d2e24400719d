package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// newRootCmd builds the command tree. Each command lives in its own file as
// newXCmd(io) *cobra.Command; register it in the list below.
func newRootCmd(io *ioStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "implloop",
		Short: "Drive a coding agent through a markdown plan, with a trustworthy resume",
		Long: `implloop drives a headless coding agent (Claude Code, Codex, Gemini,
OpenCode, or any command) through a markdown implementation plan, one task at
a time, inside a git repository. Every agent call is journaled under a
content-hash identity, so a resume re-runs exactly the tasks whose inputs
changed, and says why.

` + exitStatusHelp(),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("run 'implloop --help' for the list of commands", "unknown command %q for \"implloop\"", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		// The line `implloop version` prints; cobra adds --version for it.
		Version:       strings.TrimPrefix(buildVersion().line(), "implloop version "),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		hint := "run '" + c.CommandPath() + " --help' for usage"
		var bad *badValueError
		switch {
		case errors.As(err, &bad):
			hint = bad.hint
		case strings.Contains(err.Error(), "time: invalid duration"), strings.Contains(err.Error(), "time: missing unit"):
			hint = "a duration is a number and a unit: 90s, 30m, 6h, 1h30m"
		}
		return usagef(hint, "%s", err)
	})
	root.PersistentFlags().Var(&io.colorMode, "color", "when to color output and redraw status lines in place: auto (on a terminal, unless NO_COLOR is set; no redrawing where TERM=dumb), always, never")
	_ = root.RegisterFlagCompletionFunc("color", completeFixed("auto", "always", "never"))
	root.SetVersionTemplate("implloop version {{.Version}}\n")
	root.Flags().BoolP("version", "v", false, "print the version line ('implloop version' prints it too) and exit")

	for _, newCmd := range []func(*ioStreams) *cobra.Command{
		// Commands register here, one line each.
		newInitCmd,
		newRunCmd,
		newResumeCmd,
		newRunsCmd,
		newShowCmd,
		newExplainCmd,
		newRestoreCmd,
		newPushCmd,
		newPullCmd,
		newWorkCmd,
		newMatrixCmd,
		newBlameCmd,
		newPlanCmd,
		newLintCmd,
		newIDCmd,
		newStatusCmd,
		newDoctorCmd,
		newWatchCmd,
		newHookCmd,
		newCheckCmd,
		newVersionCmd,
	} {
		root.AddCommand(newCmd(io))
	}
	return root
}

// run executes the command line and returns the process exit code.
//
// SIGINT and SIGTERM cancel the context every command runs under; what
// fails after that failed because of it (a git killed, a cancelled
// context), so it exits 130, not 1. Once cancelled, the signals have their
// default effect again: a second Ctrl-C stops a command that does not look
// at its context (run and resume handle theirs themselves).
func run(args []string, io *ioStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	root := newRootCmd(io)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && isCobraUsageError(err) {
		err = usagef("run 'implloop --help' for usage", "%s", err)
	}
	if err != nil && ctx.Err() != nil {
		err = interrupted(err)
	}
	return exitCodeFor(err, io.ErrOut)
}
