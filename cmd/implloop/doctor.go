package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/loop"
)

// doctorOptions are what `doctor` was asked.
type doctorOptions struct {
	io     *ioStreams
	asJSON bool
}

func newDoctorCmd(io *ioStreams) *cobra.Command { return newDoctorCmdWith(io, doctorRun) }

// newDoctorCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newDoctorCmdWith(io *ioStreams, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	o := &doctorOptions{io: io}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the journal, its blobs, implloop's refs and the boundary index; say how to repair (read-only)",
		Long: `Check implloop's state in this repository and say, for each thing wrong,
how to repair it:

  - the journal's invariants: every completed unit's preimage digests to its
    identity, every blob a unit names is in the blob store, every replay
    points at a unit that did the work, no finished run has a running task
    or unit, every run's boundaries are numbered without gaps;
  - every run's boundary commits and its refs/implloop/runs/<run> ref (a
    run without it has snapshots open to git gc), refs that point at
    nothing, and refs of runs this journal does not hold;
  - the private boundary index against git's objects (after a run was
    forgotten and git gc ran).

Findings are errors (something implloop promises is broken), warnings
(worth repairing) or info (what a user may have done on purpose). It only
reads: nothing is written to the journal, the work tree or .git.

` + exitStatusHelp(plainExits...) + `
Exit 1 also when an error was found.`,
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the findings as one JSON object")
	return cmd
}

func doctorRun(ctx context.Context, o *doctorOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	rep, err := loop.Doctor(ctx, root)
	if err != nil {
		return loopError(err)
	}
	if rep.Findings == nil {
		rep.Findings = []loop.Finding{}
	}
	if o.asJSON {
		enc := json.NewEncoder(o.io.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(o.io.Out, "journal: %s (%d run(s)); %d implloop ref(s)\n", rep.Journal, rep.Runs, rep.Refs)
		for _, f := range rep.Findings {
			run := ""
			if f.Run != "" {
				run = " run " + f.Run + ":"
			}
			fmt.Fprintf(o.io.Out, "%s: %s:%s %s\n", f.Severity, f.Area, run, f.Problem)
			if f.Repair != "" {
				fmt.Fprintf(o.io.Out, "  repair: %s\n", f.Repair)
			}
		}
		if len(rep.Findings) == 0 {
			fmt.Fprintln(o.io.Out, "no problems found")
		}
	}
	if n := rep.Errors(); n > 0 {
		return errorf("repair each error as its line says, then run 'implloop doctor' again", "doctor found %d error(s)", n)
	}
	return nil
}
