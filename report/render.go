package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/implloop/implloop/internal/bytepath"
	"github.com/implloop/implloop/internal/words"
)

// Terminal writes the report as plain aligned text, the form printed at
// the end of a run and by `implloop show`.
func Terminal(w io.Writer, r *Report) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "implloop run %s: %s%s\n", r.RunID, r.Headline, skippedNote(r))
	fmt.Fprintf(&b, "plan %s (sha256 %s)\n", r.PlanPath, words.Short(r.PlanSHA256))
	if r.ParentID != "" {
		fmt.Fprintf(&b, "resumes run %s\n", r.ParentID)
	}
	fmt.Fprintf(&b, "started %s, wall %s%s\n", stamp(r.StartedAt), dur(r.WallMS), unfinishedNote(r))
	if r.Sandbox != "" {
		fmt.Fprintf(&b, "sandbox: %s (every live agent call ran in it)\n", r.Sandbox)
	}
	if len(r.Tasks) > 0 {
		b.WriteByte('\n')
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TASK\tSTATUS\tSOURCE\tATT\tTIME\tTOKENS IN\tOUT\tCOST\tTITLE")
		for _, t := range r.Tasks {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Status, taskSource(t), count(t.Attempts),
				taskDur(t), tokens(t.Live, t.Live.TokensIn), tokens(t.Live, t.Live.TokensOut),
				costOf(t.Live), oneLine(t.Title))
		}
		tw.Flush()
		for _, t := range r.Tasks {
			notes := taskNotes(t)
			if len(notes) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\ntask %s (%s):\n", t.ID, t.Status)
			for _, n := range notes {
				lines := strings.Split(strings.TrimRight(n.text, "\n"), "\n")
				if len(lines) > maxTermLines {
					lines = append([]string{fmt.Sprintf("... (%d lines; report.md has them all)", len(lines))}, lines[len(lines)-maxTermLines:]...)
				}
				if n.label == "" {
					fmt.Fprintf(&b, "  %s\n", lines[0])
				} else {
					fmt.Fprintf(&b, "  %s: %s\n", n.label, lines[0])
				}
				for _, l := range lines[1:] {
					fmt.Fprintf(&b, "    %s\n", l)
				}
			}
		}
	}
	writeLanes(&b, r)
	t := r.Totals
	fmt.Fprintf(&b, "\nunits: %d live, %d replayed; gates: %d run, %d replayed\n",
		t.Live.Units, t.Saved.Units, t.GatesLive, t.GatesReplayed)
	if t.Live.Units > 0 {
		fmt.Fprintf(&b, "spent: %s\n", spendLine(t.Live))
	}
	if t.Saved.Units > 0 {
		fmt.Fprintf(&b, "saved by replay: %s\n", spendLine(t.Saved))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeLanes draws a run whose tasks ran at once (--jobs) as lanes, one
// line per worker: each attempt as "task ID", start and end in seconds
// from the first ("lane 2: task 3 0.1-2.2s, task 5 (attempt 2) 2.3-4.0s"). Nothing for a run that ran one thing at a time.
func writeLanes(b *bytes.Buffer, r *Report) {
	lanes := 0
	for _, a := range r.Attempts {
		lanes = max(lanes, a.Lane+1)
	}
	if lanes < 2 {
		return
	}
	t0 := r.Attempts[0].Start
	b.WriteString("\nlanes (tasks that ran at once):\n")
	for l := range lanes {
		var parts []string
		for _, a := range r.Attempts {
			if a.Lane != l {
				continue
			}
			id := "task " + a.Task
			if a.Attempt > 1 {
				id += fmt.Sprintf(" (attempt %d)", a.Attempt)
			}
			parts = append(parts, fmt.Sprintf("%s %.1f-%.1fs", id, a.Start.Sub(t0).Seconds(), a.End.Sub(t0).Seconds()))
		}
		fmt.Fprintf(b, "  lane %d: %s\n", l+1, strings.Join(parts, ", "))
	}
}

// maxTermLines bounds a multi-line note (a gate's output tail) on a
// terminal; the markdown report keeps all of it.
const maxTermLines = 12

type note struct{ label, text string }

func taskNotes(t Task) []note {
	var ns []note
	if t.BlockReason != "" {
		ns = append(ns, note{"blocked", t.BlockReason})
	}
	if len(t.LostPaths) > 0 {
		shown := make([]string, len(t.LostPaths))
		for i, p := range t.LostPaths {
			shown[i] = bytepath.Display(p)
		}
		ns = append(ns, note{"lost", strings.Join(shown, ", ")})
	}
	for _, c := range t.Concerns {
		ns = append(ns, note{"concern", c})
	}
	for _, n := range t.Notes {
		ns = append(ns, note{"", n}) // an ordinary line: "replayed: run X ..."
	}
	if t.Fallback {
		who := t.Agent
		if t.Model != "" {
			who += " (" + t.Model + ")"
		}
		ns = append(ns, note{"fallback", who + " did the work, after a usage limit of the run's agent"})
	}
	return ns
}

// Markdown is the report as a markdown document (report.md).
func Markdown(r *Report) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# implloop run %s: %s%s\n\n", r.RunID, r.Headline, skippedNote(r))
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| plan | %s |\n", mdCode(r.PlanPath, true))
	fmt.Fprintf(&b, "| plan sha256 | `%s` |\n", r.PlanSHA256)
	if r.ParentID != "" {
		fmt.Fprintf(&b, "| resumes | `%s` |\n", r.ParentID)
	}
	fmt.Fprintf(&b, "| started | %s |\n", stamp(r.StartedAt))
	if r.Finished {
		fmt.Fprintf(&b, "| finished | %s |\n", stamp(r.EndedAt))
	} else {
		fmt.Fprintf(&b, "| finished | not recorded (last journal entry %s) |\n", stamp(r.EndedAt))
	}
	fmt.Fprintf(&b, "| wall time | %s |\n", dur(r.WallMS))
	fmt.Fprintf(&b, "| exit code | %d |\n", r.ExitCode)
	if r.Sandbox != "" {
		fmt.Fprintf(&b, "| sandbox | %s (every live agent call ran in it) |\n", r.Sandbox)
	}

	if len(r.Tasks) > 0 {
		b.WriteString("\n## Tasks\n\n")
		b.WriteString("| task | title | status | source | attempts | time | tokens in | tokens out | cost |\n")
		b.WriteString("|---|---|---|---|---:|---:|---:|---:|---:|\n")
		for _, t := range r.Tasks {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(t.ID), mdCell(t.Title), t.Status,
				taskSource(t), count(t.Attempts), taskDur(t), tokens(t.Live, t.Live.TokensIn),
				tokens(t.Live, t.Live.TokensOut), costOf(t.Live))
		}
		for _, t := range r.Tasks {
			if t.BlockReason == "" && len(t.LostPaths) == 0 && len(t.Concerns) == 0 && len(t.Notes) == 0 && !t.Fallback {
				continue
			}
			fmt.Fprintf(&b, "\n### Task %s: %s\n\n", t.ID, t.Status)
			if t.BlockReason != "" {
				fence := strings.Repeat("`", max(3, longestRun(t.BlockReason, '`')+1))
				fmt.Fprintf(&b, "Blocked:\n\n%s\n%s\n%s\n\n", fence, strings.TrimRight(t.BlockReason, "\n"), fence)
			}
			if len(t.LostPaths) > 0 {
				b.WriteString("Lost paths (`implloop restore` brings them back):\n\n")
				for _, p := range t.LostPaths {
					fmt.Fprintf(&b, "- %s\n", mdCode(bytepath.Display(p), false))
				}
				b.WriteByte('\n')
			}
			if t.Fallback {
				who := mdCode(t.Agent, false)
				if t.Model != "" {
					who += " (" + mdCode(t.Model, false) + ")"
				}
				fmt.Fprintf(&b, "Done by %s, a fallback, after a usage limit of the run's agent.\n\n", who)
			}
			if len(t.Concerns) > 0 {
				b.WriteString("Concerns:\n\n")
				for _, c := range t.Concerns {
					fmt.Fprintf(&b, "- %s\n", oneLine(c))
				}
				b.WriteByte('\n')
			}
			for _, n := range t.Notes {
				fmt.Fprintf(&b, "%s\n\n", oneLine(n))
			}
			trimBlank(&b)
		}
	}
	t := r.Totals
	b.WriteString("\n## Totals\n\n")
	b.WriteString("| | live (spent) | replayed (saved) |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| units | %d | %d |\n", t.Live.Units, t.Saved.Units)
	fmt.Fprintf(&b, "| tokens in | %s | %s |\n", tokens(t.Live, t.Live.TokensIn), tokens(t.Saved, t.Saved.TokensIn))
	fmt.Fprintf(&b, "| tokens out | %s | %s |\n", tokens(t.Live, t.Live.TokensOut), tokens(t.Saved, t.Saved.TokensOut))
	fmt.Fprintf(&b, "| cache read | %s | %s |\n", tokens(t.Live, t.Live.CacheRead), tokens(t.Saved, t.Saved.CacheRead))
	fmt.Fprintf(&b, "| cache write | %s | %s |\n", tokens(t.Live, t.Live.CacheWrite), tokens(t.Saved, t.Saved.CacheWrite))
	fmt.Fprintf(&b, "| cost | %s | %s |\n", costOf(t.Live), costOf(t.Saved))
	fmt.Fprintf(&b, "| gates | %d | %d |\n", t.GatesLive, t.GatesReplayed)
	return b.Bytes()
}

func trimBlank(b *bytes.Buffer) {
	for bytes.HasSuffix(b.Bytes(), []byte("\n\n")) {
		b.Truncate(b.Len() - 1)
	}
}

func skippedNote(r *Report) string {
	if r.Outcome.Skipped == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d skipped)", r.Outcome.Skipped)
}

func unfinishedNote(r *Report) string {
	if r.Finished {
		return ""
	}
	return " (run not finished: still running or killed; wall time to its last journal entry)"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// dur renders milliseconds compactly: 850ms, 12.3s, 4m05s, 2h03m.
func dur(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func taskDur(t Task) string {
	if t.DurationMS == 0 && t.Status != "done" {
		return "-"
	}
	return dur(t.DurationMS)
}

// taskSource is a task's source column: where its work came from, and
// whether its live calls ran sandboxed.
func taskSource(t Task) string {
	if t.Sandboxed {
		return source(t.Source) + ", sandboxed"
	}
	return source(t.Source)
}

func source(s string) string {
	if s == "" || s == "none" {
		return "-"
	}
	return s
}

func count(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// tokens shows "-" for a task with no live unit: nothing was spent, and
// "0" would claim an agent reported zero.
// tokens is a token figure of s: "-" for no unit, "not reported" when
// no unit's agent reported tokens.
func tokens(s Spend, n int64) string {
	switch {
	case s.Units == 0:
		return "-"
	case s.TokensReported == 0:
		return "not reported"
	}
	return words.Thousands(n)
}

// costOf is s's cost: "-" for no unit, "not reported" when no unit's
// agent reported a cost.
func costOf(s Spend) string {
	switch {
	case s.Units == 0:
		return "-"
	case s.CostReported == 0:
		return "not reported"
	}
	return usd(s.CostUSD)
}

// spendLine is a total: "12,345 tokens in, 678 out, $0.1234", saying
// what was not reported, and by how many calls when only some did.
func spendLine(s Spend) string {
	tok := "tokens not reported"
	if s.TokensReported > 0 {
		tok = words.Thousands(s.TokensIn) + " tokens in, " + words.Thousands(s.TokensOut) + " out"
		if s.TokensReported < s.Units {
			tok += fmt.Sprintf(" (reported by %d of %d calls)", s.TokensReported, s.Units)
		}
	}
	cost := "cost not reported"
	if s.CostReported > 0 {
		cost = usd(s.CostUSD)
		if s.CostReported < s.Units {
			cost += fmt.Sprintf(" (reported by %d of %d calls)", s.CostReported, s.Units)
		}
	}
	return tok + ", " + cost
}

func usd(c float64) string { return fmt.Sprintf("$%.4f", c) }

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func mdCell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

// mdCode is s as an inline code span, byte-exact: the delimiter is one
// backtick longer than any run inside; in a table cell pipes are escaped.
func mdCode(s string, cell bool) string {
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	return fence + pad + s + pad + fence
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
