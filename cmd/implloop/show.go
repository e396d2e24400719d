package main

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/report"
)

func newShowCmd(io *ioStreams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [RUN]",
		Short: "Print a run's end report (default: the latest run)",
		Long: `Print a run's end report, rebuilt from the journal (default: the latest
run). Every figure comes from journal rows: tasks done, replayed and live
units, tokens and cost. A run that was killed shows as UNFINISHED with what
it had done. Read-only.

` + exitStatusHelp(),
		Example: `  implloop show
  implloop show r-20261130-0540 --json | jq .outcome`,
		Args: maxArgs(1, "at most one RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			j, run, err := openRun(io, args)
			if err != nil {
				return err
			}
			defer j.Close()
			rep, err := report.Build(j, run.ID)
			if err != nil {
				return err
			}
			if asJSON {
				_, err := io.Out.Write(report.JSON(rep))
				return err
			}
			return report.Terminal(io.Out, rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// renderReport is the end report a run prints.
func renderReport(out *loop.Outcome) string {
	var b bytes.Buffer
	_ = report.Terminal(&b, out.Report)
	if out.ReportPath != "" {
		fmt.Fprintf(&b, "report: %s\n", out.ReportPath)
	}
	return b.String()
}

// openJournalRO opens the journal read-only; nil when nothing has run yet.
func openJournalRO(root string) (*cache.Journal, error) {
	j, err := cache.OpenReadOnly(root)
	if errors.Is(err, cache.ErrNoJournal) {
		return nil, nil
	}
	return j, err
}
