package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/internal/words"
	"github.com/implloop/implloop/plan"
)

type planOptions struct {
	io        *ioStreams
	path      string
	json      bool
	taskRange string
	form      formFlag
	explain   bool
}

func newPlanCmd(io *ioStreams) *cobra.Command {
	return newPlanCmdWith(io, planRun)
}

// newPlanCmdWith takes the function that does the work, so a test can check
// flag parsing alone.
func newPlanCmdWith(io *ioStreams, runF func(*planOptions) error) *cobra.Command {
	opts := &planOptions{io: io}
	cmd := &cobra.Command{
		Use:   "plan PLAN",
		Short: "Show the tasks implloop extracts from a plan (read-only)",
		Long: `Show the tasks implloop extracts from a markdown plan: the plan's sha256,
the preamble's sha256, and for every task its id, title, line range, whether
it is checked, and the sha256 of its text (CRLF turned into LF), which is
what a run's identity covers. Diagnostics go to stderr; see 'implloop lint'.

The "tasks" line says how the tasks were read (the form and the count),
with a note for what was left out; --form forces a form (see
docs/plan-format.md for the forms and their precedence). With
--explain-reading, one line per heading, list, table and fenced block
that is no task (and per task a run skips) says why it was passed over.

PLAN may be a folder of task files, one task per numbered file
(tasks/task-01.md ..., CCPM's .claude/epics/NAME/), read in the order of
their numbers with README.md or epic.md as the shared context.

It only reads the plan: nothing is written anywhere.

Task range (--task-range): ` + extractor.RangeForms + `.
Ids compare by their numeric part, so 10:13 also selects T010 to T013, and
3 selects 3, 3.1 and 3.2.

` + exitStatusHelp(plainExits...),
		Example: `  # The tasks implloop sees, before a first run
  implloop plan plan.md

  # The ids and titles of tasks 10 to 13, for a script
  implloop plan plan.md --task-range 10:13 --json | jq -r '.tasks[] | "\(.id) \(.title)"'`,
		Args:              exactArgs(1, "one plan file"),
		ValidArgsFunction: completePlanFiles(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return runF(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON instead of a table")
	cmd.Flags().StringVar(&opts.taskRange, "task-range", "", "only these tasks (10:13, 10:, :5, 7, T010:T013)")
	cmd.Flags().BoolVar(&opts.explain, "explain-reading", false, "also say, for each heading, list, table and fenced block that is no task, why it was passed over")
	_ = cmd.RegisterFlagCompletionFunc("task-range", completeTaskRange(io, planArg))
	opts.form.register(cmd)
	return cmd
}

// planJSON is the output of `implloop plan --json`.
type planJSON struct {
	Path           string         `json:"path"`
	SHA256         string         `json:"sha256"`
	PreambleSHA256 string         `json:"preamble_sha256"`
	Form           string         `json:"form"`
	Reading        string         `json:"reading"`
	Notes          []string       `json:"notes,omitempty"`
	PassedOver     []plan.Passage `json:"passed_over,omitempty"`
	Count          int            `json:"count"`
	Range          string         `json:"range,omitempty"`
	FrontMatter    map[string]any `json:"front_matter,omitempty"`
	// Waves is how many waves the tasks form for --jobs (see Wave).
	Waves int        `json:"waves"`
	Tasks []taskJSON `json:"tasks"`
}

type taskJSON struct {
	ID       string   `json:"id"`
	Ordinal  int      `json:"ordinal"`
	Title    string   `json:"title"`
	Line     int      `json:"line"`
	EndLine  int      `json:"end_line"`
	Checked  bool     `json:"checked"`
	Status   string   `json:"status,omitempty"` // the plan's mark beyond [ ]/[x]: "in progress", "cancelled", "done" (✅)
	Optional bool     `json:"optional,omitempty"`
	Section  string   `json:"section,omitempty"`
	File     string   `json:"file,omitempty"`
	Labels   []string `json:"labels,omitempty"`
	Deps     []string `json:"deps,omitempty"`
	// After is what the task waits for before it may start (the tasks it
	// depends on, by the rule in docs/plan-format.md, "Parallel tasks").
	After []string `json:"after,omitempty"`
	// Wave is the 1-based wave the task starts in when tasks may run at
	// once (--jobs 2 or more): the tasks of one wave run together.
	Wave       int    `json:"wave"`
	Verify     string `json:"verify,omitempty"`
	TextSHA256 string `json:"text_sha256"`
}

func planRun(opts *planOptions) error {
	r, err := extractor.ParseRange(opts.taskRange)
	if err != nil {
		return usagef("run 'implloop plan --help' for the task range forms", "%s", err)
	}
	popts, err := opts.form.options("plan")
	if err != nil {
		return err
	}
	popts.Explain = opts.explain
	p, diags, err := plan.ReadFileWith(opts.path, popts)
	if err != nil {
		return errorf("check the path; a plan is a markdown file of at most 32 MiB", "%s: %s", opts.path, err)
	}
	printDiagnostics(opts.io.ErrOut, diags)
	failed := plan.HasErrors(diags)
	if len(p.Tasks) == 0 {
		return exitWith(exitError)
	}
	sel, err := extractor.Select(p, r)
	if err != nil {
		var empty *extractor.EmptyRangeError
		if errors.As(err, &empty) {
			return errorf("pick ids from that list", "%s", err)
		}
		return err
	}
	byOrdinal := map[int]plan.Task{}
	for _, t := range p.Tasks {
		byOrdinal[t.Ordinal] = t
	}
	out := planJSON{
		Path:           sel.PlanPath,
		SHA256:         sel.PlanSHA256,
		PreambleSHA256: sel.PreambleSHA256,
		Form:           string(p.Form),
		Reading:        p.Reading.String(),
		Notes:          p.Reading.Notes,
		PassedOver:     p.Reading.PassedOver,
		Count:          sel.Count,
		Range:          r.String(),
		FrontMatter:    p.FrontMatter,
		Tasks:          make([]taskJSON, 0, len(sel.Tasks)),
	}
	after, waves := extractor.After(sel.Tasks), extractor.Waves(sel.Tasks)
	out.Waves = len(waves)
	wave := map[string]int{}
	for i, w := range waves {
		for _, t := range w {
			wave[t.ID] = i + 1
		}
	}
	for _, t := range sel.Tasks {
		pt := byOrdinal[t.Ordinal]
		out.Tasks = append(out.Tasks, taskJSON{
			ID: t.ID, Ordinal: t.Ordinal, Title: t.Title,
			Line: t.Line, EndLine: t.EndLine, Checked: t.Checked,
			Status: string(pt.Status), Optional: pt.Optional, Section: pt.Section, File: pt.File, Labels: pt.Labels,
			Deps: t.Deps, After: after[t.ID], Wave: wave[t.ID], Verify: t.Verify,
			TextSHA256: extractor.SHA256Hex(t.Text),
		})
	}
	if opts.json {
		enc := json.NewEncoder(opts.io.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		printPlanTable(opts.io.Out, &out, len(sel.Preamble), p.Reading.Source())
	}
	if failed {
		return exitWith(exitError)
	}
	return nil
}

func printPlanTable(w io.Writer, p *planJSON, preambleBytes int, source string) {
	fmt.Fprintf(w, "plan      %s\n", p.Path)
	fmt.Fprintf(w, "sha256    %s\n", p.SHA256)
	fmt.Fprintf(w, "preamble  %s (%d bytes)\n", p.PreambleSHA256, preambleBytes)
	tasks := fmt.Sprintf("%d", p.Count)
	if p.Range != "" {
		tasks = fmt.Sprintf("%d of %d (range %s)", len(p.Tasks), p.Count, p.Range)
	}
	fmt.Fprintf(w, "tasks     %s, form %s (%s)\n", tasks, p.Form, source)
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note      %s\n", n)
	}
	if p.Waves < len(p.Tasks) {
		fmt.Fprintf(w, "waves     %s (with --jobs 2 or more, the tasks of a wave run at once)\n", wavesLine(p.Tasks))
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLINES\tDONE\tDEPS\tTEXT SHA256\tTITLE")
	for _, t := range p.Tasks {
		done := "[ ]"
		if t.Checked {
			done = "[x]"
		}
		deps := strings.Join(t.Deps, ",")
		if deps == "" {
			deps = "-"
		}
		title := t.Title
		if t.Optional {
			title += " (optional)"
		}
		lines := fmt.Sprintf("%d-%d", t.Line, t.EndLine)
		if t.File != "" {
			lines = t.File + ":" + lines
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, lines, done, deps, words.Short(t.TextSHA256), oneLine(title))
	}
	tw.Flush()
	if len(p.PassedOver) > 0 {
		fmt.Fprintln(w)
		for _, ps := range p.PassedOver {
			fmt.Fprintf(w, "passed    %s\n", oneLine(ps.String()))
		}
	}
}

// wavesLine shows the waves as "1 | 2 3 4 | 5".
func wavesLine(tasks []taskJSON) string {
	var b strings.Builder
	for i, t := range tasks {
		switch {
		case i == 0:
		case t.Wave != tasks[i-1].Wave:
			b.WriteString(" | ")
		default:
			b.WriteByte(' ')
		}
		b.WriteString(t.ID)
	}
	return b.String()
}

// oneLine keeps a title on one table row.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// printDiagnostics writes one line per diagnostic.
func printDiagnostics(w io.Writer, diags []plan.Diagnostic) {
	for _, d := range diags {
		fmt.Fprintln(w, d.String())
	}
}
