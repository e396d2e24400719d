package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/loop"
)

// resumeOptions are what `resume` was asked: the run to resume, the plan
// path if given, the settings its flags give (Flags names them) and the
// flags that are not settings.
type resumeOptions struct {
	io       *ioStreams
	runRef   string
	planPath string
	given    loop.Settings
	flags    *runFlags
}

func newResumeCmd(io *ioStreams) *cobra.Command { return newResumeCmdWith(io, resumeRun) }

// newResumeCmdWith takes the function that does the work, so a test can
// check flag parsing and validation alone.
func newResumeCmdWith(io *ioStreams, runF func(context.Context, *resumeOptions) error) *cobra.Command {
	f := &runFlags{wd: io.workingDir}
	o := &resumeOptions{io: io, flags: f}
	cmd := &cobra.Command{
		Use:   "resume [--run ID]",
		Short: "Start a new run from a run's journal: replay what is unchanged, run the rest live",
		Long: `Resume starts a new run whose parent is --run (default: the latest run).
The plan is re-read from disk and every unit's identity recomputed: a unit
whose identity matches a completed unit of the parent's lineage replays from
the journal (no agent call); the rest run live. Before anything runs, the
resume plan says per task replay or live, and why.

Run settings default to the parent's (as recorded in the journal); flags
given again override them, and settings in the plan's front matter follow
the plan as it is now (unless a run of the lineage set them by flag). A task that ended blocked has its gate re-run
first: if it passes now the task is done with no agent call (one the guard
blocked, whose gate had passed, runs again instead when its text or another
input changed since). Replayed done
tasks keep their journaled gate result unless --reverify, or unless the
tree's content changed since the parent's last boundary (then their gates
run again).

A task whose work is no longer in the tree (its files deleted, or back at
what they were before it) is planned "restore": its work is written back
from implloop's boundary commits, with no agent call, and it replays.
--rerun-lost runs such tasks live instead.

When the parent ended DONE and nothing changed since (the plan's bytes, the
settings, and the tree's content are as it left them), the resume says so
and ends with the parent's verdict without starting a run: no agent is
called, nothing is journaled, and the report is the parent's. Any change
(or --reverify) plans the resume task by task as above.

implloop refuses to resume while BLOCKED.md exists: read it, repair, then
remove it.

` + exitStatusHelp(),
		Example: `  # After a blocked task: fix its cause (the plan or the code), rm BLOCKED.md,
  # see what will replay and what will run live, then resume
  implloop resume --dry-run
  implloop resume

  # An older run (an id or a unique prefix), with another model, re-running
  # the gates of the tasks that replay
  implloop resume --run r-20261130-054012 --model claude-opus-4-5 --reverify

  # The plan moved since the run
  implloop resume --plan docs/plan.md`,
		Args:              exactArgs(0, "no arguments (use --run ID)"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			given, err := f.settings(cmd.Flags())
			if err != nil {
				return err
			}
			o.given = given
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.runRef, "run", "", "the run to resume: an id or a unique prefix (default: the latest run)")
	cmd.Flags().StringVar(&o.planPath, "plan", "", "the plan file (default: the parent's)")
	cmd.Flags().BoolVar(&f.reverify, "reverify", false, "re-run the gates of replayed tasks live")
	cmd.Flags().BoolVar(&f.rerunLost, "rerun-lost", false, "run tasks whose work is no longer in the tree live, instead of writing it back")
	addRunFlags(cmd.Flags(), f)
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunIDs(io))
	_ = cmd.RegisterFlagCompletionFunc("plan", completePlanFiles(-1))
	registerRunFlagCompletions(cmd, io, completeResumePlan(io))
	return cmd
}

// resumeRun resumes o.runRef with the parent's settings and the given flags
// over them (loop.Inherit validates both).
func resumeRun(ctx context.Context, o *resumeOptions) error {
	root, j, parent, err := openRunIn(o.io, o.runRef, loop.InspectUpgrading)
	if err != nil {
		return err
	}
	j.Close()
	plan := ""
	if o.planPath != "" {
		plan = journalPlanPath(root, o.io.workingDir, o.planPath)
	}
	inherited, err := loop.SettingsOf(parent, plan)
	if err != nil {
		return err
	}
	s, err := loop.Inherit(inherited, parent.ID, o.given)
	if err != nil {
		return loopError(err)
	}
	return runLoop(ctx, o.io, s, parent.ID, o.flags)
}
