package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/loop"
)

// explainOptions are what `explain` was asked.
type explainOptions struct {
	io     *ioStreams
	run    string // "" for the latest
	task   string
	asJSON bool
}

func newExplainCmd(io *ioStreams) *cobra.Command { return newExplainCmdWith(io, explainRun) }

// newExplainCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newExplainCmdWith(io *ioStreams, runF func(*explainOptions) error) *cobra.Command {
	o := &explainOptions{io: io}
	cmd := &cobra.Command{
		Use:   "explain [RUN]",
		Short: "Per unit: replayed from where, or live and which identity field changed",
		Long: `Explain answers "why did this re-run?" for every unit of a run (default:
the latest): replayed from which run and unit, or live and why, with a
field-by-field diff of its identity preimage against the closest journaled
unit of the same task, role and attempt in the parent's lineage.
A replay across runs (from a run outside the lineage: an earlier run
here, or a teammate's or CI's, pulled) names that run and the machine it
ran on ("across_runs" and "replayed_on" in --json).
Read-only: it writes nothing.

` + exitStatusHelp(plainExits...),
		Example: `  # Why each unit of the latest run replayed or ran live
  implloop explain

  # The units of task 10 in a given run
  implloop explain r-20261130-054012-3f9a --task 10

  # Only the units that ran live, and why
  implloop explain --json | jq -c '.units[] | select(.source == "live") | {task, reason}'`,
		Args:              maxArgs(1, "at most one RUN"),
		ValidArgsFunction: completeRunArg(io),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				o.run = args[0]
			}
			return runF(o)
		},
	}
	cmd.Flags().StringVar(&o.task, "task", "", "only this task's units")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON")
	_ = cmd.RegisterFlagCompletionFunc("task", completeRunTasks(io, runArg))
	return cmd
}

// explainRun prints the inspector's Explain of the run.
func explainRun(o *explainOptions) error {
	j, run, err := openRun(o.io, []string{o.run})
	if err != nil {
		return err
	}
	defer j.Close()
	x, err := j.Explain(run, o.task)
	if err != nil {
		return err
	}
	if o.task != "" && len(x.Units) == 0 {
		return errorf("run 'implloop show "+run.ID+"' for its tasks", "run %s has no unit of task %q", run.ID, o.task)
	}
	out := o.io.Out
	if o.asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"run": x.Run, "parent": x.Parent, "units": x.Units, "tasks": x.Tasks})
	}
	fmt.Fprintf(out, "run %s", x.Run)
	if x.Parent != "" {
		fmt.Fprintf(out, " (resumes %s)", x.Parent)
	}
	fmt.Fprintln(out)
	for _, u := range x.Units {
		fmt.Fprintf(out, "task %s  %s  %s", u.Task, u.Unit, u.Source)
		if u.ReplayedFrom != "" {
			fmt.Fprintf(out, " from %s", u.ReplayedFrom)
		}
		switch {
		case u.AcrossRuns:
			run, _, _ := strings.Cut(u.ReplayedFrom, ":")
			fmt.Fprintf(out, " (across runs: replayed from run %s on machine %s; %s)", run, orUnknown(u.ReplayedOn), trustWords(u))
		case u.Source == "replayed" && !u.Trusted:
			fmt.Fprintf(out, " (%s; taken over by name)", trustWords(u))
		}
		if u.Sandbox != "" {
			fmt.Fprintf(out, " (sandboxed: %s)", u.Sandbox)
		}
		if u.Reason != "" {
			fmt.Fprintf(out, ": %s", u.Reason)
		}
		if u.Fallback != "" {
			fmt.Fprintf(out, "; %s", u.Fallback)
		}
		fmt.Fprintln(out)
		for _, c := range u.Changes {
			fmt.Fprintf(out, "    %s\n", strings.ReplaceAll(c.Text, "\n", "\n    "))
		}
	}
	for _, t := range x.Tasks {
		fmt.Fprintf(out, "task %s  %s: %s\n", t.Task, t.Action, strings.Join(t.Reasons, "; "))
	}
	return nil
}

// orUnknown is s, or "unknown" when a run recorded no host name.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// trustWords is whose work a replayed unit is, and whether it is trusted.
func trustWords(u loop.UnitExplanation) string {
	if u.Trusted {
		return "trusted: " + u.Trust
	}
	return "not trusted: " + u.Trust
}
