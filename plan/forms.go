package plan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/yuin/goldmark/ast"

	"github.com/implloop/implloop/internal/words"
)

// Forms lists every task form, in order of precedence: when a plan's form
// is not forced, the first of these that finds tasks and leaves little of
// the plan between its tasks defines them (see [Plan.Reading]).
var Forms = []Form{FormTodos, FormHeadings, FormXML, FormChecklist, FormNumbered, FormTable, FormSections, FormWhole}

// FormNames is Forms as text, for messages and help: "todos, headings, ...".
func FormNames() string {
	names := make([]string, len(Forms))
	for i, f := range Forms {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// ParseForm returns the form named s, or an error naming the forms.
func ParseForm(s string) (Form, error) {
	for _, f := range Forms {
		if string(f) == s {
			return f, nil
		}
	}
	return FormNone, fmt.Errorf("unknown plan form %q (known: %s)", s, FormNames())
}

// formWhat says what a form's tasks are, for the reading summary.
var formWhat = map[Form]string{
	FormTodos:     "front matter todos",
	FormHeadings:  "task headings",
	FormXML:       "<task> blocks",
	FormChecklist: "checklist items",
	FormNumbered:  "numbered list items",
	FormTable:     "table rows",
	FormSections:  "numbered section headings",
	FormWhole:     "the whole plan",
}

// Reading says how a plan's tasks were read, for `implloop plan` and
// `implloop lint`: the form, how many tasks, and notes on what was left
// out or could have been read otherwise.
type Reading struct {
	Form   Form     `json:"form"`
	Count  int      `json:"count"`
	Forced string   `json:"forced,omitempty"` // "--form", "front matter" when forced
	Notes  []string `json:"notes,omitempty"`
}

// String is the one-line summary: "24 tasks from task headings".
func (rd Reading) String() string {
	if rd.Form == FormNone {
		return "no tasks"
	}
	return fmt.Sprintf("%s from %s", words.Count(rd.Count, "task"), rd.Source())
}

// Source says what the tasks are: "task headings", "checklist items
// (forced by --form)".
func (rd Reading) Source() string {
	s := formWhat[rd.Form]
	if rd.Forced != "" {
		s += " (forced by " + rd.Forced + ")"
	}
	return s
}

// reading is one candidate reading of a plan.
type reading struct {
	form    Form
	tasks   []taskBuild
	notes   []string
	pending []pendingDiag // diagnostics that apply only if this reading is chosen
	weak    bool          // a last resort: only asides ("Definition of done"), or any numbered list
}

type pendingDiag struct {
	line   int
	sev    Severity
	format string
	args   []any
}

func (rd *reading) warn(line int, format string, args ...any) {
	rd.pending = append(rd.pending, pendingDiag{line, SeverityWarning, format, args})
}

// maxOrphanShare is how much of the stretch from a reading's first task to
// its last may lie outside every task before a later form is preferred:
// a checklist of "COMPLETE" markers closing each numbered heading leaves
// nearly all the instructions between its items.
const maxOrphanShare = 0.5

// findTasks decides the plan's form and the tasks' spans, ids and titles.
func (r *parseState) findTasks(doc ast.Node) {
	top := r.collectTop(doc)
	readers := map[Form]func(topBlocks) reading{
		FormTodos:     r.readTodos,
		FormHeadings:  r.readHeadings,
		FormXML:       r.readXML,
		FormChecklist: r.readChecklist,
		FormNumbered:  r.readNumbered,
		FormTable:     r.readTable,
		FormSections:  r.readSections,
		FormWhole:     r.readWhole,
	}
	var chosen reading
	if f, by := r.forcedForm(); f != FormNone {
		chosen = readers[f](top)
		r.plan.Reading.Forced = by
		if len(chosen.tasks) == 0 {
			r.diag(1, 1, SeverityError, "no tasks read as form %s (forced by %s); remove it to let implloop pick the form", string(f), by)
		}
	} else {
		var best, weak reading
		bestShare := 2.0
		for _, f := range Forms {
			rd := readers[f](top)
			switch {
			case len(rd.tasks) == 0:
				continue
			case rd.weak:
				if weak.form == FormNone {
					weak = rd
				}
				continue
			}
			share := r.orphanShare(rd.tasks)
			if share <= maxOrphanShare {
				chosen = rd
				break
			}
			if share < bestShare {
				best, bestShare = rd, share
			}
		}
		switch {
		case chosen.form != FormNone:
		case best.form != FormNone:
			chosen = best
		default:
			chosen = weak
		}
		r.noteLegacy(top, &chosen)
	}
	if len(chosen.tasks) == 0 {
		chosen = reading{}
	}
	r.tasks = chosen.tasks
	r.plan.Form = chosen.form
	r.plan.Reading.Form = chosen.form
	r.plan.Reading.Count = len(chosen.tasks)
	r.plan.Reading.Notes = chosen.notes
	for _, d := range chosen.pending {
		r.diag(d.line, 1, d.sev, d.format, d.args...)
	}
	if chosen.form == FormHeadings {
		r.warnStrayChecklist(top)
	}
}

// forcedForm returns the form --form or the front matter's "form:" asks
// for, and which of them did.
func (r *parseState) forcedForm() (Form, string) {
	if r.opts.Form != FormNone {
		return r.opts.Form, "--form"
	}
	if s, ok := r.plan.FrontMatter["form"].(string); ok {
		if f, err := ParseForm(s); err == nil {
			return f, "front matter"
		}
	}
	return FormNone, ""
}

// noteLegacy warns when the chosen reading differs from the one the two
// original forms alone give (task headings, else every checklist item):
// that reading was plausible too, and --form can ask for it.
func (r *parseState) noteLegacy(top topBlocks, chosen *reading) {
	if chosen.form == FormHeadings && slices.ContainsFunc(top.hs, func(h heading) bool { return h.isTask }) {
		return
	}
	if chosen.form == FormChecklist {
		r.noteSections(top, chosen)
		return
	}
	if chosen.form == FormNone {
		return
	}
	var items []checkItem
	for _, l := range top.lists {
		items = r.listTasks(l, items)
	}
	if len(items) == 0 {
		return
	}
	line := r.lineOf(chosen.tasks[0].Start) + 1
	chosen.warn(line, "read %d %s as the tasks; the plan's %d checklist items are not tasks here (--form checklist reads them instead)",
		len(chosen.tasks), formWhat[chosen.form], len(items))
}

// noteSections warns when a checklist was read but the plan also has
// numbered or phase section headings that hold none of its items (an
// ExecPlan's "Progress" boxes before its "Milestone 1..3"): either could
// be the work.
func (r *parseState) noteSections(top topBlocks, chosen *reading) {
	secs := r.readSections(top)
	if len(secs.tasks) < 2 {
		return
	}
	for _, s := range secs.tasks {
		for _, t := range chosen.tasks {
			if t.Start >= s.Start && t.Start < s.End {
				return // the sections group the items: one reading
			}
		}
	}
	chosen.warn(r.lineOf(secs.tasks[0].Start)+1, "read %d checklist items as the tasks; the plan's %d section headings (%q, ...) hold none of them and could be the tasks too (--form sections reads them instead)",
		len(chosen.tasks), len(secs.tasks), words.Clip(secs.tasks[0].Title, 60))
}

// orphanShare is the share of the text between a reading's first task
// and the end of its last that belongs to no task, not counting blank
// lines, headings and thematic breaks.
func (r *parseState) orphanShare(tasks []taskBuild) float64 {
	if len(tasks) < 2 {
		return 0
	}
	total, orphan := 0, 0
	for i := range tasks {
		// Counted without CRs, as the orphan lines are: a CRLF plan must
		// read as its LF twin does.
		total += tasks[i].End - tasks[i].Start - bytes.Count(r.src[tasks[i].Start:tasks[i].End], []byte{'\r'})
		if i == 0 {
			continue
		}
		for l := r.lineOf(tasks[i-1].End); l < len(r.lines) && r.lines[l] < tasks[i].Start; l++ {
			text := lineText(r.src, r.lines, l)
			if isBlank(text) || text[0] == '#' || r.breakLines[l] {
				continue
			}
			orphan += len(text)
		}
	}
	return float64(orphan) / float64(orphan+total)
}

// warnStrayChecklist says that checklist items outside every task heading
// are not tasks. Lists inside tasks hold steps and need no look, and
// neither do items under an aside heading ("Definition of done",
// "Acceptance"): context, as the checklist form reads them, and the plan's
// author meant no task by them.
func (r *parseState) warnStrayChecklist(top topBlocks) {
	var stray []checkItem
	for _, l := range top.lists {
		if l.Pos() >= 0 && r.taskAt(r.abs(l.Pos())) < 0 {
			stray = r.listTasks(l, stray)
		}
	}
	sections := sectionIndex{hs: top.hs}
	for _, it := range stray {
		if _, aside, _ := sections.at(it.start); aside {
			continue
		}
		r.diag(r.lineOf(it.start)+1, 1, SeverityWarning,
			"checklist item outside every task heading is not a task (this plan's tasks are its %q headings)", exampleHeading(r.tasks[0]))
	}
}

// headingTasks makes a task of every heading isTask accepts, its span
// running to the next heading of the same or a higher level. A task
// heading nested inside another task is part of it (with a warning when
// it looks like a sibling).
func (r *parseState) headingTasks(rd *reading, hs []heading, isTask func(h *heading) bool) {
	curEnd := -1
	var cur *taskBuild
	n := 0 // sized up front: taskBuild is large, and regrowing a slice of thousands costs
	for i := range hs {
		if isTask(&hs[i]) {
			n++
		}
	}
	rd.tasks = make([]taskBuild, 0, n)
	for i := range hs {
		h := &hs[i]
		if h.start < curEnd {
			if h.box > 0 { // "#### [x] 1. Title" inside a task is one of its steps
				cur.steps++
				if h.box == 2 {
					cur.doneSteps++
				}
			}
			if isTask(h) && h.label.kind == cur.kind && h.level > cur.Level {
				rd.warn(r.lineOf(h.start)+1,
					"heading %q is nested under task %s (level %d inside level %d) and is part of it, not a task; use the same heading level for every task",
					h.title, cur.ID, h.level, cur.Level)
			}
			continue
		}
		if !isTask(h) {
			continue
		}
		end := len(r.src)
		for _, next := range hs[i+1:] {
			if next.level <= h.level {
				end = next.start
				break
			}
		}
		t := taskBuild{kind: h.label.kind, headEnd: h.end}
		t.ID, t.Title, t.Labels = h.label.id, h.label.title, h.label.tags
		t.explicitID = t.ID != ""
		if !t.explicitID {
			t.Title = strings.TrimSpace(h.title[3:]) // "[ ] Title": no label
			for _, w := range []string{"Step:", "Task:"} {
				if rest, ok := strings.CutPrefix(t.Title, w); ok && strings.TrimSpace(rest) != "" {
					t.Title = strings.TrimSpace(rest) // Zencoder's "### [x] Step: Planning"
				}
			}
		}
		t.Checked = h.box == 2
		t.Start = h.start
		t.End = r.trimEnd(h.start, end, true)
		t.Level = h.level
		rd.tasks = append(rd.tasks, t)
		cur = &rd.tasks[len(rd.tasks)-1]
		curEnd = end
	}
}

// readHeadings reads task headings: "### Task 3: Title", "## Step 2",
// "## T001 Title", "### Task S1.1: Title", code ids with a title when at
// least two headings of one level have them ("## S01: Title", "##
// QA.1: ..."; one alone, "## V2: Migration", is a section name), and
// headings that start with a checkbox ("#### [ ] T-001: Title").
func (r *parseState) readHeadings(top topBlocks) reading {
	rd := reading{form: FormHeadings}
	families := map[int]int{}
	for _, h := range top.hs {
		if h.label.kind == labelCode {
			families[codeFamily(h)]++
		}
	}
	r.headingTasks(&rd, top.hs, func(h *heading) bool {
		return h.isTask || h.box > 0 || (h.label.kind == labelCode && h.label.title != "" && families[codeFamily(*h)] >= 2)
	})
	return rd
}

// codeFamily is what code-id headings of one family share: their level.
func codeFamily(h heading) int { return h.level }

// readSections reads numbered section headings when nothing else names
// the tasks: "## Phase 1 — Scaffold", "### 12.1 — Fix the parser",
// "### 1. Cache bridge". The level with the most of them holds the tasks;
// bare numbers need at least two.
func (r *parseState) readSections(top topBlocks) reading {
	rd := reading{form: FormSections}
	count := map[int]int{}
	for _, h := range top.hs {
		if h.label.kind == labelNumber || h.label.kind == labelPhase {
			count[h.level]++
		}
	}
	level, most := 0, 0
	for l := 1; l <= 6; l++ {
		if count[l] > most {
			level, most = l, count[l]
		}
	}
	if most == 0 {
		return rd
	}
	phases := 0
	for _, h := range top.hs {
		if h.level == level && h.label.kind == labelPhase {
			phases++
		}
	}
	if most < 2 && phases == 0 {
		return rd
	}
	r.headingTasks(&rd, top.hs, func(h *heading) bool {
		return h.level == level && (h.label.kind == labelNumber || h.label.kind == labelPhase)
	})
	return rd
}
