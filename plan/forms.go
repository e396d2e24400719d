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
var Forms = []Form{FormTodos, FormHeadings, FormXML, FormYAML, FormChecklist, FormNumbered, FormTable, FormBullets, FormSections, FormWhole}

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
	FormYAML:      "task entries of a yaml block",
	FormChecklist: "checklist items",
	FormBullets:   "bullets with task ids",
	FormNumbered:  "numbered list items",
	FormTable:     "table rows",
	FormSections:  "numbered section headings",
	FormWhole:     "the whole plan",
	FormFolder:    "task files",
}

// Reading says how a plan's tasks were read, for `implloop plan` and
// `implloop lint`: the form, how many tasks, and notes on what was left
// out or could have been read otherwise.
type Reading struct {
	Form   Form     `json:"form"`
	Count  int      `json:"count"`
	Forced string   `json:"forced,omitempty"` // "--form", "front matter" when forced
	Notes  []string `json:"notes,omitempty"`
	// PassedOver says, for each heading, list, table and fenced block that
	// is no task, and each task a run skips, why (Options.Explain only).
	PassedOver []Passage `json:"passed_over,omitempty"`
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
	r.top = top
	readers := map[Form]func(topBlocks) reading{
		FormTodos:     r.readTodos,
		FormHeadings:  r.readHeadings,
		FormXML:       r.readXML,
		FormYAML:      r.readYAML,
		FormChecklist: r.readChecklist,
		FormBullets:   r.readBullets,
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
		chosen = r.pickReading(top, readers)
	}
	r.top = top
	if len(chosen.tasks) == 0 {
		chosen = reading{}
	}
	r.restartedIDs(&chosen)
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

// pickReading is the reading implloop picks when no form is forced: the
// first form whose tasks leave little of the plan outside them (firstFit),
// then second thoughts for numbered sections and for coverage, with notes
// where another form came close.
func (r *parseState) pickReading(top topBlocks, readers map[Form]func(topBlocks) reading) reading {
	// Readings are made when first needed: a plan of "### Task N"
	// headings, the commonest, never pays for the others.
	all := readingSet{readers: readers, top: top, done: map[Form]reading{}}
	chosen := r.firstFit(&all)
	r.preferSections(top, &chosen)
	// "### Task N" headings, <task> blocks, todos and a PRP's "Task N:"
	// list are the plan's own word for its tasks: no second guess.
	explicit := explicitForm(chosen.form) || (chosen.form == FormHeadings && slices.ContainsFunc(top.hs, func(h heading) bool { return h.isTask }))
	if !explicit {
		r.preferCoverage(&chosen, &all)
	}
	warned := r.noteLegacy(top, &chosen, &all)
	if !explicit {
		r.noteClose(&chosen, &all, warned)
	}
	return chosen
}

// firstFit is the first reading, in the order of Forms, that leaves at
// most maxOrphanShare of the plan outside its tasks; else the one that
// leaves the least; else a weak reading (a checklist of asides, the whole
// plan as one task).
func (r *parseState) firstFit(all *readingSet) reading {
	var best, weak reading
	bestShare := 2.0
	for _, f := range Forms {
		rd := all.get(f)
		switch {
		case len(rd.tasks) == 0:
			continue
		case rd.weak:
			// A checklist of nothing but asides ("Open questions") gives
			// way to the whole plan as one fix, when a section names it.
			if weak.form == FormNone || (weak.form == FormChecklist && f == FormWhole) {
				weak = rd
			}
			continue
		}
		share := r.orphanShare(rd.tasks)
		if share <= maxOrphanShare {
			return rd
		}
		if share < bestShare {
			best, bestShare = rd, share
		}
	}
	if best.form != FormNone {
		return best
	}
	return weak
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

// restartedIDs handles a list whose ids start over ("1. 2. 3." then "1.
// 2." again) instead of calling every repeat a duplicate: a copy of the
// tasks above, same ids and titles (a template pasted below, a session
// notes block copied), is context, not more tasks; a list numbered anew
// in each phase takes the tasks' positions as ids. Ids that repeat any
// other way ("10, 11, 10") stay duplicates, an error.
func (r *parseState) restartedIDs(rd *reading) {
	ts := rd.tasks
	if len(ts) < 4 || !ts[0].explicitID || ts[1].ID == ts[0].ID {
		return
	}
	k := -1
	for i := 2; i < len(ts); i++ { // the list above a restart has two tasks at least
		if ts[i].ID == ts[0].ID {
			k = i
			break
		}
	}
	if k < 0 || len(ts)-k < 2 || ts[k+1].ID != ts[1].ID {
		return
	}
	copyOf := true
	for j := k; j < len(ts); j++ {
		if ts[j].ID != ts[(j-k)%k].ID || cleanTitle(ts[j].Title) != cleanTitle(ts[(j-k)%k].Title) {
			copyOf = false
			break
		}
	}
	line, restart := r.lineOf(ts[k].Start)+1, ts[k].ID
	if copyOf {
		rd.notes = append(rd.notes, fmt.Sprintf("the %d tasks from line %d on repeat the ids and titles of those above (a copy of the list): read as context, not as tasks", len(ts)-k, line))
		rd.tasks = ts[:k]
		return
	}
	for _, t := range ts {
		if !t.explicitID {
			return
		}
	}
	for i := range rd.tasks {
		rd.tasks[i].ID, rd.tasks[i].explicitID = "", false
	}
	rd.warn(line, "task ids start again at line %d (%q): the tasks take their positions as ids, 1 to %d; give each task an id of its own to keep ids stable", line, restart, len(ts))
}

// preferSections reads a plan's numbered or phase sections as its tasks
// when the list read instead lies wholly inside one of them: a plan of
// seven phases whose first phase has a numbered list is seven tasks, not
// that phase's steps.
func (r *parseState) preferSections(top topBlocks, chosen *reading) {
	switch chosen.form {
	case FormChecklist, FormBullets, FormNumbered, FormTable:
	default:
		return
	}
	secs := r.readSections(top)
	if len(secs.tasks) < 2 || len(chosen.tasks) == 0 {
		return
	}
	first, last := chosen.tasks[0], chosen.tasks[len(chosen.tasks)-1]
	explaining := 0
	for _, s := range secs.tasks {
		if explainsWork(headingWords(s.Title)) {
			explaining++
		}
	}
	if 2*explaining >= len(secs.tasks) {
		return // chapters of a document ("1. Requirements", "2. Implementation Steps", "3. Risks"), not phases of work
	}
	for _, s := range secs.tasks {
		if first.Start >= s.Start && last.End <= s.End && !isTaskish(s.Title) && !namesTaskList(s.Title) {
			what := formWhat[chosen.form]
			secs.notes = append(secs.notes, fmt.Sprintf("the %d %s all lie in section %q, one of %d: read the sections as the tasks (--form %s reads the items)",
				len(chosen.tasks), what, words.Clip(s.Title, 60), len(secs.tasks), chosen.form))
			*chosen = secs
			return
		}
	}
}

// readingSet makes each form's reading of a plan once, when first asked.
type readingSet struct {
	readers map[Form]func(topBlocks) reading
	top     topBlocks
	done    map[Form]reading
}

func (s *readingSet) get(f Form) reading {
	if rd, ok := s.done[f]; ok {
		return rd
	}
	rd := s.readers[f](s.top)
	s.done[f] = rd
	return rd
}

// explicitForm reports whether a form's tasks are marked as tasks by the
// plan itself (front matter todos, <task> blocks, a PRP's "Task N:" list),
// where no other structure is a close second.
func explicitForm(f Form) bool { return f == FormTodos || f == FormXML || f == FormYAML }

// preferCoverage gives a reading that covers little of the plan (a
// "Rollback plan" list after six phases) way to one that covers most of
// it, unless the little one sits under a heading that names the task list
// or the two are one reading at two grains (spec-kit's items and their
// phases).
func (r *parseState) preferCoverage(chosen *reading, all *readingSet) {
	if chosen.form == FormNone || len(chosen.tasks) == 0 {
		return
	}
	body := r.bodyLen()
	have := r.coverage(chosen.tasks)
	if 10*have >= body {
		return
	}
	for _, t := range chosen.tasks {
		if t.underList {
			return
		}
	}
	if sec := r.sectionOf(chosen.tasks[0].Start); sec != nil && (namesTaskList(sec.title) || isTaskish(sec.title) && !explainsWork(headingWords(sec.title))) && chosen.form != FormNumbered {
		return
	}
	for _, f := range Forms {
		if f == chosen.form || f == FormWhole {
			continue
		}
		rd := all.get(f)
		if rd.weak || len(rd.tasks) < 2 {
			continue
		}
		if 2*r.coverage(rd.tasks) < body || nested(rd.tasks, chosen.tasks) || nested(chosen.tasks, rd.tasks) {
			continue
		}
		rd.notes = append(rd.notes, fmt.Sprintf("the %d %s cover little of the plan (line %d on); the %d %s cover most of it: read them as the tasks (--form %s reads the others)",
			len(chosen.tasks), formWhat[chosen.form], r.lineOf(chosen.tasks[0].Start)+1, len(rd.tasks), formWhat[rd.form], chosen.form))
		*chosen = rd
		return
	}
}

// sectionOf returns the closest heading above offset off, or nil.
func (r *parseState) sectionOf(off int) *heading {
	s := sectionIndex{r: r, hs: r.top.hs}
	_, _, h := s.at(off)
	return h
}

// noteLegacy warns when the chosen reading differs from the one the two
// original forms alone give (task headings, else every checklist item):
// that reading was plausible too, and --form can ask for it. It returns
// the form it named, if any.
func (r *parseState) noteLegacy(top topBlocks, chosen *reading, all *readingSet) Form {
	if chosen.form == FormHeadings && slices.ContainsFunc(top.hs, func(h heading) bool { return h.isTask }) {
		return FormNone
	}
	if chosen.form == FormChecklist {
		return r.noteSections(top, chosen)
	}
	if chosen.form == FormNone || chosen.form == FormWhole {
		return FormNone // the whole-plan reading says itself what it did
	}
	var items []checkItem
	for _, l := range top.lists {
		items = r.listTasks(l, items)
	}
	if len(items) == 0 {
		return FormNone
	}
	if cl := all.get(FormChecklist); cl.weak || len(cl.tasks) == 0 {
		return FormNone // only checks ("#### Automated Verification:" in each phase): no second reading
	}
	line := r.lineOf(chosen.tasks[0].Start) + 1
	chosen.warn(line, "read %d %s as the tasks; the plan's %d checklist items are not tasks here (--form checklist, or \"form: checklist\" in the front matter, reads them instead)",
		len(chosen.tasks), formWhat[chosen.form], len(items))
	return FormChecklist
}

// noteSections warns when a checklist was read but the plan also has
// numbered or phase section headings that hold none of its items (an
// ExecPlan's "Progress" boxes before its "Milestone 1..3"): either could
// be the work.
func (r *parseState) noteSections(top topBlocks, chosen *reading) Form {
	secs := r.readSections(top)
	if len(secs.tasks) < 2 {
		return FormNone
	}
	if !slices.ContainsFunc(chosen.tasks, func(t taskBuild) bool { return !t.underList }) {
		return FormNone // the items sit under "## Tasks": the plan says which list is the work
	}
	for i, h := range top.hs {
		if h.label.kind != labelNumber && h.label.kind != labelPhase {
			continue
		}
		end := len(r.src)
		for _, next := range top.hs[i+1:] {
			if next.level <= h.level {
				end = next.start
				break
			}
		}
		for _, t := range chosen.tasks {
			if t.Start >= h.start && t.Start < end {
				return FormNone // numbered sections group the items: one reading
			}
		}
	}
	// "# Tarefas" over "## v0.2", "## v0.1": the sections read group the
	// items (both lists run in file order: one pass).
	for si, ti := 0, 0; si < len(secs.tasks) && ti < len(chosen.tasks); {
		sec, t := secs.tasks[si], chosen.tasks[ti]
		switch {
		case t.Start < sec.Start:
			ti++
		case t.Start >= sec.End:
			si++
		default:
			return FormNone
		}
	}
	chosen.warn(r.lineOf(secs.tasks[0].Start)+1, "read %d checklist items as the tasks; the plan's %d section headings (%q, ...) hold none of them and could be the tasks too (--form sections, or \"form: sections\" in the front matter, reads them instead)",
		len(chosen.tasks), len(secs.tasks), words.Clip(secs.tasks[0].Title, 60))
	return FormSections
}

// noteClose warns when another reading is close to the one taken: a
// structure of the plan, not nested in the tasks read nor holding them,
// that covers at least a quarter of the plan and a third of what the
// tasks read cover. A reader would hesitate there, so lint says which
// reading it took and how to take the other.
func (r *parseState) noteClose(chosen *reading, all *readingSet, warned Form) {
	if chosen.form == FormNone || len(chosen.tasks) == 0 {
		return
	}
	body := r.bodyLen()
	have := r.coverage(chosen.tasks)
	var alt reading
	altCov := 0
	for _, f := range Forms {
		if f == chosen.form || f == warned || f == FormWhole {
			continue
		}
		rd := all.get(f)
		if rd.weak || len(rd.tasks) < 2 {
			continue
		}
		if nested(rd.tasks, chosen.tasks) || nested(chosen.tasks, rd.tasks) {
			continue // one reading at two grains: phases and their items, tasks and their steps
		}
		cov := r.coverage(rd.tasks)
		if 4*cov < body || 3*cov < have || cov <= altCov {
			continue
		}
		alt, altCov = rd, cov
	}
	if alt.form == FormNone {
		return
	}
	chosen.warn(r.lineOf(alt.tasks[0].Start)+1, "read %d %s as the tasks; the plan's %d %s (%q, ...) could be the tasks too: --form %s (or \"form: %s\" in the front matter) reads them instead",
		len(chosen.tasks), formWhat[chosen.form], len(alt.tasks), formWhat[alt.form], words.Clip(cleanTitle(alt.tasks[0].Title), 60), alt.form, alt.form)
}

// coverage is how many bytes a reading's tasks span, not counting CRs
// (a CRLF plan reads as its LF twin does).
func (r *parseState) coverage(ts []taskBuild) int {
	n := 0
	for _, t := range ts {
		n += t.End - t.Start - bytes.Count(r.src[t.Start:t.End], []byte{'\r'})
	}
	return n
}

// bodyLen is the length of the plan's body without surrounding blank
// space and CRs.
func (r *parseState) bodyLen() int {
	b := bytes.TrimSpace(r.body)
	return len(b) - bytes.Count(b, []byte{'\r'})
}

// nested reports whether at least half of a's tasks start inside a task
// of b.
func nested(a, b []taskBuild) bool {
	in, j := 0, 0
	for _, t := range a {
		for j < len(b) && b[j].End <= t.Start {
			j++
		}
		if j < len(b) && b[j].Start <= t.Start && t.Start < b[j].End {
			in++
		}
	}
	return 2*in >= len(a)
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
	sections := sectionIndex{r: r, hs: top.hs}
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
			t.Title = h.clean // "[ ] Title": no label
			for _, w := range []string{"Step:", "Task:"} {
				if rest, ok := strings.CutPrefix(t.Title, w); ok && strings.TrimSpace(rest) != "" {
					t.Title = strings.TrimSpace(rest) // Zencoder's "### [x] Step: Planning"
				}
			}
		}
		if h.status != StatusPending && !(h.box == 2 && h.status == StatusDone) {
			t.Status = h.status // "[~]", "✅": a plain box says no more than checked does
		}
		t.Checked = h.box == 2 || h.status.skips()
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
	// Code ids under a heading that explains the work ("## Architecture
	// Decisions" with "### AD-1: ...") name its points, not tasks.
	parents := headingParents(top.hs)
	code := make([]bool, len(top.hs))
	shown := make([]bool, len(top.hs)) // under "## Task Breakdown Preview", "## Example": shown, not to be done
	families := map[int]int{}
	for i, h := range top.hs {
		if parents[i] >= 0 && r.facts(&top.hs[parents[i]]).shows {
			shown[i] = true
			continue
		}
		if h.label.kind == labelCode && (parents[i] < 0 || !r.facts(&top.hs[parents[i]]).explains) {
			code[i] = true
			families[codeFamily(h)]++
		}
	}
	byStart := make(map[int]int, len(top.hs))
	for i, h := range top.hs {
		byStart[h.start] = i
	}
	r.headingTasks(&rd, top.hs, func(h *heading) bool {
		i := byStart[h.start]
		return !shown[i] && (h.isTask || h.box > 0 || (code[i] && h.label.title != "" && families[codeFamily(*h)] >= 2))
	})
	return rd
}

// headingParents returns, for each heading, the index of the closest
// heading above it of a lower level, or -1.
func headingParents(hs []heading) []int {
	parents := make([]int, len(hs))
	var stack []int
	for i, h := range hs {
		for len(stack) > 0 && hs[stack[len(stack)-1]].level >= h.level {
			stack = stack[:len(stack)-1]
		}
		parents[i] = -1
		if len(stack) > 0 {
			parents[i] = stack[len(stack)-1]
		}
		stack = append(stack, i)
	}
	return parents
}

// codeFamily is what code-id headings of one family share: their level.
func codeFamily(h heading) int { return h.level }

// readSections reads numbered section headings when nothing else names
// the tasks: "## Phase 1 — Scaffold", "### 12.1 — Fix the parser",
// "### 1. Cache bridge". Candidates are the numbered headings of one
// level; where their numbers start again under each parent ("## 1. Area"
// each with "#### 1) Detail"; "### Phase 1" in an overview and "### 1."
// under "## Step by Step Tasks"), each parent's run is a candidate of its
// own. The candidate that covers the most of the plan wins, weighed by
// its parent: under a heading that names the task list it counts four
// times, under one that explains the work ("Technical details",
// "Benefits") a tenth. Bare numbers need at least two headings.
func (r *parseState) readSections(top topBlocks) reading {
	rd := reading{form: FormSections}
	best := r.bestSectionGroup(top)
	if best == nil {
		return rd
	}
	r.headingTasks(&rd, top.hs, func(h *heading) bool { return best[h.start] })
	// Section headings that all start with a symbol, most of them no
	// status mark ("## 🔧 FASE 1", "## 🧩 FASE 3", "## 🔄 FASE 8"), wear
	// icons: the "🔄" is one more, not "in progress".
	icons, marks := 0, 0
	byStart := map[int]*heading{}
	for i := range top.hs {
		if h := &top.hs[i]; best[h.start] {
			byStart[h.start] = h
			switch {
			case h.icon:
				icons++
			case h.leadMark:
				marks++
			}
		}
	}
	if icons >= 2 && icons > marks && icons+marks == len(byStart) {
		for i := range rd.tasks {
			if h := byStart[rd.tasks[i].Start]; h != nil && h.leadMark {
				rd.tasks[i].Status, rd.tasks[i].Checked = StatusNone, h.box == 2
			}
		}
	}
	return rd
}

// sectionGroup is a run of numbered section headings that may be the
// plan's tasks.
type sectionGroup struct {
	level  int
	parent int // index in top.hs of the heading above them, -1 for none
	hs     []int
}

// bestSectionGroup returns the starts of the headings of the best group
// of numbered section headings, or nil.
func (r *parseState) bestSectionGroup(top topBlocks) map[int]bool {
	parents := headingParents(top.hs)
	groups := numberedGroups(top, parents)
	groups = append(groups, r.namedListGroups(top, parents)...)
	var best *sectionGroup
	bestScore, bestSteps := 0.0, false
	for gi := range groups {
		g := &groups[gi]
		score, ok := r.groupScore(top, g, len(groups))
		if !ok {
			continue
		}
		// A TAC/ADW plan's implementer runs its "Step by Step Tasks": when
		// a plan has that list, its headings win over a "Task Breakdown"
		// or any other group, however much of the plan the other covers.
		steps := stepByStep(top, g)
		if best == nil || (steps && !bestSteps) || (steps == bestSteps && score > bestScore) {
			best, bestScore, bestSteps = g, score, steps
		}
	}
	if best == nil {
		return nil
	}
	starts := make(map[int]bool, len(best.hs))
	for _, i := range best.hs {
		starts[top.hs[i].start] = true
	}
	return starts
}

// numberedGroups are the numbered (or phase) headings of each level: one
// group a level, or, where ids collide within a level, one a parent.
func numberedGroups(top topBlocks, parents []int) []sectionGroup {
	var groups []sectionGroup
	for level := 1; level <= 6; level++ {
		var all []int
		ids := map[string]bool{}
		collide := false
		for i, h := range top.hs {
			if h.level == level && (h.label.kind == labelNumber || h.label.kind == labelPhase) {
				all = append(all, i)
				collide = collide || ids[h.label.id] // "### Phase 1" and "### 1." collide too
				ids[h.label.id] = true
			}
		}
		if len(all) == 0 {
			continue
		}
		if !collide {
			groups = append(groups, sectionGroup{level: level, parent: -2, hs: all})
			continue
		}
		byParent := map[int]int{} // parent -> index in groups
		for _, i := range all {
			g, ok := byParent[parents[i]]
			if !ok {
				g = len(groups)
				byParent[parents[i]] = g
				groups = append(groups, sectionGroup{level: level, parent: parents[i]})
			}
			groups[g].hs = append(groups[g].hs, i)
		}
	}
	return groups
}

// namedListGroups: the headings right under one that names the task list
// ("## Step by Step Tasks" then "### Research the workflows") are its
// tasks, numbered or not.
func (r *parseState) namedListGroups(top topBlocks, parents []int) []sectionGroup {
	var groups []sectionGroup
	for pi, p := range top.hs {
		if !r.facts(&top.hs[pi]).names {
			continue
		}
		g := sectionGroup{level: 7, parent: pi}
		for i := pi + 1; i < len(top.hs) && top.hs[i].level > p.level; i++ {
			if parents[i] == pi && top.hs[i].level <= g.level {
				if top.hs[i].level < g.level {
					g.hs, g.level = nil, top.hs[i].level
				}
				g.hs = append(g.hs, i)
			}
		}
		if len(g.hs) >= 2 {
			groups = append(groups, g)
		}
	}
	return groups
}

// groupScore is how much of the plan a group's sections cover, weighed by
// what their parent heading says; not ok for a group that cannot be the
// task list (one heading that is no phase, or the plan's title).
func (r *parseState) groupScore(top topBlocks, g *sectionGroup, groups int) (float64, bool) {
	phases := 0
	for _, i := range g.hs {
		if top.hs[i].label.kind == labelPhase {
			phases++
		}
	}
	if len(g.hs) < 2 && phases == 0 {
		return 0, false
	}
	if len(g.hs) == 1 && g.level == 1 && g.hs[0] == 0 && groups > 1 {
		return 0, false // "# Phase 7: UX" over its numbered sections is the plan's title
	}
	score := 0.0
	for _, i := range g.hs {
		end := len(r.src)
		for _, next := range top.hs[i+1:] {
			if next.level <= top.hs[i].level {
				end = next.start
				break
			}
		}
		score += float64(end - top.hs[i].start)
	}
	switch {
	case g.parent >= 0 && r.facts(&top.hs[g.parent]).names:
		score *= 4
	case g.parent >= 0 && r.facts(&top.hs[g.parent]).explains:
		score /= 10
	}
	return score, true
}

// stepByStep reports whether a group is the sections under a "Step by
// Step Tasks" heading.
func stepByStep(top topBlocks, g *sectionGroup) bool {
	if g.parent < 0 {
		return false
	}
	w := headingWords(top.hs[g.parent].title)
	return w == "step by step tasks" || w == "step-by-step tasks"
}
