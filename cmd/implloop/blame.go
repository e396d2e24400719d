package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/loop"
)

// blameOptions are what `blame` was asked.
type blameOptions struct {
	io     *ioStreams
	path   string // as typed: relative to the working directory
	run    string // "" for the latest
	lines  string // -L START,END
	from   int    // parsed from lines; 0: the first line
	to     int    // 0: the last line
	asJSON bool
}

func newBlameCmd(io *ioStreams) *cobra.Command { return newBlameCmdWith(io, blameRun) }

// newBlameCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newBlameCmdWith(io *ioStreams, runF func(context.Context, *blameOptions) error) *cobra.Command {
	o := &blameOptions{io: io}
	cmd := &cobra.Command{
		Use:   "blame FILE [-L START,END] [--run ID] [--json]",
		Short: "Say which task wrote each line of a file",
		Long: `Blame prints each line of FILE, as it is in the work tree now, with the
task that last wrote it: the task id and title, the run and the attempt
whose work it is (--json adds the agent and the model). The line itself
is printed as it is, tabs included. Lines no task wrote say where they came from: a
commit outside the loop, work that was there before a run, or an edit
made since the run's last boundary.

It is git's own blame along the run's boundary chain
(refs/implloop/runs/<run>, default: the latest run), read-only. The run's
plan is not in those boundaries (implloop keeps it beside them): blame of
the plan is refused; 'git blame' says who wrote it.

` + exitStatusHelp(longExits...),
		Example: `  # Which task wrote the login handler
  implloop blame src/login.go

  # Lines 10 to 20, for a script
  implloop blame src/login.go -L 10,20 --json`,
		Args: exactArgs(1, "one FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, to, err := parseLineRange(o.lines)
			if err != nil {
				return err
			}
			o.path, o.from, o.to = args[0], from, to
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "the run whose boundaries to blame along: an id or a unique prefix (default: the latest run)")
	cmd.Flags().StringVarP(&o.lines, "lines", "L", "", "only lines `START,END` (1-based; END may be omitted)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print each line with its run, task, title, attempt, agent and model as JSON")
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunIDs(io))
	return cmd
}

// blameRun prints loop.Blame of the file.
func blameRun(ctx context.Context, o *blameOptions) error {
	root, j, run, err := openRunRoot(o.io, o.run)
	if err != nil {
		return err
	}
	defer j.Close()
	path := journalPlanPath(root, o.io.workingDir, o.path)
	if path == run.PlanPath {
		// Boundaries keep the plan beside their trees, not in them: a
		// blame along them would call every line "changed since".
		return errorf("'git blame "+o.path+"' says who wrote it; 'implloop blame FILE' is for the files tasks write",
			"blame %s: it is run %s's plan, which implloop keeps beside its boundaries, not in them: no task wrote it", o.path, run.ID)
	}
	bl, err := j.Blame(ctx, run.ID, path, o.from, o.to)
	if errors.Is(err, loop.ErrNoBoundaryCommits) {
		return errorf("blame works on runs started by this implloop or later", "run %s has no boundary commits to blame from", run.ID)
	}
	if err != nil {
		return errorf("FILE must be a file of the repository, at the run's last boundary or in the work tree now", "blame %s: %w", o.path, err)
	}
	if o.asJSON {
		b, err := json.MarshalIndent(bl, "", "  ")
		if err != nil {
			return err
		}
		_, err = o.io.Out.Write(append(b, '\n'))
		return err
	}
	// The columns are aligned here, not by a tabwriter: a tab in the
	// file's line is the file's, and stays one.
	type row struct{ who, detail, line, text string }
	rows := make([]row, len(bl))
	var w [3]int
	for i, l := range bl {
		who := "task " + l.Task
		if l.Title != "" {
			who += " " + clipTitle(l.Title)
		}
		detail := fmt.Sprintf("%s a%d", l.Run, l.Attempt)
		switch {
		case l.Task == "":
			who, detail = "outside", l.Outside
		case l.Restored:
			detail += " (restored)"
		}
		rows[i] = row{who, detail, strconv.Itoa(l.Line) + ")", l.Text}
		w[0], w[1], w[2] = max(w[0], len([]rune(who))), max(w[1], len([]rune(detail))), max(w[2], len(rows[i].line))
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %s %*s %s\n", pad(r.who, w[0]), pad(r.detail, w[1]), w[2], r.line, r.text)
	}
	_, err = io.WriteString(o.io.Out, b.String())
	return err
}

// pad is s followed by spaces to n runes.
func pad(s string, n int) string {
	if k := len([]rune(s)); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// parseLineRange reads -L START,END.
func parseLineRange(s string) (int, int, error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, _ := strings.Cut(s, ",")
	from, err := strconv.Atoi(a)
	to := 0
	if err == nil && b != "" {
		to, err = strconv.Atoi(b)
	}
	if err != nil || from < 1 || (b != "" && to < from) {
		return 0, 0, usagef("-L 10,20 blames lines 10 to 20; -L 10, from line 10 on", "-L %q: not a line range", s)
	}
	return from, to, nil
}
