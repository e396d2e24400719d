package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/plan"
)

type checkOptions struct {
	io    *ioStreams
	globs []string
	ctx   context.Context // nil: not cancelled
}

func newCheckCmd(io *ioStreams) *cobra.Command {
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
			return checkRun(o)
		},
	}
	cmd.Flags().StringArrayVar(&o.globs, "plans", nil, "also lint the staged files matching GLOB (repo-relative; repeatable)")
	return cmd
}

// staged is one entry of `git diff --cached --name-status`.
type staged struct {
	status string // A, M, D, T, U, ...
	path   string // repo-relative, forward slashes
}

// stagedChanges lists what a commit would record: the index against HEAD
// (against the empty tree before the first commit). Renames are listed as
// a deletion and an addition, so a file moved into .implloop/ is seen.
func stagedChanges(ctx context.Context, root string) ([]staged, error) {
	out, err := gitOutput(ctx, root, "diff", "--cached", "--name-status", "-z", "--no-renames", "--no-ext-diff")
	if err != nil {
		return nil, err
	}
	return parseNameStatus(out), nil
}

// parseNameStatus reads `git diff --name-status -z --no-renames` output:
// status NUL path NUL, repeated. A trailing odd field is dropped.
func parseNameStatus(out []byte) []staged {
	var res []staged
	if len(out) == 0 {
		return nil
	}
	fields := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		res = append(res, staged{status: string(fields[i]), path: string(fields[i+1])})
	}
	return res
}

// gitOutput runs a read-only git command in root. --no-optional-locks
// keeps git from refreshing the index, so check writes nothing.
func gitOutput(ctx context.Context, root string, args ...string) ([]byte, error) {
	out, _, err := gitcmd.Run(ctx, gitcmd.Options{Dir: root}, append([]string{"--no-optional-locks"}, args...)...)
	return out, err
}

func checkRun(o *checkOptions) error {
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	changes, err := stagedChanges(o.ctx, root)
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
		case c.status == "D":
		case c.path == loop.BlockedFile:
			refuse("git rm --cached "+loop.BlockedFile+" (it explains a blocked run; it is not part of your project)",
				"%s is staged: a blocked run's repair note must not be committed", loop.BlockedFile)
		case strings.HasPrefix(c.path, cache.LegacyDir+"/"):
			state = append(state, c.path)
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

	latest, err := latestRunsByPlan(root)
	if err != nil {
		return errorf("", "%s", err)
	}
	for _, c := range changes {
		if c.status == "D" {
			continue
		}
		run, journaled := latest[c.path]
		if !journaled && !matchesAny(o.globs, c.path) {
			continue
		}
		src, err := gitOutput(o.ctx, root, "cat-file", "blob", ":"+c.path)
		if err != nil {
			return errorf("", "read the staged %s: %w", c.path, err)
		}
		_, diags := plan.Parse(c.path, src)
		printDiagnostics(o.io.Out, diags)
		if plan.HasErrors(diags) {
			n := len(plan.Errors(diags))
			refuse("fix the plan ('implloop lint "+c.path+"' shows the same), then git add it again",
				"the staged %s has %s", c.path, plural(n, "error"))
			continue
		}
		if journaled {
			warnResume(w, root, c.path, run, src)
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

// latestRunsByPlan maps each plan path the journal knows (repo-relative,
// forward slashes) to its latest run. No journal: no plans.
func latestRunsByPlan(root string) (map[string]cache.Run, error) {
	out := map[string]cache.Run{}
	j, err := cache.OpenReadOnly(root)
	if errors.Is(err, cache.ErrNoJournal) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer j.Close()
	runs, err := j.ListRuns() // newest first
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if filepath.IsAbs(r.PlanPath) {
			continue // outside the repository: never staged here
		}
		p := filepath.ToSlash(filepath.Clean(r.PlanPath))
		if _, ok := out[p]; !ok {
			out[p] = r
		}
	}
	return out, nil
}

// unfinished are the verdicts of runs a resume will continue.
var unfinished = map[string]bool{"PARTIAL": true, "BLOCKED": true, "INTERRUPTED": true}

// warnResume warns when the staged plan src changes what a resume of run
// would do: the tasks that would run live, or have their gate re-run.
func warnResume(w io.Writer, root, planPath string, run cache.Run, src []byte) {
	if !unfinished[run.Verdict] {
		return
	}
	sum := sha256.Sum256(src)
	if hex.EncodeToString(sum[:]) == run.PlanSHA256 {
		return // the run's own plan: nothing changed
	}
	s, err := loop.SettingsOf(&run, planPath)
	if err == nil {
		err = s.Validate()
	}
	var out *loop.Outcome
	if err == nil {
		out, err = loop.Preview(loop.Options{Settings: s, RepoRoot: root, Parent: run.ID}, src)
	}
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
