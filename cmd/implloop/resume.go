package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sort"

	"github.com/implloop/implloop/loop"
)

func newResumeCmd(io *ioStreams) *cobra.Command {
	f := &runFlags{}
	var runRef, planPath string
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
first: if it passes now the task is done with no agent call. Replayed done
tasks keep their journaled gate result unless --reverify.

implloop refuses to resume while BLOCKED.md exists: read it, repair, then
remove it.

` + exitStatusHelp(),
		Example: `  implloop resume
  implloop resume --run r-20261130-0540 --dry-run
  implloop resume --run r-20261130-0540 --model claude-opus-4-5 --reverify`,
		Args: exactArgs(0, "no arguments (use --run ID)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := repoRoot(io.workingDir)
			if err != nil {
				return err
			}
			j, parent, err := openRun(io, []string{runRef})
			if err != nil {
				return err
			}
			j.Close()
			plan := ""
			if planPath != "" {
				plan = journalPlanPath(root, io.workingDir, planPath)
			}
			s, err := resumeSettings(parent, plan)
			if err != nil {
				return err
			}
			s = overrideSettings(s, cmd.Flags(), f)
			if err := s.Validate(); err != nil {
				var envErr *loop.EnvNameError
				if errors.As(err, &envErr) && !cmd.Flags().Changed("env") {
					// Inherited: every resume of that run would fail the same way.
					return usagef("pass --env again with the names you mean (it replaces the inherited list)",
						"%s: inherited from run %s", err, parent.ID)
				}
				return usagef("run 'implloop resume --help' for the accepted values", "%s", err)
			}
			return runLoop(cmd.Context(), io, s, parent.ID, f)
		},
	}
	cmd.Flags().StringVar(&runRef, "run", "", "the run to resume: an id or a unique prefix (default: the latest run)")
	cmd.Flags().StringVar(&planPath, "plan", "", "the plan file (default: the parent's)")
	cmd.Flags().BoolVar(&f.reverify, "reverify", false, "re-run the gates of replayed tasks live")
	addRunFlags(cmd.Flags(), f)
	return cmd
}

// overrideSettings applies the flags the user gave again over the parent's
// settings.
func overrideSettings(s loop.Settings, fs *pflag.FlagSet, f *runFlags) loop.Settings {
	g, _ := f.settings() // validated below by the caller
	set := func(name string, apply func()) {
		if fs.Changed(name) {
			apply()
			s.Flags = addFlag(s.Flags, name)
		}
	}
	set("agent", func() { s.Agent = g.Agent })
	set("agent-cmd", func() { s.AgentCmd, s.Agent = g.AgentCmd, "exec" })
	set("model", func() { s.Model = g.Model })
	set("verify", func() { s.Verify = g.Verify })
	set("task-range", func() { s.TaskRange = g.TaskRange })
	set("max-attempts", func() { s.MaxAttempts = g.MaxAttempts })
	set("timeout", func() { s.Timeout = g.Timeout })
	set("on-blocked", func() { s.OnBlocked = g.OnBlocked })
	set("env", func() { s.Env = g.Env })
	set("param", func() { s.Params = g.Params })
	set("plan-context", func() { s.PlanContext = g.PlanContext })
	set("include-checked", func() { s.IncludeChecked = g.IncludeChecked })
	return s
}

// addFlag adds name to the sorted set flags.
func addFlag(flags []string, name string) []string {
	for _, f := range flags {
		if f == name {
			return flags
		}
	}
	flags = append(append([]string(nil), flags...), name)
	sort.Strings(flags)
	return flags
}

// givenFlags are the run settings given as flags on this command line.
func givenFlags(fs *pflag.FlagSet) []string {
	var out []string
	for _, n := range []string{"agent", "agent-cmd", "model", "verify", "task-range", "max-attempts", "timeout",
		"on-blocked", "env", "param", "plan-context", "include-checked"} {
		if fs.Changed(n) {
			out = addFlag(out, n)
		}
	}
	return out
}
