package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/loop"
)

// restoreOptions are what `restore` was asked.
type restoreOptions struct {
	io    *ioStreams
	run   string // "" for the latest
	task  string
	paths []string // as typed: relative to the working directory
	force bool
}

func newRestoreCmd(io *ioStreams) *cobra.Command { return newRestoreCmdWith(io, restoreRun) }

// newRestoreCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newRestoreCmdWith(io *ioStreams, runF func(context.Context, *restoreOptions) error) *cobra.Command {
	o := &restoreOptions{io: io}
	cmd := &cobra.Command{
		Use:   "restore [--run ID] [--task ID] [PATH...] [--force]",
		Short: "Bring back content the discard guard saw a task throw away",
		Long: `Restore writes back, byte for byte, the content of every path the discard
guard saw lost in a run (default: the latest run), from the run's boundary
commits in the git object store (refs/implloop/runs/<run>; the plan and
your ignored files from refs/implloop/kept/<run>, kept locally; a file in
a submodule from that submodule's own boundaries). Limit it to one task
with --task or to some paths by naming them.

A path whose current content is neither the lost content nor what it was
based on has been edited since; restore refuses to overwrite it unless
--force.

` + exitStatusHelp(),
		Example: `  # Everything task 3 of the latest run threw away
  implloop restore --task 3

  # One path, lost in a given run
  implloop restore --run r-20261130-054012-3f9a src/login.go

  # A path edited since it was lost: overwrite it with the lost content anyway
  implloop restore src/login.go --force`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths = args
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "the run (id or unique prefix; default: the latest)")
	cmd.Flags().StringVar(&o.task, "task", "", "only paths lost by this task")
	cmd.Flags().BoolVar(&o.force, "force", false, "overwrite paths edited since they were lost")
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunIDs(io))
	_ = cmd.RegisterFlagCompletionFunc("task", completeRunTasks(io, runFlag))
	return cmd
}

// restoreRun writes back what loop.LostContent finds lost.
func restoreRun(ctx context.Context, o *restoreOptions) error {
	root, j, run, err := openRunRoot(o.io, o.run)
	if err != nil {
		return err
	}
	defer j.Close()
	// PATHs are as the user typed them (relative to the working
	// directory); lost paths are relative to the repo root.
	var paths []string
	for _, a := range o.paths {
		paths = append(paths, journalPlanPath(root, o.io.workingDir, a))
	}
	lost, err := loop.LostContent(j, run.ID, o.task, paths)
	var notLost *loop.NotLostError
	if errors.As(err, &notLost) {
		return errorf("run 'implloop show "+run.ID+"' for the lost paths", "%s", err)
	}
	if err != nil {
		return err
	}
	if len(lost) == 0 {
		fmt.Fprintf(o.io.ErrOut, "implloop: run %s lost nothing; nothing to restore\n", run.ID)
		return nil
	}
	results, rerr := boundary.Restore(ctx, root, lost, o.force)
	for _, r := range results {
		line := fmt.Sprintf("%-9s %s", r.Action, r.Path)
		if r.Reason != "" {
			line += ": " + r.Reason
		}
		fmt.Fprintln(o.io.Out, line)
	}
	if rerr != nil {
		if errors.Is(rerr, boundary.ErrRefused) {
			return errorf("look at the path first; --force overwrites it with the lost content", "%s", rerr)
		}
		return rerr
	}
	return nil
}
