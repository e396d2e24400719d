package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/worker"
)

type matrixOptions struct {
	io             *ioStreams
	plan           string
	json           bool
	maxWorkers     int
	includeChecked bool
}

func newMatrixCmd(io *ioStreams) *cobra.Command { return newMatrixCmdWith(io, matrixRun) }

// newMatrixCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newMatrixCmdWith(io *ioStreams, runF func(context.Context, *matrixOptions) error) *cobra.Command {
	o := &matrixOptions{io: io}
	cmd := &cobra.Command{
		Use:   "matrix PLAN",
		Short: "Print what a static matrix of workers needs: tasks, waves, a worker count",
		Long: `Matrix prints what an engine that shards up front (a GitHub Actions
matrix, a Kubernetes Indexed Job) needs to start 'implloop work': the
plan's tasks with the tasks each waits for, the waves they can run in (a
task's wave is one more than the latest wave of the tasks it waits for),
and how many workers help (the widest wave, at most --max-workers; more
would only wait). --json prints one object: plan, tasks (id, title, after,
wave), waves, workers, and worker (1..workers) for a matrix's list.

Read-only: it writes nothing.

` + exitStatusHelp(plainExits...),
		Example: `  implloop matrix plan.md
  implloop matrix plan.md --json --max-workers 8

  # In a GitHub Actions job whose output feeds the workers' matrix:
  #   echo "matrix=$(implloop matrix plan.md --json --max-workers 8)" >> "$GITHUB_OUTPUT"`,
		Args:              exactArgs(1, "a PLAN file"),
		ValidArgsFunction: completePlanFiles(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.maxWorkers < 1 || o.maxWorkers > worker.MaxMatrix {
				return usagef(fmt.Sprintf("give 1 to %d (GitHub Actions runs at most %d jobs of a matrix)", worker.MaxMatrix, worker.MaxMatrix), "--max-workers %d is out of range", o.maxWorkers)
			}
			o.plan = args[0]
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	cmd.Flags().IntVar(&o.maxWorkers, "max-workers", worker.MaxMatrix, "the most workers to suggest")
	cmd.Flags().BoolVar(&o.includeChecked, "include-checked", false, "count tasks already checked (- [x]) in the plan, as run --include-checked does")
	return cmd
}

func matrixRun(_ context.Context, o *matrixOptions) error {
	path := o.plan
	if !filepath.IsAbs(path) {
		path = filepath.Join(o.io.workingDir, path)
	}
	sel, err := loop.ReadPlan(path)
	if err != nil {
		return loopError(err)
	}
	sel.PlanPath = o.plan
	m := worker.MatrixOf(sel, o.maxWorkers, o.includeChecked)
	if o.json {
		enc := json.NewEncoder(o.io.Out)
		enc.SetEscapeHTML(false)
		return enc.Encode(m)
	}
	fmt.Fprintf(o.io.Out, "%s: %d task(s) in %d wave(s); %d worker(s) help\n", o.plan, len(m.Tasks), len(m.Waves), m.Workers)
	for i, w := range m.Waves {
		fmt.Fprintf(o.io.Out, "  wave %d: %s\n", i+1, strings.Join(w, ", "))
	}
	return nil
}
