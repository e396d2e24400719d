package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/loop"
)

// restoreOptions are what `restore` was asked.
type restoreOptions struct {
	io     *ioStreams
	run    string // "" for the latest
	task   string
	paths  []string // as typed: relative to the working directory
	force  bool
	dryRun bool
	asJSON bool
	// before: put the task's own changes back as they were before it,
	// instead of bringing back what it discarded.
	before bool
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

With --task N --before, restore undoes task N's own edits instead: every
path the task changed goes back to its content before the task (a file it
added is removed), from the boundary commit taken before it. BLOCKED.md
suggests it to start a blocked task's next attempt from a clean tree.

--dry-run says, path by path, what restore would do (restore, remove,
leave unchanged, refuse) and writes nothing; --json prints the outcome as
one object (run, dry_run, and per path its action and reason).

` + exitStatusHelp(longExits...),
		Example: `  # Everything task 3 of the latest run threw away
  implloop restore --task 3

  # One path, lost in a given run
  implloop restore --run r-20261130-054012-3f9a src/login.go

  # A path edited since it was lost: overwrite it with the lost content anyway
  implloop restore src/login.go --force

  # What it would write, and nothing written
  implloop restore --task 3 --dry-run

  # Undo what blocked task 3's attempts did, before a resume
  implloop restore --task 3 --before`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths = args
			if o.before && o.task == "" {
				return usagef("name the task whose edits to undo: --task ID --before", "--before needs --task")
			}
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "the run (id or unique prefix; default: the latest)")
	cmd.Flags().StringVar(&o.task, "task", "", "only paths lost by this task")
	cmd.Flags().BoolVar(&o.force, "force", false, "overwrite paths edited since they were lost")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "say what would be restored, path by path, and write nothing")
	cmd.Flags().BoolVar(&o.before, "before", false, "with --task: undo the task's own edits, back to the tree before it")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the outcome as one JSON object")
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
	if o.task != "" {
		// A task the run does not have lost nothing, but saying so
		// hides a typo ("--task 9" of a 3-task run): as show does.
		tasks, err := j.Tasks(run.ID)
		if err != nil {
			return err
		}
		var ids []string
		for _, t := range tasks {
			ids = append(ids, t.TaskID)
		}
		if !slices.Contains(ids, o.task) {
			return errorf(fmt.Sprintf("its tasks: %v ('implloop show %s' lists them)", ids, run.ID), "run %s has no task %q", run.ID, o.task)
		}
	}
	// PATHs are as the user typed them (relative to the working
	// directory); lost paths are relative to the repo root.
	var paths []string
	for _, a := range o.paths {
		paths = append(paths, journalPlanPath(root, o.io.workingDir, a))
	}
	lost, err := toRestore(ctx, o, j, run.ID, paths)
	if err != nil {
		return err
	}
	if len(lost) == 0 {
		if o.asJSON {
			return printRestoreJSON(o, run.ID, nil)
		}
		what := "lost nothing"
		if o.before {
			what = "changed nothing in task " + o.task
		}
		fmt.Fprintf(o.io.ErrOut, "implloop: run %s %s; nothing to restore\n", run.ID, what)
		return nil
	}
	restore := boundary.Restore
	if o.dryRun {
		restore = boundary.RestorePreview
	}
	results, rerr := restore(ctx, root, lost, o.force)
	if o.asJSON {
		if err := printRestoreJSON(o, run.ID, results); err != nil {
			return err
		}
	}
	if !o.asJSON {
		printRestored(o, results)
	}
	if o.dryRun && !o.asJSON {
		fmt.Fprintln(o.io.ErrOut, "implloop: dry run: nothing was written")
	}
	if rerr != nil {
		if errors.Is(rerr, boundary.ErrRefused) {
			return errorf("look at the path first; --force overwrites it with the lost content", "%s", rerr)
		}
		return rerr
	}
	return nil
}

// toRestore is what restore writes back from run runID: what task o.task
// changed (--before: the paths as they were before it), else what the
// run lost; only paths, when given.
func toRestore(ctx context.Context, o *restoreOptions, j *loop.Inspector, runID string, paths []string) ([]boundary.LostContent, error) {
	var lost []boundary.LostContent
	var err error
	if o.before {
		lost, err = j.TaskBefore(ctx, runID, o.task, paths)
		var notChanged *loop.NotChangedError
		switch {
		case errors.As(err, &notChanged):
			return nil, errorf("run 'implloop show "+runID+" --task "+o.task+"' for the paths it changed", "%s", err)
		case errors.Is(err, loop.ErrNoEffect):
			return nil, errorf("run 'implloop show "+runID+"' for its tasks", "task %s made no change of its own in run %s: nothing to undo", o.task, runID)
		}
	} else {
		lost, err = j.LostContent(runID, o.task, paths)
		var notLost *loop.NotLostError
		if errors.As(err, &notLost) {
			return nil, errorf("run 'implloop show "+runID+"' for the lost paths", "%s", err)
		}
	}
	var untrusted *loop.UntrustedError
	if errors.As(err, &untrusted) {
		return nil, errorf("it stays readable ('implloop show "+runID+"'); to restore from it, pull it signed by a key in your allowed signers (docs/journal.md, Trust)", "%s", err)
	}
	return lost, err
}

// printRestored prints a line per path restore wrote, removed or left
// (with --dry-run: would).
func printRestored(o *restoreOptions, results []boundary.RestoreResult) {
	for _, r := range results {
		action := string(r.Action)
		if o.dryRun {
			action = map[boundary.RestoreAction]string{boundary.RestoreWritten: "would restore", boundary.RestoreRemoved: "would remove"}[r.Action]
			if action == "" {
				action = string(r.Action)
			}
		}
		line := fmt.Sprintf("%-9s %s", action, r.Path)
		if r.Reason != "" {
			line += ": " + r.Reason
		}
		fmt.Fprintln(o.io.Out, line)
	}
}

// printRestoreJSON is restore --json's answer.
func printRestoreJSON(o *restoreOptions, runID string, results []boundary.RestoreResult) error {
	if results == nil {
		results = []boundary.RestoreResult{}
	}
	enc := json.NewEncoder(o.io.Out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Run    string                   `json:"run"`
		DryRun bool                     `json:"dry_run"`
		Paths  []boundary.RestoreResult `json:"paths"`
	}{runID, o.dryRun, results})
}
