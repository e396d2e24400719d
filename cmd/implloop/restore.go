package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/guard"
)

func newRestoreCmd(io *ioStreams) *cobra.Command {
	var runRef, taskID string
	var force bool
	cmd := &cobra.Command{
		Use:   "restore [--run ID] [--task ID] [PATH...] [--force]",
		Short: "Bring back content the discard guard saw a task throw away",
		Long: `Restore writes back, byte for byte, the content of every path the discard
guard saw lost in a run (default: the latest run), from the run's boundary
commits in the git object store (refs/implloop/runs/<run>). Limit it to one
task with --task or to some paths by naming them.

A path whose current content is neither the lost content nor what it was
based on has been edited since; restore refuses to overwrite it unless
--force.

` + exitStatusHelp(),
		Example: `  # Everything task 3 of the latest run threw away
  implloop restore --task 3

  # One path, lost in a given run
  implloop restore --run r-20261130-054012-3f9a src/login.go

  # A path edited since it was lost: overwrite it with the lost content anyway
  implloop restore src/login.go --force`,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := repoRoot(io.workingDir)
			if err != nil {
				return err
			}
			j, run, err := openRun(io, []string{runRef})
			if err != nil {
				return err
			}
			defer j.Close()
			bs, err := j.Boundaries(run.ID)
			if err != nil {
				return err
			}
			// PATHs are as the user typed them (relative to the working
			// directory); lost paths are relative to the repo root.
			want := map[string]bool{}
			for _, a := range args {
				want[journalPlanPath(root, io.workingDir, a)] = true
			}
			// The newest loss of each path wins: a path lost, restored and
			// lost again comes back as it was the last time.
			latest := map[string]int{}
			var lost []boundary.LostContent
			for _, b := range bs {
				if taskID != "" && b.AfterTask != taskID {
					continue
				}
				var v guard.Verdict
				if len(b.Verdict) == 0 || json.Unmarshal(b.Verdict, &v) != nil {
					continue
				}
				for _, l := range v.Lost {
					if len(want) > 0 && !want[l.Path] {
						continue
					}
					if i, ok := latest[l.Path]; ok {
						lost[i] = l
						continue
					}
					latest[l.Path] = len(lost)
					lost = append(lost, l)
				}
			}
			for p := range want {
				if _, ok := latest[p]; !ok {
					return errorf("run 'implloop show "+run.ID+"' for the lost paths", "run %s lost no path %q", run.ID, p)
				}
			}
			if len(lost) == 0 {
				fmt.Fprintf(io.ErrOut, "implloop: run %s lost nothing; nothing to restore\n", run.ID)
				return nil
			}
			results, rerr := boundary.Restore(cmd.Context(), root, lost, force)
			for _, r := range results {
				line := fmt.Sprintf("%-9s %s", r.Action, r.Path)
				if r.Reason != "" {
					line += ": " + r.Reason
				}
				fmt.Fprintln(io.Out, line)
			}
			if rerr != nil {
				if errors.Is(rerr, boundary.ErrRefused) {
					return errorf("look at the path first; --force overwrites it with the lost content", "%s", rerr)
				}
				return rerr
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runRef, "run", "", "the run (id or unique prefix; default: the latest)")
	cmd.Flags().StringVar(&taskID, "task", "", "only paths lost by this task")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite paths edited since they were lost")
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunIDs(io))
	_ = cmd.RegisterFlagCompletionFunc("task", completeRunTasks(io, runFlag))
	return cmd
}
