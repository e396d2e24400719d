package main

import (
	"errors"
	"sort"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/implloop/implloop/cache"
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
			root, err := repoRoot(io.workingDir)
			if err != nil {
				return err
			}
			j, parent, err := openRunWith(io, []string{runRef}, openUpgrading)
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
	cmd.Flags().BoolVar(&f.rerunLost, "rerun-lost", false, "run tasks whose work is no longer in the tree live, instead of writing it back")
	addRunFlags(cmd.Flags(), f)
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunIDs(io))
	_ = cmd.RegisterFlagCompletionFunc("plan", completePlanFiles(-1))
	registerRunFlagCompletions(cmd, io, completeResumePlan(io))
	return cmd
}

// openUpgrading opens the journal read-only, unless an older implloop
// wrote it: a resume writes, so it upgrades the schema (cache.Open) rather
// than refuse to read it.
func openUpgrading(root string) (*cache.Journal, error) {
	j, err := cache.OpenReadOnly(root)
	if errors.Is(err, cache.ErrOlderSchema) {
		return cache.Open(root)
	}
	return j, err
}

// settingFlags are the flags that set a run setting, each with how it
// applies the value given (g) over the settings s. Order matters: a given
// --agent-cmd comes after --agent and wins.
var settingFlags = []struct {
	name  string
	apply func(s, g *loop.Settings)
}{
	{"agent", func(s, g *loop.Settings) { s.Agent = g.Agent }},
	{"agent-cmd", func(s, g *loop.Settings) { s.AgentCmd, s.Agent = g.AgentCmd, "exec" }},
	{"model", func(s, g *loop.Settings) { s.Model = g.Model }},
	{"verify", func(s, g *loop.Settings) { s.Verify = g.Verify }},
	{"task-range", func(s, g *loop.Settings) { s.TaskRange = g.TaskRange }},
	{"max-attempts", func(s, g *loop.Settings) { s.MaxAttempts = g.MaxAttempts }},
	{"timeout", func(s, g *loop.Settings) { s.Timeout = g.Timeout }},
	{"on-blocked", func(s, g *loop.Settings) { s.OnBlocked = g.OnBlocked }},
	{"env", func(s, g *loop.Settings) { s.Env = g.Env }},
	{"param", func(s, g *loop.Settings) { s.Params = g.Params }},
	{"plan-context", func(s, g *loop.Settings) { s.PlanContext = g.PlanContext }},
	{"include-checked", func(s, g *loop.Settings) { s.IncludeChecked = g.IncludeChecked }},
}

// overrideSettings applies the flags the user gave again over the parent's
// settings.
func overrideSettings(s loop.Settings, fs *pflag.FlagSet, f *runFlags) loop.Settings {
	g, _ := f.settings() // validated below by the caller
	for _, sf := range settingFlags {
		if fs.Changed(sf.name) {
			sf.apply(&s, &g)
			s.Flags = addFlag(s.Flags, sf.name)
		}
	}
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
	for _, sf := range settingFlags {
		if fs.Changed(sf.name) {
			out = addFlag(out, sf.name)
		}
	}
	return out
}
