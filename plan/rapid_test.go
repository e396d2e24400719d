package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// mdLine draws one line of plan-like markdown: task and non-task headings,
// checklist items at several depths, code fences, dependency lines, verify
// blocks, thematic breaks, blank lines and prose.
func mdLine(t *rapid.T, label string) string {
	return rapid.OneOf(
		rapid.Just(""),
		rapid.Just("   "),
		rapid.Just("---"),
		rapid.Just("```"),
		rapid.Just("```verify"),
		rapid.Just("~~~go"),
		rapid.Just("> quoted - [ ] x"),
		rapid.Just("<!-- ### Task 99 -->"),
		rapid.Just("Setext title"),
		rapid.Just("======"),
		rapid.Just("  ---"),
		rapid.Just("[ref]: /url"),
		rapid.Just("[x]: /url \"t\""),
		rapid.Just("trailing spaces   "),
		rapid.Just("\tTabbed - [ ] x"),
		rapid.Map(rapid.IntRange(1, 9), func(n int) string { return fmt.Sprintf("Depends on: %d", n) }),
		rapid.Map(rapid.IntRange(1, 9), func(n int) string { return fmt.Sprintf("depends on %d, %d", n, n+1) }),
		rapid.Map(rapid.IntRange(1, 9), func(n int) string { return fmt.Sprintf("- [ ] T%03d [P] do (depends on T%03d)", n, n+1) }),
		rapid.Map(rapid.IntRange(1, 12), func(n int) string {
			return fmt.Sprintf("%s Task %d: title %d", strings.Repeat("#", 1+n%4), n, n)
		}),
		rapid.Map(rapid.IntRange(1, 12), func(n int) string { return fmt.Sprintf("## Step %d. step", n) }),
		rapid.Map(rapid.IntRange(1, 6), func(n int) string { return fmt.Sprintf("## Phase %d: Group", n) }),
		rapid.Map(rapid.IntRange(1, 12), func(n int) string { return fmt.Sprintf("- [ ] %d. item", n) }),
		rapid.Map(rapid.IntRange(1, 12), func(n int) string { return fmt.Sprintf("- [x]* %d.%d sub", n, n) }),
		rapid.Map(rapid.IntRange(0, 6), func(n int) string { return strings.Repeat(" ", n) + "- [ ] nested or not" }),
		rapid.Map(rapid.IntRange(0, 6), func(n int) string { return strings.Repeat(" ", n) + "- plain item" }),
		rapid.Map(rapid.IntRange(0, 6), func(n int) string { return strings.Repeat(" ", n) + "  continuation text" }),
		rapid.Map(rapid.IntRange(1, 12), func(n int) string { return fmt.Sprintf("- [ ] `ab-%d` item → depends: ab-%d", n, n+1) }),
		rapid.Just("## Fix"),
		rapid.Just("### Changes to `src/a.go`"),
		rapid.StringMatching(`[a-z ]{0,20}`),
	).Draw(t, label)
}

func mdDoc(t *rapid.T) []string {
	n := rapid.IntRange(0, 40).Draw(t, "lines")
	lines := make([]string, n)
	for i := range lines {
		lines[i] = mdLine(t, fmt.Sprintf("line%d", i))
	}
	if rapid.Bool().Draw(t, "frontmatter") {
		lines = append([]string{"---", "title: x", "model: m", "---"}, lines...)
	}
	return lines
}

// TestCRLFTwins: a plan with CRLF line endings parses exactly like its LF
// twin (same tasks, ids, titles, lines, deps, verify, diagnostics, and texts
// equal once CRLF becomes LF).
func TestCRLFTwins(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		lines := mdDoc(t)
		ending := rapid.SampledFrom([]string{"", "\n"}).Draw(t, "final")
		crlf := []byte(strings.Join(lines, "\r\n") + strings.ReplaceAll(ending, "\n", "\r\n"))
		p, _ := Parse("plan.md", crlf)
		checkInvariants(t, crlf, p)
		assertTwins(t, crlf)
	})
}

// TestGeneratedHeadingPlans: a plan of N task headings with arbitrary bodies
// (that hold no heading) parses to exactly those N tasks.
func TestGeneratedHeadingPlans(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 15).Draw(t, "tasks")
		level := rapid.IntRange(2, 4).Draw(t, "level")
		word := rapid.SampledFrom([]string{"Task", "Step", "task"}).Draw(t, "word")
		sep := rapid.SampledFrom([]string{":", ".", " —", " -", ")"}).Draw(t, "sep")
		var b strings.Builder
		b.WriteString("# Plan\n\nPreamble.\n\n")
		var wantIDs, wantTitles []string
		for i := 1; i <= n; i++ {
			title := rapid.StringMatching(`[A-Za-z][a-z ]{0,15}[a-z]`).Draw(t, "title")
			fmt.Fprintf(&b, "%s %s %d%s %s\n\n", strings.Repeat("#", level), word, i, sep, title)
			wantIDs = append(wantIDs, fmt.Sprint(i))
			wantTitles = append(wantTitles, title)
			for j, m := 0, rapid.IntRange(1, 6).Draw(t, "body"); j < m; j++ {
				line := mdLine(t, "bodyline")
				if u := strings.TrimSpace(line); strings.HasPrefix(line, "#") || u == "======" || u == "---" || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") || line == "Setext title" {
					continue // a body holds no heading, setext underlines included (and no fence that could swallow the next one)
				}
				b.WriteString(line + "\n")
			}
			b.WriteString("\n")
		}
		src := []byte(b.String())
		p, _ := Parse("plan.md", src)
		checkInvariants(t, src, p)
		var titles []string
		for _, tk := range p.Tasks {
			titles = append(titles, tk.Title)
		}
		if !slices.Equal(p.IDs(), wantIDs) || !slices.Equal(titles, wantTitles) {
			t.Fatalf("ids %v titles %q, want %v %q\n%s", p.IDs(), titles, wantIDs, wantTitles, src)
		}
	})
}

// TestGeneratedChecklists: N top-level checklist items with nested content
// parse to N tasks whose text is exactly their item.
func TestGeneratedChecklists(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 15).Draw(t, "tasks")
		var b strings.Builder
		b.WriteString("# Tasks\n\n")
		var items []string
		for i := 1; i <= n; i++ {
			var it strings.Builder
			mark := rapid.SampledFrom([]string{"[ ]", "[x]", "[X]", "[ ]*"}).Draw(t, "mark")
			fmt.Fprintf(&it, "- %s %d. item %d\n", mark, i, i)
			for j, m := 0, rapid.IntRange(0, 4).Draw(t, "nested"); j < m; j++ {
				switch rapid.IntRange(0, 3).Draw(t, "kind") {
				case 0:
					fmt.Fprintf(&it, "  - [ ] %d.%d sub\n", i, j+1)
				case 1:
					it.WriteString("  - _Requirements: 1.1_\n")
				case 2:
					it.WriteString("  ```sh\n  - [ ] 99. in code\n  ```\n")
				case 3:
					it.WriteString("  Depends on: 1\n")
				}
			}
			items = append(items, it.String())
			b.WriteString(it.String())
			if rapid.Bool().Draw(t, "blank") {
				b.WriteString("\n")
			}
		}
		src := []byte(b.String())
		p, ds := Parse("plan.md", src)
		checkInvariants(t, src, p)
		if len(p.Tasks) != n {
			t.Fatalf("%d tasks, want %d: %v\n%s", len(p.Tasks), n, ds, src)
		}
		for i, tk := range p.Tasks {
			if tk.ID != fmt.Sprint(i+1) || tk.Text != items[i] {
				t.Fatalf("task %d: id %q text %q, want %q", i+1, tk.ID, tk.Text, items[i])
			}
		}
	})
}

// Found by TestCRLFTwins: which form wins weighed a task's bytes with its
// CRs against stray lines without them, so a plan whose stray text was
// just under half its span read as a checklist with CRLF and as sections
// with LF.
func TestCRLFTwinsOrphanShare(t *testing.T) {
	lines := []string{"- [ ] 1. item", "", "Depends on: 1", "  continuation text", "- [x]* 10.10 sub", "## Phase 1: Group"}
	assertTwins(t, []byte(strings.Join(lines, "\r\n")))
}

// TestWholePlanProperty: read as one task (--form whole), any plan with
// text is exactly one task that runs from the body's first line of text
// to its last, so preamble, task and trailer hold the whole body and the
// preamble and trailer are only blank lines and breaks. And the unforced
// whole reading happens only when no other form finds a task.
func TestWholePlanProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		src := []byte(strings.Join(mdDoc(t), "\n") + "\n")
		p, ds := ParseWith("p.md", src, Options{Form: FormWhole})
		checkInvariants(t, src, p)
		if len(p.Tasks) == 0 {
			if !HasErrors(ds) {
				t.Fatalf("no task and no error")
			}
			return
		}
		if len(p.Tasks) != 1 || p.Tasks[0].ID != "1" {
			t.Fatalf("forced whole: %d tasks, first id %q", len(p.Tasks), p.Tasks[0].ID)
		}
		body := string(src[p.BodyStart:])
		head := p.Preamble + p.Tasks[0].Text
		if !strings.HasPrefix(body, head) {
			t.Fatalf("preamble and task are not the start of the body")
		}
		if !onlyBreaks(p.Preamble) || !onlyBreaks(body[len(head):]) {
			t.Fatalf("text outside the one task: preamble %q, after it %q", p.Preamble, body[len(head):])
		}
		q, _ := Parse("p.md", src)
		if q.Form == FormWhole {
			for _, f := range Forms[:len(Forms)-1] {
				if r, _ := ParseWith("p.md", src, Options{Form: f}); len(r.Tasks) > 0 && f != FormTodos {
					t.Fatalf("read as the whole plan although form %s finds %d tasks", f, len(r.Tasks))
				}
			}
		}
	})
}

// onlyBreaks reports whether s is blank lines and thematic breaks.
func onlyBreaks(s string) bool {
	return strings.Trim(s, "-*_ \t\r\n") == ""
}
