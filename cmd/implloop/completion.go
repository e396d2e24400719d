package main

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/plan"
	"github.com/implloop/implloop/settings"
)

// Dynamic shell completion. `implloop completion SHELL` (cobra's) writes a
// script; on Tab the script runs `implloop __complete ARGS... PARTIAL`,
// which parses the line as typed and calls the functions below. They run
// at every keystroke in any directory, so they only read: the journal
// through loop.InspectIfAny (no journal, no candidates: it is never
// created), plans from disk. Any error means no candidates, never a
// message, since the shell would show it in the middle of the line.

const noFiles = cobra.ShellCompDirectiveNoFileComp

// completeRunIDs offers the journaled runs, newest first, with their
// verdict and plan as the description.
func completeRunIDs(io *ioStreams) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		j := completionJournal(io)
		if j == nil {
			return nil, noFiles
		}
		defer j.Close()
		runs, err := j.ListRuns() // newest first
		if err != nil {
			return nil, noFiles
		}
		var out []cobra.Completion
		for _, r := range runs {
			if strings.HasPrefix(r.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(r.ID, runVerdict(r.Verdict, r.Finished())+" "+r.PlanPath))
			}
		}
		// Newest first is the order that matters: the shell must not sort.
		return out, noFiles | cobra.ShellCompDirectiveKeepOrder
	}
}

// completeRunArg completes the optional RUN argument of show and explain.
func completeRunArg(io *ioStreams) cobra.CompletionFunc {
	runs := completeRunIDs(io)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, noFiles
		}
		return runs(cmd, args, toComplete)
	}
}

// completeRunTasks offers the tasks of a run, as the journal recorded
// them; runRef picks the run from the line typed so far ("": the latest).
func completeRunTasks(io *ioStreams, runRef func(cmd *cobra.Command, args []string) string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		j := completionJournal(io)
		if j == nil {
			return nil, noFiles
		}
		defer j.Close()
		run, err := j.ResolveRun(runRef(cmd, args))
		if err != nil {
			return nil, noFiles
		}
		tasks, err := j.Tasks(run.ID)
		if err != nil {
			return nil, noFiles
		}
		var out []cobra.Completion
		for _, t := range tasks {
			if strings.HasPrefix(t.TaskID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(t.TaskID, t.Title+" ("+string(t.Status)+")"))
			}
		}
		return out, noFiles | cobra.ShellCompDirectiveKeepOrder
	}
}

// completeTaskRange offers the task ids of a plan for --task-range, in the
// plan's order; after a colon, the ids that can end the range. planOf
// names the plan from the line typed so far, relative to the working
// directory ("": none yet, no candidates).
func completeTaskRange(io *ioStreams, planOf func(cmd *cobra.Command, args []string) string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		path := planOf(cmd, args)
		if path == "" {
			return nil, noFiles
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(io.workingDir, path)
		}
		// Lenient: a plan with lint errors still lists its tasks.
		p, _, err := plan.ReadFile(path)
		if err != nil || p == nil {
			return nil, noFiles
		}
		from := ""
		if i := strings.LastIndex(toComplete, ":"); i >= 0 {
			from = toComplete[:i+1]
		}
		var out []cobra.Completion
		for _, t := range p.Tasks {
			if c := from + t.ID; strings.HasPrefix(c, toComplete) {
				out = append(out, cobra.CompletionWithDesc(c, t.Title))
			}
		}
		return out, noFiles | cobra.ShellCompDirectiveKeepOrder
	}
}

// completeResumePlan is the plan a resume reads: --plan, else the plan the
// run to resume (--run, else the latest) recorded.
func completeResumePlan(io *ioStreams) func(cmd *cobra.Command, args []string) string {
	return func(cmd *cobra.Command, args []string) string {
		if p, _ := cmd.Flags().GetString("plan"); p != "" {
			return p
		}
		j := completionJournal(io)
		if j == nil {
			return ""
		}
		defer j.Close()
		ref, _ := cmd.Flags().GetString("run")
		run, err := j.ResolveRun(ref)
		if err != nil {
			return ""
		}
		root, err := repoRoot(io.workingDir)
		if err != nil {
			return ""
		}
		return loop.PlanFile(root, run.PlanPath)
	}
}

// planArg is the PLAN argument, once typed.
func planArg(cmd *cobra.Command, args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// runArg is the RUN argument of show and explain ("": the latest run).
func runArg(cmd *cobra.Command, args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// runFlag is the --run flag's value ("": the latest run).
func runFlag(cmd *cobra.Command, args []string) string {
	v, _ := cmd.Flags().GetString("run")
	return v
}

// completePlanFiles offers markdown files for n PLAN arguments (n < 0: any
// number).
func completePlanFiles(n int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if n >= 0 && len(args) >= n {
			return nil, noFiles
		}
		return []cobra.Completion{"md"}, cobra.ShellCompDirectiveFilterFileExt
	}
}

// completeFixed offers those of a flag's fixed set of values that start
// as typed, in the order given.
func completeFixed(values ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, noFiles
	}
}

// completionJournal opens the journal of the repository around the working
// directory read-only; nil when there is none (or no repository).
func completionJournal(io *ioStreams) *loop.Inspector {
	root, err := repoRoot(io.workingDir)
	if err != nil {
		return nil
	}
	j, err := loop.InspectIfAny(root)
	if err != nil {
		return nil
	}
	return j
}

// registerRunFlagCompletions completes the flags run and resume share:
// each setting's from the table of settings (its fixed values, paths, or
// nothing), --task-range's from the plan.
func registerRunFlagCompletions(cmd *cobra.Command, io *ioStreams, planOf func(cmd *cobra.Command, args []string) string) {
	var probe loop.Settings
	for _, st := range settings.All() {
		var f cobra.CompletionFunc
		switch {
		case st.Flag == "task-range":
			f = completeTaskRange(io, planOf)
		case len(st.Values) > 0:
			f = completeFixed(st.Values...)
		case st.Paths:
			continue // the shell's own: file names
		default:
			if _, isBool := st.Field(&probe).(*bool); isBool {
				continue // takes no value
			}
			f = cobra.NoFileCompletions
		}
		_ = cmd.RegisterFlagCompletionFunc(st.Flag, f)
	}
	_ = cmd.RegisterFlagCompletionFunc("heartbeat", cobra.NoFileCompletions)
}
