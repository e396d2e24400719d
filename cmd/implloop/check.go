package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/internal/words"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/plan"
)

type checkOptions struct {
	io     *ioStreams
	globs  []string
	asJSON bool
	ctx    context.Context // nil: not cancelled
}

// defaultPlanGlobs find plans no run has used yet (check lints those that
// hold a task).
var defaultPlanGlobs = []string{"**/plan*.md", "**/tasks.md"}

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
    the plans of journaled runs, the staged files matching --plans or the
    git config key implloop.planGlobs (a glob against repo-relative paths,
    e.g. 'docs/*.md'; ** matches any number of directories; the key may be
    given more than once), and, so that a new plan is checked before any run used
    it, staged files matching the default globs ` + "`" + `**/plan*.md` + "`" + ` and
    ` + "`" + `**/tasks.md` + "`" + ` that hold at least one task (a planning note with no
    task is not taken for a broken plan). Lint errors are refused;
    warnings are printed.
  - A staged plan edit that changes tasks of a run that ended PARTIAL,
    BLOCKED or INTERRUPTED gets a warning naming the tasks a resume of that
    run will re-run, and why. It does not fail the commit.

check reads the index and the journal and writes nothing. 'implloop hook
install' runs it before every commit.

--json prints one object instead: what was refused (with hints), each
linted plan's diagnostics and the resume warnings; the exit status is the
same.

EXIT STATUS
  0    nothing refused (warnings may have been printed)
  1    something staged is refused, or an error
  2    usage: bad flags or arguments
  130  interrupted (SIGINT or SIGTERM)
`,
		Example: `  # What the pre-commit hook runs ('implloop hook install' installs it)
  implloop check

  # In CI, also lint staged plans no run has used yet
  implloop check --plans 'docs/*.md' --plans 'specs/*/tasks.md'

  # The same for every commit in this clone (the hook gets no flags):
  #   git config --add implloop.planGlobs 'docs/*.md'
  implloop check`,
		Args:              exactArgs(0, "no arguments (use --plans GLOB)"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, g := range o.globs {
				if err := checkGlob(g); err != nil {
					return usagef("--plans takes a glob such as 'docs/*.md' or '**/plan.md'", "--plans %q: %v", g, err)
				}
			}
			o.ctx = cmd.Context()
			return runF(o)
		},
	}
	cmd.Flags().StringArrayVar(&o.globs, "plans", nil, "also lint the staged files matching GLOB (repo-relative, ** for any directories; repeatable)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object: what was refused, each linted plan's diagnostics, the resume warnings")
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
	globs, err := configPlanGlobs(o.ctx, root)
	if err != nil {
		return err
	}
	c := &checker{o: o, root: root, w: o.io.ErrOut, globs: append(globs, o.globs...)}
	if o.asJSON {
		c.w = io.Discard
	}
	c.stagedState(changes)
	if err := c.stagedPlans(changes); err != nil {
		return err
	}
	if o.asJSON {
		if err := c.printJSON(); err != nil {
			return err
		}
	}
	if n := len(c.out.Refused); n > 0 {
		fmt.Fprintf(c.w, "implloop: check: %s refused\n", words.Count(n, "staged change"))
		return exitWith(exitError)
	}
	return nil
}

// checker is one `implloop check`: what it was asked, the repository,
// the globs that name plans (git config implloop.planGlobs, then
// --plan), where its messages go (stderr; nowhere with --json) and its
// answer.
type checker struct {
	o     *checkOptions
	root  string
	globs []string
	w     io.Writer
	out   checkJSON
}

// refuse refuses the commit: an error and its hint.
func (c *checker) refuse(hint, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.out.Refused = append(c.out.Refused, checkRefusal{Message: msg, Hint: hint})
	fmt.Fprintf(c.w, "implloop: error: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(c.w, "implloop: hint: %s\n", hint)
	}
}

// stagedState refuses implloop's own state staged: BLOCKED.md, or the
// journal where an older implloop kept it.
func (c *checker) stagedState(changes []boundary.StagedChange) {
	var state []string
	for _, ch := range changes {
		switch {
		case ch.Status == "D":
		case ch.Path == loop.BlockedFile:
			c.refuse("git rm --cached "+loop.BlockedFile+" (it explains a blocked run; it is not part of your project)",
				"%s is staged: a blocked run's repair note must not be committed", loop.BlockedFile)
		case strings.HasPrefix(ch.Path, loop.JournalLegacyDir+"/"):
			state = append(state, ch.Path)
		}
	}
	if len(state) > 0 {
		shown := state
		more := ""
		if len(shown) > 3 {
			shown, more = shown[:3], fmt.Sprintf(" and %d more", len(state)-3)
		}
		c.refuse("git rm -r --cached "+loop.JournalLegacyDir+" (the next 'implloop run' or 'resume' moves it into .git/implloop/)",
			"%s is staged: implloop's journal must not be committed (%s%s)", loop.JournalLegacyDir+"/", strings.Join(shown, ", "), more)
	}
}

// stagedPlans lints the staged plans (journaled ones, those --plan names,
// and by default files named like a plan that have tasks), refusing one
// with errors, and warns of what a journaled plan's edit does to its
// resume.
func (c *checker) stagedPlans(changes []boundary.StagedChange) error {
	latest, err := loop.LatestRunsByPlan(c.root)
	if err != nil {
		return errorf("", "%s", err)
	}
	for _, ch := range changes {
		if ch.Status == "D" {
			continue
		}
		run, journaled := latest[ch.Path]
		named := matchesAny(c.globs, ch.Path)
		byDefault := !journaled && !named && matchesAny(defaultPlanGlobs, ch.Path)
		if !journaled && !named && !byDefault {
			continue
		}
		src, err := boundary.StagedContent(c.o.ctx, c.root, ch.Path)
		if err != nil {
			return errorf("", "read the staged %s: %w", ch.Path, err)
		}
		p, diags := plan.Parse(ch.Path, src)
		if byDefault && (p == nil || len(p.Tasks) == 0) {
			continue // named like a plan, but none: a note, a design
		}
		linted := checkPlanJSON{Path: ch.Path, Diagnostics: diags}
		if linted.Diagnostics == nil {
			linted.Diagnostics = []plan.Diagnostic{}
		}
		c.out.Plans = append(c.out.Plans, linted)
		if !c.o.asJSON {
			printDiagnostics(c.o.io.Out, diags)
		}
		if plan.HasErrors(diags) {
			n := len(plan.Errors(diags))
			c.refuse("fix the plan ('implloop lint "+ch.Path+"' shows the same), then git add it again",
				"the staged %s has %s", ch.Path, words.Count(n, "error"))
			continue
		}
		if journaled {
			c.out.Warnings = append(c.out.Warnings, warnResume(c.w, c.root, ch.Path, run, src, p.SHA256)...)
		}
	}
	return nil
}

// printJSON prints check --json's answer.
func (c *checker) printJSON() error {
	out := c.out
	out.OK = len(out.Refused) == 0
	if out.Refused == nil {
		out.Refused = []checkRefusal{}
	}
	if out.Plans == nil {
		out.Plans = []checkPlanJSON{}
	}
	enc := json.NewEncoder(c.o.io.Out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// checkJSON is check --json's answer.
type checkJSON struct {
	OK       bool            `json:"ok"` // nothing refused: exit 0
	Refused  []checkRefusal  `json:"refused"`
	Plans    []checkPlanJSON `json:"plans"`              // the staged plans linted
	Warnings []string        `json:"warnings,omitempty"` // what a resume will re-run
}

type checkRefusal struct {
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

type checkPlanJSON struct {
	Path        string            `json:"path"`
	Diagnostics []plan.Diagnostic `json:"diagnostics"`
}

// configPlanGlobs reads git config implloop.planGlobs (any scope, each
// value one glob, as --plans takes): the plans a pre-commit hook, which
// gets no flags, lints besides the defaults. A glob check cannot read is
// an error naming the key.
func configPlanGlobs(ctx context.Context, root string) ([]string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	values, err := gitConfigAll(ctx, root, "implloop.planGlobs")
	if err != nil {
		return nil, errorf("", "read git config implloop.planGlobs: %w", err)
	}
	var globs []string
	for _, g := range values {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if err := checkGlob(g); err != nil {
			return nil, errorf("fix it with 'git config --unset-all implloop.planGlobs', then 'git config --add implloop.planGlobs GLOB' (e.g. 'docs/*.md')",
				"git config implloop.planGlobs %q: %v", g, err)
		}
		globs = append(globs, g)
	}
	return globs, nil
}

func matchesAny(globs []string, p string) bool {
	for _, g := range globs {
		if globMatch(g, p) {
			return true
		}
	}
	return false
}

// globMatch matches a repo-relative slash path against a glob: path.Match
// per segment, and a "**" segment matching any number of directories
// (none included), as .gitignore and most tools read it.
func globMatch(glob, p string) bool {
	var g []string
	for _, seg := range strings.Split(glob, "/") {
		if seg == "**" && len(g) > 0 && g[len(g)-1] == "**" {
			continue // "**/**" is "**", and would only cost time
		}
		g = append(g, seg)
	}
	return matchSegments(g, strings.Split(p, "/"))
}

func matchSegments(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(p); i++ {
				if matchSegments(g[1:], p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, _ := path.Match(g[0], p[0]); !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// checkGlob refuses a glob path.Match cannot read.
func checkGlob(g string) error {
	for _, seg := range strings.Split(g, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return err
		}
	}
	return nil
}

// unfinished are the verdicts of runs a resume will continue.
var unfinished = map[string]bool{"PARTIAL": true, "BLOCKED": true, "INTERRUPTED": true}

// warnResume warns when the staged plan src (its sha256 sum, as plan.Parse
// gives it) changes what a resume of run would do: the tasks that would
// run live, or have their gate re-run.
func warnResume(w io.Writer, root, planPath string, run loop.RunRecord, src []byte, sum string) []string {
	if !unfinished[run.Verdict] {
		return nil
	}
	if sum == run.PlanSHA256 {
		return nil // the run's own plan: nothing changed
	}
	out, err := loop.PreviewResume(root, &run, planPath, src)
	if err != nil {
		msg := fmt.Sprintf("cannot tell what a resume of run %s would re-run: %v", run.ID, err)
		fmt.Fprintf(w, "implloop: warning: %s\n", msg)
		return []string{msg}
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
		return nil
	}
	msg := fmt.Sprintf("a resume of run %s will re-run %s %s", run.ID, words.Plural(len(ids), "task"), strings.Join(ids, ", "))
	fmt.Fprintf(w, "implloop: warning: %s\n", msg)
	for _, l := range lines {
		fmt.Fprintln(w, l)
		msg += "\n" + strings.TrimPrefix(l, "implloop:   ")
	}
	return []string{msg}
}
