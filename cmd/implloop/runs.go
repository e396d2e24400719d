package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/implloop/implloop/loop"
	"github.com/spf13/cobra"
)

// runsOptions are what `runs` was asked.
type runsOptions struct {
	io     *ioStreams
	asJSON bool
}

func newRunsCmd(io *ioStreams) *cobra.Command { return newRunsCmdWith(io, runsRun) }

// newRunsCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newRunsCmdWith(io *ioStreams, runF func(*runsOptions) error) *cobra.Command {
	o := &runsOptions{io: io}
	cmd := &cobra.Command{
		Use:               "runs",
		Short:             "List the runs journaled in this repository, newest first",
		Long:              "List the runs journaled in this repository, newest first. Read-only. A run whose implloop (or the agent it left behind) is alive shows as RUNNING with its pid; one that died as UNFINISHED: resume it." + "\n\n" + exitStatusHelp(plainExits...),
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runF(o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON")
	return cmd
}

// runsRun lists the runs of the journal.
func runsRun(o *runsOptions) error {
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	j, err := loop.InspectIfAny(root)
	if err != nil {
		return err
	}
	if j == nil {
		if o.asJSON {
			fmt.Fprintln(o.io.Out, "[]")
		} else {
			fmt.Fprintln(o.io.ErrOut, "implloop: no runs yet; start one with 'implloop run PLAN'")
		}
		return nil
	}
	defer j.Close()
	runs, err := j.ListRuns()
	if err != nil {
		return err
	}
	running, err := loop.Running(root)
	if err != nil {
		return err
	}
	pulled, err := j.PulledTrust()
	if err != nil {
		return err
	}
	state := func(r loop.RunRecord) (string, int) {
		if pid, ok := running[r.ID]; ok && !r.Finished() {
			return "RUNNING", pid
		}
		return runVerdict(r.Verdict, r.Finished()), 0
	}
	if o.asJSON {
		type row struct {
			ID         string     `json:"id"`
			Parent     string     `json:"parent,omitempty"`
			Plan       string     `json:"plan"`
			Verdict    string     `json:"verdict"`
			PID        int        `json:"pid,omitempty"` // while RUNNING
			StartedAt  time.Time  `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at,omitempty"`
			// Pulled runs only: whether the trust rule trusts it, and why.
			Pulled  bool   `json:"pulled,omitempty"`
			Trusted *bool  `json:"trusted,omitempty"`
			Trust   string `json:"trust,omitempty"`
		}
		rows := []row{}
		for _, r := range runs {
			x := row{ID: r.ID, Parent: r.ParentID, Plan: r.PlanPath, StartedAt: r.StartedAt}
			x.Verdict, x.PID = state(r)
			if t, ok := pulled[r.ID]; ok {
				trusted := t.Trusted
				x.Pulled, x.Trusted, x.Trust = true, &trusted, t.String()
			}
			if r.Finished() {
				f := r.FinishedAt
				x.FinishedAt = &f
			}
			rows = append(rows, x)
		}
		enc := json.NewEncoder(o.io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(o.io.Out, 0, 4, 2, ' ', 0)
	// The origin column only once a run was pulled: until then every run
	// is this machine's.
	header := "RUN\tPARENT\tPLAN\tVERDICT\tSTARTED\tFINISHED"
	if len(pulled) > 0 {
		header += "\tORIGIN"
	}
	fmt.Fprintln(tw, header)
	for _, r := range runs {
		fin := "-"
		if r.Finished() {
			fin = r.FinishedAt.Local().Format("2006-01-02 15:04:05")
		}
		parent := r.ParentID
		if parent == "" {
			parent = "-"
		}
		verdict, pid := state(r)
		if pid != 0 {
			verdict = fmt.Sprintf("%s (pid %d)", verdict, pid)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", r.ID, parent, r.PlanPath, verdict,
			r.StartedAt.Local().Format("2006-01-02 15:04:05"), fin)
		if len(pulled) > 0 {
			origin := "here"
			if t, ok := pulled[r.ID]; ok {
				origin = "pulled, trusted (" + t.Who + ")"
				if !t.Trusted {
					origin = "pulled, NOT TRUSTED (" + t.Why + ")"
				}
			}
			fmt.Fprintf(tw, "\t%s", origin)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// runVerdict is a run's verdict as the journal has it: an unfinished run
// is running (runs tells, from the lock files) or died (kill -9, a crash)
// and can be resumed.
func runVerdict(v string, finished bool) string {
	if !finished || v == "" {
		return "UNFINISHED"
	}
	return v
}
