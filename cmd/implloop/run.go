package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/plan"
	"github.com/implloop/implloop/settings"
)

// runFlags are the flags `run` and `resume` share.
type runFlags struct {
	s        loop.Settings
	params   []string
	json     bool
	dryRun   bool
	reverify bool
	// rerunLost: resume runs tasks whose work is gone live (loop.Options).
	rerunLost bool
	// fresh: run replays nothing across runs (loop.Options).
	fresh bool
	// heartbeat: how often a line says a call or gate still runs, when
	// stderr is not a terminal (loop.Options.Heartbeat); not a setting.
	heartbeat time.Duration
	// wd is the working directory relative --sandbox-allow paths are from.
	wd string
}

// addRunFlags registers a flag for every run setting (package settings'
// table: name, help, default, and the field it sets), then the flags of
// run and resume that are not settings.
func addRunFlags(fs *pflag.FlagSet, f *runFlags) {
	f.s = settings.FlagDefaults()
	for _, st := range settings.All() {
		switch p := st.Field(&f.s).(type) {
		case *string:
			fs.StringVar(p, st.Flag, *p, st.Help)
		case *int:
			fs.IntVar(p, st.Flag, *p, st.Help)
		case *int64:
			fs.Int64Var(p, st.Flag, *p, st.Help)
		case *float64:
			fs.Float64Var(p, st.Flag, *p, st.Help)
		case *bool:
			fs.BoolVar(p, st.Flag, *p, st.Help)
		case *settings.Duration:
			fs.DurationVar((*time.Duration)(p), st.Flag, time.Duration(*p), st.Help)
		case *[]string:
			fs.StringArrayVar(p, st.Flag, *p, st.Help)
		case *map[string]string:
			// name=value, one a flag: settings.ParseParams reads them.
			fs.StringArrayVar(&f.params, st.Flag, nil, st.Help)
		default:
			panic(fmt.Sprintf("--%s: no flag for a setting of type %T", st.Flag, p))
		}
		if st.HideDefault() {
			fs.Lookup(st.Flag).DefValue = ""
		}
	}
	fs.DurationVar(&f.heartbeat, "heartbeat", time.Minute, "when stderr is not a terminal, a line this often while an agent call, a gate or a wait lasts (0: none)")
	fs.BoolVar(&f.json, "json", false, "print the event stream as NDJSON on stdout (docs/events.md)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the work list (per task: replay or live, and why) and write nothing")
}

// settings returns the flags as settings, validated (loop.Settings.Validate,
// the check every settings source goes through); Flags names the ones fs
// was given.
func (f *runFlags) settings(fs *pflag.FlagSet) (loop.Settings, error) {
	s := f.s
	params, err := settings.ParseParams(f.params)
	if err != nil {
		return s, loopError(err)
	}
	s.Params = params
	s.SandboxAllow = slices.Clone(s.SandboxAllow)
	for i, p := range s.SandboxAllow {
		if p != "" && !filepath.IsAbs(p) && f.wd != "" {
			s.SandboxAllow[i] = filepath.Join(f.wd, p)
		}
	}
	for _, name := range settings.Flags() {
		if fs.Changed(name) {
			s.Flags = append(s.Flags, name)
		}
	}
	sort.Strings(s.Flags)
	if fs.Changed("jobs") {
		if err := settings.ValidateJobs(s.Jobs); err != nil {
			return s, loopError(err)
		}
	}
	if err := s.Validate(); err != nil {
		return s, loopError(err)
	}
	return s, nil
}

// runOptions are what `run` was asked: the settings from its flags (plan
// included) and the flags that are not settings.
type runOptions struct {
	io       *ioStreams
	settings loop.Settings
	flags    *runFlags
}

func newRunCmd(io *ioStreams) *cobra.Command { return newRunCmdWith(io, runRun) }

// newRunCmdWith takes the function that does the work, so a test can check
// flag parsing and validation alone.
func newRunCmdWith(io *ioStreams, runF func(context.Context, *runOptions) error) *cobra.Command {
	f := &runFlags{wd: io.workingDir}
	cmd := &cobra.Command{
		Use:   "run PLAN",
		Short: "Run a plan's tasks with a coding agent",
		Long: `Run the plan's tasks in order with a coding agent, one task at a time, in
the git repository around the current directory.

Each agent call is journaled under a content-hash identity in the git
directory (.git/implloop/), out of reach of what an agent does to the work
tree; reports go to .git/implloop/runs/<id>/.
After each attempt the gate (the task's own ` + "```verify" + ` block, else --verify)
decides: a failed gate starts the next attempt with the end of its output
as feedback, up to --max-attempts, then the task is BLOCKED and BLOCKED.md
explains the repair. Between tasks implloop compares git boundaries: a task
that discards earlier uncommitted work is blocked, and 'implloop restore'
brings the work back.

` + exitStatusHelp(),
		Example: `  # Every task with Claude Code; a task is done when its gate passes
  implloop run plan.md --agent claude --verify "go test ./..."

  # Each agent call in a sandbox: it writes its work tree, nothing of implloop's
  implloop run plan.md --agent claude --sandbox --verify "go test ./..."

  # Tasks 3 to 5 with your own agent, going on past a blocked task
  implloop run plan.md --agent-cmd "my-agent --fast" --task-range 3:5 --on-blocked continue

  # The work list (per task: live or replay, and why); nothing is written
  implloop run plan.md --agent claude --dry-run

  # Every task live, even those another run did from this same tree
  implloop run plan.md --agent claude --fresh

  # The event stream, for scripts
  implloop run plan.md --agent codex --json | jq -c 'select(.type == "task_finished") | {task, status}'`,
		Args:              exactArgs(1, "a PLAN file"),
		ValidArgsFunction: completePlanFiles(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.settings(cmd.Flags())
			if err != nil {
				return err
			}
			s.Plan = args[0]
			return runF(cmd.Context(), &runOptions{io: io, settings: s, flags: f})
		},
	}
	addRunFlags(cmd.Flags(), f)
	cmd.Flags().BoolVar(&f.fresh, "fresh", false, "run every task live, even one another run did from the same tree with the same identities (no replay across runs)")
	registerRunFlagCompletions(cmd, io, planArg)
	return cmd
}

func runRun(ctx context.Context, o *runOptions) error {
	// A missing plan is the first thing to say, before any flag that the
	// plan's front matter might have supplied.
	planFile := o.settings.Plan
	if !filepath.IsAbs(planFile) {
		planFile = filepath.Join(o.io.workingDir, planFile)
	}
	if _, err := plan.ReadBytes(planFile); err != nil {
		return loopError(&loop.PlanReadError{Path: o.settings.Plan, Err: err})
	}
	return runLoop(ctx, o.io, o.settings, "", o.flags)
}

// runLoop runs or resumes, with signal handling, progress output and the
// verdict's exit code.
func runLoop(ctx context.Context, io *ioStreams, s loop.Settings, parent string, f *runFlags) error {
	root, err := repoRoot(io.workingDir)
	if err != nil {
		return err
	}
	if parent == "" {
		// A new run's plan path is as the user typed it; it is recorded
		// relative to the repo root when inside it, so a moved repository
		// resumes with the same settings. A resume's is already in that form.
		s.Plan = journalPlanPath(root, io.workingDir, s.Plan)
	}

	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := withSignals(ctx, io)
	defer stop()

	// A dry run's --json answer is one object on stdout; its warnings go
	// to stderr as text.
	obs := newProgress(io, f.json && !f.dryRun)
	defer obs.Close()
	// A terminal shows the call's elapsed time live; a CI log gets a
	// heartbeat line instead.
	heartbeat := f.heartbeat
	if obs.live {
		heartbeat = 0
	}
	out, err := loop.Run(ctx, loop.Options{
		Settings: s, RepoRoot: root, Parent: parent, Reverify: f.reverify, RerunLost: f.rerunLost, DryRun: f.dryRun, Fresh: f.fresh, Observer: obs,
		Heartbeat: heartbeat,
	})
	obs.Close()
	if err != nil {
		return loopError(err)
	}
	if f.dryRun {
		printPlan(io, out.Plan, f.json)
		return nil
	}
	return runOutcome(io, out, s.Plan, parent, f.json)
}

// runOutcome prints what became of a run (out) and exits with its
// verdict: its report (unless --json), then why it is not DONE and what
// to do next.
func runOutcome(io *ioStreams, out *loop.Outcome, plan, parent string, asJSON bool) error {
	if !asJSON {
		if out.Report != nil {
			fmt.Fprint(io.Out, renderReport(out))
		}
		if out.UpToDate {
			fmt.Fprintf(io.Out, "implloop run %s: %s, and nothing changed since: no task ran, no run was journaled\n", out.ParentID, out.Headline)
			if out.ReportPath != "" {
				fmt.Fprintf(io.Out, "report: %s\n", out.ReportPath)
			}
		}
	}
	if out.Interrupted {
		fmt.Fprintf(io.ErrOut, "implloop: interrupted; resume with: implloop resume --run %s\n", out.RunID)
		return exitWith(exitInterrupted)
	}
	if out.NoOp {
		fmt.Fprintf(io.ErrOut, "implloop: nothing changed since run %s; edit the plan or pass --reverify\n", parent)
		// The parent's verdict stands (a narrower --task-range must not turn
		// a PARTIAL parent into DONE) unless the parent never settled on
		// one: interrupted, or killed after its last unit completed.
		switch out.ParentVerdict {
		case "DONE", "PARTIAL", "BLOCKED":
			return exitWith(verdictExit(out.ParentVerdict))
		}
		return exitWith(verdictExit(out.Verdict))
	}
	if out.RecordsErr != nil {
		fmt.Fprintf(io.ErrOut, "implloop: warning: the records of run %s were not written as git objects (implloop push writes them): %v\n", out.RunID, out.RecordsErr)
	}
	if out.ReportErr != nil {
		fmt.Fprintf(io.ErrOut, "implloop: warning: the report of run %s could not be written, nothing of it is on disk: %v\n", out.RunID, out.ReportErr)
	}
	switch {
	case out.JournalGone != "":
		fmt.Fprintf(io.ErrOut, "implloop: %s: the runs it recorded are gone and cannot be resumed\n", out.JournalGone)
		fmt.Fprintf(io.ErrOut, "implloop: see BLOCKED.md for the repair steps, then start again: implloop run %s\n", plan)
	case out.Stopped != "":
		fmt.Fprintf(io.ErrOut, "implloop: stopped: %s\nimplloop: see BLOCKED.md for how to resume (implloop resume --run %s)\n", out.Stopped, out.RunID)
	case out.Blocked:
		fmt.Fprintf(io.ErrOut, "implloop: see BLOCKED.md for the repair steps, then: implloop resume --run %s\n", out.RunID)
	}
	return exitWith(verdictExit(out.Verdict))
}

// withSignals cancels ctx on the first SIGINT or SIGTERM (the loop stops the
// agent, journals the unit as interrupted and writes the report); a second
// one exits at once.
func withSignals(ctx context.Context, io *ioStreams) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			fmt.Fprintln(io.ErrOut, "\nimplloop: stopping (Ctrl-C again to exit at once)")
			cancel()
		case <-done:
			return
		}
		select {
		case <-ch:
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}
