package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/travel"
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
	l := runsTable{runs: runs, running: running, pulled: pulled}
	if o.asJSON {
		return l.printJSON(o.io.Out)
	}
	return l.printTable(o.io.Out)
}

// runsTable is what runs prints: the journaled runs, newest first; the
// process of each running one (loop.Running); the trust rule's word on
// each pulled one.
type runsTable struct {
	runs    []loop.RunRecord
	running map[string]int
	pulled  map[string]travel.Trust
}

// state is run r's verdict, RUNNING with its process while it runs.
func (l runsTable) state(r loop.RunRecord) (string, int) {
	if pid, ok := l.running[r.ID]; ok && !r.Finished() {
		return "RUNNING", pid
	}
	return runVerdict(r.Verdict, r.Finished()), 0
}

// printJSON writes the runs as a JSON array.
func (l runsTable) printJSON(w io.Writer) error {
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
	for _, r := range l.runs {
		x := row{ID: r.ID, Parent: r.ParentID, Plan: r.PlanPath, StartedAt: r.StartedAt}
		x.Verdict, x.PID = l.state(r)
		if t, ok := l.pulled[r.ID]; ok {
			trusted := t.Trusted
			x.Pulled, x.Trusted, x.Trust = true, &trusted, t.String()
		}
		if r.Finished() {
			f := r.FinishedAt
			x.FinishedAt = &f
		}
		rows = append(rows, x)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// printTable writes the runs as a table; the origin column only once a
// run was pulled: until then every run is this machine's.
func (l runsTable) printTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "RUN\tPARENT\tPLAN\tVERDICT\tSTARTED\tFINISHED"
	if len(l.pulled) > 0 {
		header += "\tORIGIN"
	}
	fmt.Fprintln(tw, header)
	for _, r := range l.runs {
		fin := "-"
		if r.Finished() {
			fin = r.FinishedAt.Local().Format("2006-01-02 15:04:05")
		}
		parent := r.ParentID
		if parent == "" {
			parent = "-"
		}
		verdict, pid := l.state(r)
		if pid != 0 {
			verdict = fmt.Sprintf("%s (pid %d)", verdict, pid)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", r.ID, parent, r.PlanPath, verdict,
			r.StartedAt.Local().Format("2006-01-02 15:04:05"), fin)
		if len(l.pulled) > 0 {
			origin := "here"
			if t, ok := l.pulled[r.ID]; ok {
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
