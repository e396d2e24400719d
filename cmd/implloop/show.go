package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/report"
	"github.com/implloop/implloop/travel"
)

func newShowCmd(io *ioStreams) *cobra.Command {
	var asJSON, diff, stat, asHTML bool
	var taskID string
	cmd := &cobra.Command{
		Use:   "show [RUN] [--task ID [--diff] [--stat] | --html]",
		Short: "Print a run's end report, or what one task did to the tree",
		Long: `Print a run's end report, rebuilt from the journal (default: the latest
run). Every figure comes from journal rows: tasks done, replayed and live
units, tokens and cost. A run that was killed shows as UNFINISHED with what
it had done.

With --task, print that task's effect instead: what it did to the work
tree, read from the run's boundary commits (refs/implloop/runs/<run>) as git
prints it: --stat (the default), --diff (the patch), or both. --json gives
the changed paths with their before and after blob ids and modes; a path
that is not valid UTF-8 also comes as path_b64 (its bytes, base64).

With --html, (re)write the run's report.html beside its report.md and
report.json (every run writes one when it ends) and print its path: one
self-contained page to open in a browser, with the run's timeline, each
task's diff and why it ran.

Read-only, except that --html writes report.html.

` + exitStatusHelp(),
		Example: `  # The end report of the latest run
  implloop show

  # What task 3 did to the work tree, as a patch
  implloop show --task 3 --diff

  # The latest run's report as a page (open the path it prints in a browser)
  implloop show --html

  # A given run's verdict and counts, and the paths its task 3 changed
  implloop show r-20261130-054012-3f9a --json | jq .outcome
  implloop show r-20261130-054012-3f9a --task 3 --json | jq -r '.changes[].path'`,
		Args:              maxArgs(1, "at most one RUN"),
		ValidArgsFunction: completeRunArg(io),
		RunE: func(cmd *cobra.Command, args []string) error {
			if taskID == "" && (diff || stat) {
				return usagef("add --task ID: --diff and --stat show one task's effect", "--diff and --stat need --task")
			}
			if asHTML && (taskID != "" || asJSON) {
				return usagef("--html writes the whole run's page: drop --task and --json", "--html goes alone")
			}
			j, run, err := openRun(io, args)
			if err != nil {
				return err
			}
			defer j.Close()
			if t, err := travel.TrustOfRun(j, run.ID); err == nil && !t.Trusted {
				// Readable, and marked: its work never stands in here.
				fmt.Fprintf(io.ErrOut, "implloop: run %s is %s: not trusted here (never replayed, restored or used to skip a gate unless resumed by name)\n", run.ID, t.String())
			}
			if taskID != "" {
				return showEffect(cmd, io, j, run, taskID, asJSON, diff, stat)
			}
			rep, err := report.Build(j, run.ID)
			if err != nil {
				return err
			}
			if asHTML {
				root, err := repoRoot(io.workingDir)
				if err != nil {
					return err
				}
				path, err := loop.WriteHTMLReport(cmd.Context(), j, root, rep)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(io.Out, path)
				return err
			}
			if asJSON {
				_, err := io.Out.Write(report.JSON(rep))
				return err
			}
			return report.Terminal(io.Out, rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report (with --task: the task's effect) as JSON")
	cmd.Flags().StringVar(&taskID, "task", "", "show what task `ID` did to the work tree in the run")
	cmd.Flags().BoolVar(&diff, "diff", false, "with --task: print the task's patch")
	cmd.Flags().BoolVar(&stat, "stat", false, "with --task: print the task's diffstat (the default)")
	cmd.Flags().BoolVar(&asHTML, "html", false, "(re)write the run's report.html and print its path")
	_ = cmd.RegisterFlagCompletionFunc("task", completeRunTasks(io, runArg))
	return cmd
}

// showEffect prints what task taskID did in run.
func showEffect(cmd *cobra.Command, io *ioStreams, j *cache.Journal, run *cache.Run, taskID string, asJSON, diff, stat bool) error {
	root, err := repoRoot(io.workingDir)
	if err != nil {
		return err
	}
	tasks, err := j.Tasks(run.ID)
	if err != nil {
		return err
	}
	var ids []string
	var row *cache.Task
	for i := range tasks {
		ids = append(ids, tasks[i].TaskID)
		if tasks[i].TaskID == taskID {
			row = &tasks[i]
		}
	}
	if row == nil {
		return errorf(fmt.Sprintf("its tasks: %v ('implloop show %s' lists them)", ids, run.ID), "run %s has no task %q", run.ID, taskID)
	}
	ctx := cmd.Context()
	if asJSON {
		eff, err := loop.TaskEffect(ctx, j, root, run.ID, taskID)
		if err != nil {
			return effectError(err, run, row)
		}
		b, err := json.MarshalIndent(eff, "", "  ")
		if err != nil {
			return err
		}
		_, err = io.Out.Write(append(b, '\n'))
		return err
	}
	if !diff {
		stat = true
	}
	out, err := loop.TaskDiff(ctx, j, root, run.ID, taskID, stat, diff, io.color())
	if err != nil {
		return effectError(err, run, row)
	}
	if len(out) == 0 {
		fmt.Fprintf(io.Out, "task %s changed nothing in the work tree in run %s\n", taskID, run.ID)
		return nil
	}
	_, err = io.Out.Write(out)
	return err
}

func effectError(err error, run *cache.Run, row *cache.Task) error {
	switch {
	case errors.Is(err, loop.ErrNoEffect):
		why := "it took no boundary of its own in this run"
		switch {
		case row.Source == cache.SourceReplayed:
			why = "it was replayed: its work was done in an earlier run ('implloop explain " + run.ID + "' names it)"
		case slices.Contains([]cache.TaskStatus{cache.TaskSkipped, cache.TaskPending}, row.Status):
			why = "it did not run (" + string(row.Status) + ")"
		}
		return errorf("show that task in the run that ran it live", "task %s made no change of its own in run %s: %s", row.TaskID, run.ID, why)
	case errors.Is(err, loop.ErrLegacyBoundary):
		return errorf("task effects exist for runs started by this implloop or later", "run %s was journaled before boundaries were commits: its task effects were not recorded", run.ID)
	}
	return err
}

// renderReport is the end report a run prints.
func renderReport(out *loop.Outcome) string {
	var b bytes.Buffer
	_ = report.Terminal(&b, out.Report)
	if out.ReportPath != "" {
		fmt.Fprintf(&b, "report: %s\n", out.ReportPath)
	}
	return b.String()
}
