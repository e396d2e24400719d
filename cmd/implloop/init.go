package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/plan"
	"github.com/implloop/implloop/scaffold"
)

// initOptions are what `init` was asked.
type initOptions struct {
	io    *ioStreams
	plan  string // as typed: relative to the working directory
	force bool
}

func newInitCmd(io *ioStreams) *cobra.Command { return newInitCmdWith(io, initRun) }

// newInitCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newInitCmdWith(io *ioStreams, runF func(*initOptions) error) *cobra.Command {
	o := &initOptions{io: io}
	cmd := &cobra.Command{
		Use:   "init [--plan FILE] [--force]",
		Short: "Write a first plan for this repository and say what to run next",
		Long: `Init writes a sample plan (default: plan.md) for the git repository around
the current directory, and prints the next three commands: see the tasks,
run them offline with the builtin agent, open the report.

The plan has three tasks in the form docs/plan-format.md recommends (task
headings, a dependency line) and a gate in its front matter guessed from
the project: go test ./... (go.mod), cargo test (Cargo.toml), npm test (a
package.json with a test script), pytest (pyproject.toml, setup.py,
setup.cfg, pytest.ini, tox.ini), make test (a Makefile's test target);
none when nothing is recognised. Every task is fully specified, so the
builtin agent runs it with no model; its files all go into
implloop-example/, which touches nothing of the project.

It also prints, for each agent CLI implloop knows, how to install it and
log in once, the command line implloop runs it with, and what that
command's permission flags let it do without asking.

An existing plan file is left alone unless --force. Init writes the plan
and nothing else: no journal, no commit.

` + exitStatusHelp(plainExits...),
		Example: `  # The sample plan, then the commands it prints
  implloop init
  implloop plan plan.md
  implloop run plan.md --agent builtin
  implloop show --html

  # Under another name
  implloop init --plan docs/first-plan.md`,
		Args:              exactArgs(0, "no arguments (use --plan FILE)"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(o.plan) == "" {
				return usagef("name the file: --plan plan.md", "--plan needs a file name")
			}
			return runF(o)
		},
	}
	cmd.Flags().StringVar(&o.plan, "plan", "plan.md", "where to write the plan (relative to the current directory)")
	cmd.Flags().BoolVar(&o.force, "force", false, "overwrite an existing plan file")
	return cmd
}

func initRun(o *initOptions) error {
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	path := o.plan
	if !filepath.IsAbs(path) {
		path = filepath.Join(o.io.workingDir, path)
	}
	if _, err := os.Stat(path); err == nil && !o.force {
		return errorf("pick another name (--plan first-plan.md), or overwrite it with --force",
			"%s exists: init does not overwrite a plan", o.plan)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("", "%s: %w", o.plan, err)
	}
	proj := scaffold.Detect(root)
	src := scaffold.Plan(proj)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return errorf("", "write %s: %w", o.plan, err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		return errorf("", "write %s: %w", o.plan, err)
	}
	p, _ := plan.Parse(o.plan, src)

	w := o.io.Out
	gate := "no gate (no test command found; the plan says how to add one)"
	if proj.Gate != "" {
		gate = fmt.Sprintf("gate `%s` (from %s)", proj.Gate, proj.Why)
	}
	fmt.Fprintf(w, "implloop: wrote %s: %s, %s\n", o.plan, p.Reading, gate)
	if proj.Gate != "" {
		fmt.Fprintf(w, "The gate runs after every task and must pass on the tree as it is now: run `%s` once first.\n", proj.Gate)
	}
	q := quoteArg(o.plan)
	fmt.Fprintf(w, "\nNext:\n")
	steps := [][2]string{
		{"implloop plan " + q, "the tasks implloop reads from it"},
		{"implloop run " + q + " --agent builtin", "run it offline: the builtin agent writes each task's files, the gate checks them"},
		{"implloop show --html", "the run's report: open the path it prints in a browser"},
	}
	width := 0
	for _, s := range steps {
		width = max(width, len(s[0]))
	}
	for i, s := range steps {
		fmt.Fprintf(w, "  %d. %-*s   # %s\n", i+1, width, s[0], s[1])
	}
	fmt.Fprintf(w, "\nThen write your own tasks into %s (docs/plan-format.md) and run them with a real agent:\n", o.plan)
	fmt.Fprintf(w, "  implloop run %s --agent claude     # or codex, gemini, opencode; --agent-cmd \"your command\" for any other\n", q)
	fmt.Fprintf(w, "\nAgents: install, log in once, and what implloop runs\n")
	for _, g := range agent.Guides() {
		fmt.Fprintf(w, "  %s\n", g.Name)
		fmt.Fprintf(w, "    install: npm install -g %s\n", g.Package)
		fmt.Fprintf(w, "    log in:  %s\n", g.Login)
		fmt.Fprintf(w, "    runs:    %s  (the prompt on stdin; --model adds the model)\n", g.Command)
		fmt.Fprintf(w, "    allows:  %s\n", g.Allows)
	}
	fmt.Fprintf(w, "  builtin\n    nothing to install, no model: it writes each task's fenced path=FILE blocks, for demos and tests\n")
	return nil
}

// quoteArg is a path as a shell needs it typed.
func quoteArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+@%=:,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
