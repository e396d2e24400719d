package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/report"
)

func newShowCmd(io *ioStreams) *cobra.Command {
	var asJSON, diff, stat, asHTML, log bool
	var taskID string
	cmd := &cobra.Command{
		Use:   "show [RUN] [--task ID [--diff] [--stat] [--log] | --html]",
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

With --task and --log, print what the task's attempts said instead, in
the agent's and the gate's own words: per attempt, the agent's final
message, the end of its stdout and stderr (why its call failed, if it
did), and the gate's whole output. A replayed attempt shows what the run
that made the call journaled. --json gives the same as an object.

A replayed task made no change of its own in the run: --diff and --stat
show the work where it was done, in the run that did it, and say so.

With --html, (re)write the run's report.html beside its report.md and
report.json (every run writes one when it ends) and print its path: one
self-contained page to open in a browser, with the run's timeline, each
task's diff and why it ran.

Read-only, except that --html writes report.html.

` + exitStatusHelp(longExits...),
		Example: `  # The end report of the latest run
  implloop show

  # What task 3 did to the work tree, as a patch
  implloop show --task 3 --diff

  # What the agent said, and the gate's whole output, attempt by attempt
  implloop show --task 3 --log

  # The latest run's report as a page (open the path it prints in a browser)
  implloop show --html

  # A given run's verdict and counts, and the paths its task 3 changed
  implloop show r-20261130-054012-3f9a --json | jq .outcome
  implloop show r-20261130-054012-3f9a --task 3 --json | jq -r '.changes[].path'`,
		Args:              maxArgs(1, "at most one RUN"),
		ValidArgsFunction: completeRunArg(io),
		RunE: func(cmd *cobra.Command, args []string) error {
			if taskID == "" && (diff || stat || log) {
				return usagef("add --task ID: --diff, --stat and --log show one task", "--diff, --stat and --log need --task")
			}
			if log && (diff || stat) {
				return usagef("--log prints what the attempts said; --diff and --stat what the task changed: one at a time", "--log goes without --diff and --stat")
			}
			if asHTML && (taskID != "" || asJSON) {
				return usagef("--html writes the whole run's page: drop --task and --json", "--html goes alone")
			}
			return showRun(cmd, io, args, showOptions{asJSON, diff, stat, asHTML, log, taskID})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report (with --task: the task's effect) as JSON")
	cmd.Flags().StringVar(&taskID, "task", "", "show what task `ID` did to the work tree in the run")
	cmd.Flags().BoolVar(&diff, "diff", false, "with --task: print the task's patch")
	cmd.Flags().BoolVar(&stat, "stat", false, "with --task: print the task's diffstat (the default)")
	cmd.Flags().BoolVar(&log, "log", false, "with --task: print each attempt's agent final message, stdout and stderr tail, and the gate's whole output")
	cmd.Flags().BoolVar(&asHTML, "html", false, "(re)write the run's report.html and print its path")
	_ = cmd.RegisterFlagCompletionFunc("task", completeRunTasks(io, runArg))
	return cmd
}

// showOptions are what `show` was asked.
type showOptions struct {
	asJSON, diff, stat, asHTML, log bool
	taskID                          string
}

// showRun prints run args[0] (default: the latest) as o asks: a task's
// log or effect, the run's report page, or its report.
func showRun(cmd *cobra.Command, io *ioStreams, args []string, o showOptions) error {
	j, run, err := openRun(io, args)
	if err != nil {
		return err
	}
	defer j.Close()
	if t, err := j.TrustOfRun(run.ID); err == nil && !t.Trusted {
		// Readable, and marked: its work never stands in here.
		fmt.Fprintf(io.ErrOut, "implloop: run %s is %s: not trusted here (never replayed, restored or used to skip a gate unless resumed by name)\n", run.ID, t.String())
	}
	if o.taskID != "" && o.log {
		return showLog(io, j, run, o.taskID, o.asJSON)
	}
	if o.taskID != "" {
		return showEffect(cmd, io, j, run, o.taskID, o.asJSON, o.diff, o.stat)
	}
	rep, err := j.Report(run.ID)
	if err != nil {
		return err
	}
	if o.asHTML {
		path, err := j.WriteHTMLReport(cmd.Context(), rep)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(io.Out, path)
		return err
	}
	if o.asJSON {
		_, err := io.Out.Write(report.JSON(rep))
		return err
	}
	return report.Terminal(io.Out, rep)
}

// showEffect prints what task taskID did in run.
func showEffect(cmd *cobra.Command, io *ioStreams, j *loop.Inspector, run *loop.RunRecord, taskID string, asJSON, diff, stat bool) error {
	tasks, err := j.Tasks(run.ID)
	if err != nil {
		return err
	}
	var ids []string
	var row *loop.TaskRecord
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
	// A replayed task made no change of its own here: its work is in the
	// run that did it, which is said (on stderr: the diff stays a diff).
	workRun := run.ID
	if row.Source == loop.SourceReplayed {
		if from, ok, err := j.WorkRun(run.ID, taskID); err == nil && ok {
			if _, err := j.TaskDiff(ctx, from, taskID, boundary.DiffOptions{Stat: true}); err == nil {
				workRun = from
				fmt.Fprintf(io.ErrOut, "implloop: task %s was replayed in run %s: its work was done in run %s, shown here\n", taskID, run.ID, from)
			}
		}
	}
	if asJSON {
		eff, err := j.TaskEffect(ctx, workRun, taskID)
		if err != nil {
			return effectError(err, run, row)
		}
		if workRun != run.ID {
			eff.ReplayedIn = run.ID
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
	out, err := j.TaskDiff(ctx, workRun, taskID, boundary.DiffOptions{Stat: stat, Patch: diff, Color: io.color()})
	if err != nil {
		return effectError(err, run, row)
	}
	if len(out) == 0 {
		fmt.Fprintf(io.Out, "task %s changed nothing in the work tree in run %s\n", taskID, workRun)
		return nil
	}
	_, err = io.Out.Write(out)
	return err
}

// showLog prints what task taskID's attempts said in run.
func showLog(io *ioStreams, j *loop.Inspector, run *loop.RunRecord, taskID string, asJSON bool) error {
	l, ok, err := j.TaskLog(run.ID, taskID)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(fmt.Sprintf("'implloop show %s' lists its tasks", run.ID), "run %s has no task %q", run.ID, taskID)
	}
	if asJSON {
		b, err := json.MarshalIndent(l, "", "  ")
		if err != nil {
			return err
		}
		_, err = io.Out.Write(append(b, '\n'))
		return err
	}
	_, err = fmt.Fprint(io.Out, l.Text())
	return err
}

func effectError(err error, run *loop.RunRecord, row *loop.TaskRecord) error {
	switch {
	case errors.Is(err, loop.ErrNoEffect):
		why := "it took no boundary of its own in this run"
		switch {
		case row.Source == loop.SourceReplayed:
			why = "it was replayed: its work was done in an earlier run ('implloop explain " + run.ID + "' names it)"
		case row.Status == loop.TaskSkipped || row.Status == loop.TaskPending:
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
	if out.HTMLPath != "" {
		fmt.Fprintf(&b, "report.html: %s (open it in a browser)\n", out.HTMLPath)
	}
	return b.String()
}
