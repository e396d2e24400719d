package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/plan"
)

type checkOptions struct {
	io    *ioStreams
	globs []string
	ctx   context.Context // nil: not cancelled
}

func newCheckCmd(io *ioStreams) *cobra.Command { return newCheckCmdWith(io, checkRun) }

// newCheckCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newCheckCmdWith(io *ioStreams, runF func(*checkOptions) error) *cobra.Command {
	o := &checkOptions{io: io}
	cmd := &cobra.Command{
		Use:   "check [--plans GLOB]...",
		Short: "Check the staged changes before a commit (the pre-commit hook's body; CI too)",
		Long: `Check what 'git commit' would record now, from the index:

  - BLOCKED.md or anything under .implloop/ staged: refused. A blocked
    run's repair note and implloop's journal (kept in .implloop/ by older
    implloops, in the git directory now) never belong in history.
  - Staged plans are linted from their staged content (not the worktree):
    the plans of journaled runs, plus the staged files matching --plans
    (a path.Match pattern against repo-relative paths, e.g. 'docs/*.md').
    Lint errors are refused; warnings are printed.
  - A staged plan edit that changes tasks of a run that ended PARTIAL,
    BLOCKED or INTERRUPTED gets a warning naming the tasks a resume of that
    run will re-run, and why. It does not fail the commit.

check reads the index and the journal and writes nothing. 'implloop hook
install' runs it before every commit.

EXIT STATUS
  0    nothing refused (warnings may have been printed)
  1    something staged is refused, or an error
  2    usage: bad flags or arguments
`,
		Example: `  # What the pre-commit hook runs ('implloop hook install' installs it)
  implloop check

  # In CI, also lint staged plans no run has used yet
  implloop check --plans 'docs/*.md' --plans 'specs/*/tasks.md'`,
		Args:              exactArgs(0, "no arguments (use --plans GLOB)"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, g := range o.globs {
				if _, err := path.Match(g, ""); err != nil {
					return usagef("--plans takes a path.Match pattern such as 'docs/*.md'", "--plans %q: %v", g, err)
				}
			}
			o.ctx = cmd.Context()
			return runF(o)
		},
	}
	cmd.Flags().StringArrayVar(&o.globs, "plans", nil, "also lint the staged files matching GLOB (repo-relative; repeatable)")
	return cmd
}

func checkRun(o *checkOptions) error {
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	changes, err := boundary.Staged(o.ctx, root)
	if err != nil {
		return errorf("", "%w", err)
	}
	w := o.io.ErrOut
	refused := 0
	refuse := func(hint, format string, args ...any) {
		refused++
		fmt.Fprintf(w, "implloop: error: %s\n", fmt.Sprintf(format, args...))
		if hint != "" {
			fmt.Fprintf(w, "implloop: hint: %s\n", hint)
		}
	}

	var state []string
	for _, c := range changes {
		switch {
		case c.Status == "D":
		case c.Path == loop.BlockedFile:
			refuse("git rm --cached "+loop.BlockedFile+" (it explains a blocked run; it is not part of your project)",
				"%s is staged: a blocked run's repair note must not be committed", loop.BlockedFile)
		case strings.HasPrefix(c.Path, cache.LegacyDir+"/"):
			state = append(state, c.Path)
		}
	}
	if len(state) > 0 {
		shown := state
		more := ""
		if len(shown) > 3 {
			shown, more = shown[:3], fmt.Sprintf(" and %d more", len(state)-3)
		}
		refuse("git rm -r --cached "+cache.LegacyDir+" (the next 'implloop run' or 'resume' moves it into .git/implloop/)",
			"%s is staged: implloop's journal must not be committed (%s%s)", cache.LegacyDir+"/", strings.Join(shown, ", "), more)
	}

	latest, err := loop.LatestRunsByPlan(root)
	if err != nil {
		return errorf("", "%s", err)
	}
	for _, c := range changes {
		if c.Status == "D" {
			continue
		}
		run, journaled := latest[c.Path]
		if !journaled && !matchesAny(o.globs, c.Path) {
			continue
		}
		src, err := boundary.StagedContent(o.ctx, root, c.Path)
		if err != nil {
			return errorf("", "read the staged %s: %w", c.Path, err)
		}
		p, diags := plan.Parse(c.Path, src)
		printDiagnostics(o.io.Out, diags)
		if plan.HasErrors(diags) {
			n := len(plan.Errors(diags))
			refuse("fix the plan ('implloop lint "+c.Path+"' shows the same), then git add it again",
				"the staged %s has %s", c.Path, plural(n, "error"))
			continue
		}
		if journaled {
			warnResume(w, root, c.Path, run, src, p.SHA256)
		}
	}
	if refused > 0 {
		fmt.Fprintf(w, "implloop: check: %s refused\n", plural(refused, "staged change"))
		return exitWith(exitError)
	}
	return nil
}

func matchesAny(globs []string, p string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, p); ok {
			return true
		}
	}
	return false
}

// unfinished are the verdicts of runs a resume will continue.
var unfinished = map[string]bool{"PARTIAL": true, "BLOCKED": true, "INTERRUPTED": true}

// warnResume warns when the staged plan src (its sha256 sum, as plan.Parse
// gives it) changes what a resume of run would do: the tasks that would
// run live, or have their gate re-run.
func warnResume(w io.Writer, root, planPath string, run cache.Run, src []byte, sum string) {
	if !unfinished[run.Verdict] {
		return
	}
	if sum == run.PlanSHA256 {
		return // the run's own plan: nothing changed
	}
	out, err := loop.PreviewResume(root, &run, planPath, src)
	if err != nil {
		fmt.Fprintf(w, "implloop: warning: cannot tell what a resume of run %s would re-run: %v\n", run.ID, err)
		return
	}
	var ids, lines []string
	for _, t := range out.Plan {
		if t.Action != loop.ActionLive && t.Action != loop.ActionGate {
			continue
		}
		ids = append(ids, t.Task)
		why := strings.Join(t.Reasons, "; ")
		if why == "" {
			why = t.Action
		}
		lines = append(lines, fmt.Sprintf("implloop:   task %s: %s", t.Task, why))
	}
	if len(ids) == 0 {
		return
	}
	fmt.Fprintf(w, "implloop: warning: a resume of run %s will re-run %s %s\n", run.ID, pluralWord(len(ids), "task"), strings.Join(ids, ", "))
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
