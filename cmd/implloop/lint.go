package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/internal/words"
	"github.com/implloop/implloop/plan"
)

type lintOptions struct {
	io     *ioStreams
	paths  []string
	strict bool
	asJSON bool
	form   formFlag
}

func newLintCmd(io *ioStreams) *cobra.Command {
	return newLintCmdWith(io, lintRun)
}

func newLintCmdWith(io *ioStreams, runF func(*lintOptions) error) *cobra.Command {
	opts := &lintOptions{io: io}
	cmd := &cobra.Command{
		Use:   "lint PLAN...",
		Short: "Check plans and print diagnostics, for editors and pre-commit",
		Long: `Check plans and print one diagnostic per line to stdout, in the form
editors and compilers use:

  plan.md:12:1: error: duplicate task id "10" (first at line 3)

Errors: no tasks, duplicate task ids, a dependency on an unknown task or a
dependency cycle, an empty task, bytes that are not UTF-8, a binary file, a
file over 32 MiB, a file that cannot be read, front matter that is not valid
YAML or holds a value of the wrong type. Warnings: unknown front matter keys,
forward dependencies, ids out of order, and other things worth a look.

On stderr, one line per plan says how its tasks were read (the form and
the count) with notes on what was left out; a warning says when another
reading was plausible, and --form forces one (see docs/plan-format.md).

Exit 0 when no plan has an error, 1 when one does; with --strict, warnings
fail too.

--json prints one object instead, for tools: per plan its reading (form,
task count, notes) and its diagnostics, then the totals; the exit status is
the same.

` + exitStatusHelp(plainExits...),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("run 'implloop lint --help' for usage", "%s: expected at least one plan file", cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: completePlanFiles(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.paths = args
			return runF(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "fail on warnings too")
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print one JSON object: each plan's reading and diagnostics, and the totals")
	opts.form.register(cmd)
	return cmd
}

func lintRun(opts *lintOptions) error {
	popts, err := opts.form.options("lint")
	if err != nil {
		return err
	}
	errs, warns := 0, 0
	var out lintJSON
	for _, path := range opts.paths {
		p, diags, _ := plan.ReadFileWith(path, popts) // an unreadable file is a diagnostic too
		n := len(plan.Errors(diags))
		errs += n
		warns += len(diags) - n
		if opts.asJSON {
			lp := lintPlanJSON{Path: path, Diagnostics: diags}
			if lp.Diagnostics == nil {
				lp.Diagnostics = []plan.Diagnostic{}
			}
			if p != nil {
				lp.Reading = &p.Reading
			}
			out.Plans = append(out.Plans, lp)
			continue
		}
		printDiagnostics(opts.io.Out, diags)
		if p != nil {
			printReading(opts.io.ErrOut, "implloop: lint: ", p)
		}
	}
	failed := errs > 0 || opts.strict && warns > 0
	if opts.asJSON {
		out.Errors, out.Warnings, out.OK = errs, warns, !failed
		enc := json.NewEncoder(opts.io.Out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
		if failed {
			return exitWith(exitError)
		}
		return nil
	}
	if errs == 0 && warns == 0 {
		return nil
	}
	fmt.Fprintf(opts.io.ErrOut, "implloop: lint: %s, %s in %s\n", words.Count(errs, "error"), words.Count(warns, "warning"), words.Count(len(opts.paths), "plan"))
	if errs > 0 || opts.strict {
		return exitWith(exitError)
	}
	return nil
}

// lintJSON is lint --json's answer.
type lintJSON struct {
	Plans    []lintPlanJSON `json:"plans"`
	Errors   int            `json:"errors"`
	Warnings int            `json:"warnings"`
	// OK: the exit status is 0 (no error; with --strict, no warning).
	OK bool `json:"ok"`
}

type lintPlanJSON struct {
	Path        string            `json:"path"`
	Reading     *plan.Reading     `json:"reading,omitempty"` // absent for a file that could not be read
	Diagnostics []plan.Diagnostic `json:"diagnostics"`
}
