package plan

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/yuin/goldmark/ast"

	"github.com/implloop/implloop/internal/words"
)

// Passage is one part of a plan the reading passed over (a heading, a
// list, a table, a fenced block that is not a task) or a task a run
// skips, with why: what `implloop plan --explain-reading` prints.
type Passage struct {
	Line int    `json:"line"`
	What string `json:"what"` // `heading "Acceptance Criteria"`, `checklist (7 items)`
	Why  string `json:"why"`
}

// String is "line 12: heading \"Notes\": context after the last task".
func (p Passage) String() string { return fmt.Sprintf("line %d: %s: %s", p.Line, p.What, p.Why) }

// explain lists the top-level headings, lists, tables and fenced blocks
// that lie outside every task, and the tasks a run skips, each with the
// reason a reader passes it over. Only computed when asked
// (Options.Explain): it costs a pass over the top-level blocks.
func (r *parseState) explain() []Passage {
	if len(r.tasks) == 0 {
		return nil
	}
	e := explainer{r: r, first: r.tasks[0].Start, last: r.tasks[len(r.tasks)-1].End}
	out := e.headings()
	out = append(out, e.lists()...)
	out = append(out, e.tables()...)
	out = append(out, e.code()...)
	out = append(out, e.checked()...)
	sortPassages(out)
	return out
}

// explainer says, for each kind of top-level block, why the reading
// passed it over.
type explainer struct {
	r           *parseState
	first, last int // where the first task starts and the last ends
}

// where is why a block outside every task at off is context: where it
// stands among the tasks.
func (e explainer) where(off int) string {
	switch {
	case off < e.first:
		return "before the first task: shared context (the preamble)"
	case off >= e.last:
		return "after the last task: shared context"
	}
	return "between tasks: part of no task"
}

func (e explainer) inTask(off int) bool { return e.r.taskAt(off) >= 0 }

// headings: the headings outside every task.
func (e explainer) headings() []Passage {
	r := e.r
	var out []Passage
	// The group of numbered sections read, to tell another group apart.
	parents := headingParents(r.top.hs)
	for i, h := range r.top.hs {
		if e.inTask(h.start) {
			continue
		}
		why := e.where(h.start)
		switch {
		case r.facts(&r.top.hs[i]).aside:
			why = "checks the work or logs it (an aside): context"
		case r.facts(&r.top.hs[i]).shows:
			why = "a preview, example or template of tasks: context"
		case r.facts(&r.top.hs[i]).explains:
			why = "explains the work: context"
		case (h.label.kind == labelNumber || h.label.kind == labelPhase) && r.plan.Form == FormSections:
			under := "the plan's top"
			if parents[i] >= 0 {
				under = fmt.Sprintf("%q", words.Clip(r.top.hs[parents[i]].title, 40))
			}
			why = fmt.Sprintf("a numbered section of another group (under %s), not the one read; %s", under, e.where(h.start))
		case r.facts(&r.top.hs[i]).names:
			why = "names the task list; its tasks follow it"
		}
		out = append(out, Passage{r.lineOf(h.start) + 1, fmt.Sprintf("heading %q", words.Clip(h.title, 60)), why})
	}
	return out
}

// lists: the lists and checklists outside every task.
func (e explainer) lists() []Passage {
	r := e.r
	var out []Passage
	sections := sectionIndex{r: r, hs: r.top.hs}
	for _, l := range r.top.lists {
		if l.Pos() < 0 {
			continue
		}
		start := r.lineStartOf(r.abs(l.Pos()))
		section, aside, nearest := sections.at(start)
		if e.inTask(start) {
			continue
		}
		boxes, items := 0, 0
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			if item, ok := it.(*ast.ListItem); ok {
				items++
				if _, _, box := r.taskItem(item); box {
					boxes++
				}
			}
		}
		what := fmt.Sprintf("list (%d %s)", items, words.Plural(items, "item"))
		switch {
		case boxes > 0:
			what = fmt.Sprintf("checklist (%d %s)", boxes, words.Plural(boxes, "item"))
		case l.IsOrdered():
			what = fmt.Sprintf("numbered list (%d %s)", items, words.Plural(items, "item"))
		}
		why := e.where(start)
		switch {
		case aside:
			why = fmt.Sprintf("under %q, which checks the work or logs it (an aside): context", words.Clip(section, 40))
		case sections.sec != nil && r.facts(sections.sec).shows:
			why = fmt.Sprintf("under %q, a preview or example: context", words.Clip(section, 40))
		case nearest != nil && r.facts(nearest).explains:
			why = fmt.Sprintf("under %q, which explains the work: context", words.Clip(nearest.title, 40))
		case boxes > 0 || l.IsOrdered():
			why = fmt.Sprintf("not read as tasks: the plan's tasks are its %s; %s", formWhat[r.plan.Form], e.where(start))
		}
		out = append(out, Passage{r.lineOf(start) + 1, what, why})
	}
	return out
}

// tables: the tables outside every task.
func (e explainer) tables() []Passage {
	r := e.r
	var out []Passage
	for _, n := range r.top.tables {
		start := r.lineStartOf(r.abs(n.Lines().At(0).Start))
		if e.inTask(start) {
			continue
		}
		why := "no task id column (ID, #, Task, Step, Story): " + e.where(start)
		if r.plan.Form == FormTable {
			why = "no task ids in its first column: " + e.where(start)
		}
		out = append(out, Passage{r.lineOf(start) + 1, "table", why})
	}
	return out
}

// code: the fenced blocks outside every task that hold task-like lines.
func (e explainer) code() []Passage {
	r := e.r
	var out []Passage
	for _, span := range r.top.code {
		start := r.lines[span[0]]
		if e.inTask(start) || span[1] <= span[0] {
			continue
		}
		end := r.lineEnd(min(span[1], len(r.lines)-1))
		block := r.src[start:end]
		if bytes.Contains(block, []byte("- [ ]")) || bytes.Contains(block, []byte("### Task")) || bytes.Contains(block, []byte("## Task")) || bytes.Contains(block, []byte("\nTask 1")) {
			out = append(out, Passage{span[0] + 1, "fenced block", "holds task-like lines, but code is an example, never tasks: " + e.where(start)})
		}
	}
	return out
}

// checked: the tasks a run skips, done or dropped.
func (e explainer) checked() []Passage {
	var out []Passage
	for _, t := range e.r.tasks {
		if t.Checked {
			why := "done: a run skips it (--include-checked runs it)"
			if t.Status == StatusCancelled {
				why = "dropped: a run skips it (--include-checked runs it)"
			}
			what := "task " + t.ID
			if t.File != "" {
				what += " (" + t.File + ")"
			}
			out = append(out, Passage{t.Line, what, why})
		}
	}
	return out
}

// sortPassages orders passages by line, stably.
func sortPassages(ps []Passage) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
}
