package plan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/yuin/goldmark/ast"

	"github.com/implloop/implloop/internal/words"
)

// asideWords name sections whose checklists are not the work: a log of
// what is done, acceptance or quality checks, a definition of done. A
// heading holding one of them (after its number) marks such a section.
var asideWords = []string{
	"completed", "done", "definition of done", "acceptance", "success criteria",
	"exit criteria", "checklist", "qa", "quality", "verification", "validation",
	"testing", "test plan", "review", "changelog", "status", "progress log",
	"open questions",
	// The same sections in other languages.
	"criterios de aceptación", "criterios de aceptacion", "criterios de éxito", "definición de hecho", "verificación", "validación",
	"critérios de aceitação", "critérios de sucesso", "definição de pronto", "verificação", "validação",
	"akzeptanzkriterien", "abnahmekriterien", "erfolgskriterien", "definition of ready", "prüfung", "überprüfung", "verifikation",
	"critères d'acceptation", "critères d’acceptation", "critères de succès", "critères de réussite", "définition de terminé", "vérification", "liste de vérification",
	"验收标准", "验收条件", "成功标准", "成功標準", "完成标准", "验证", "驗證", "检查清单",
	"受け入れ基準", "受入基準", "完了条件", "成功基準", "検証", "確認事項", "チェックリスト",
	"완료 조건", "수용 기준", "인수 조건", "성공 기준", "검증", "체크리스트", "완료된", "완료",
}

// isAside reports whether a heading's title names a section of checks or
// a log rather than work: "Definition of done", "## Completed", "QA
// improvements checklist", "Testing checklist". The title must start
// with one of asideWords (after its number) or end in "checklist" or
// "summary" (a recap of the work, not the work): a spec-kit "Phase 8:
// Polish & Verification" is work.
func isAside(title string) bool {
	t := strings.ToLower(strings.Trim(title, " *_#:`"))
	t = strings.TrimLeft(t, "0123456789.) ")
	if strings.HasSuffix(t, " checklist") || strings.HasSuffix(t, " summary") {
		return true
	}
	for _, w := range asideWords {
		if t == w || strings.HasPrefix(t, w+" ") || strings.HasPrefix(t, w+":") {
			return true
		}
	}
	return false
}

// taskishWords name a section that holds the work as a numbered list.
var taskishWords = []string{"task", "step", "implementation", "todo", "to do", "to-do", "work", "changes", "plan", "milestone", "roadmap", "action", "breakdown"}

func isTaskish(title string) bool {
	t := strings.ToLower(withoutPaths(title))
	for _, w := range taskishWords {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// withoutPaths drops the words of a title that name files ("#### 1.
// src/prompts/plan.md", "### `docs/steps.md`"): a file called plan.md
// does not make its section the plan.
func withoutPaths(title string) string {
	if !strings.ContainsAny(title, "/.`") {
		return title
	}
	words := strings.Fields(title)
	kept := words[:0]
	for _, w := range words {
		w := strings.Trim(w, "`*_:,;()")
		if strings.Contains(w, "/") || isFileName(w) {
			continue
		}
		kept = append(kept, w)
	}
	return strings.Join(kept, " ")
}

// isFileName reports whether w looks like a file name: letters, then a
// dot and a short extension of letters ("plan.md", "steps.ts").
func isFileName(w string) bool {
	i := strings.LastIndexByte(w, '.')
	if i <= 0 || i == len(w)-1 || len(w)-i > 5 {
		return false
	}
	for _, c := range []byte(w[i+1:]) {
		if !isLetter(c) {
			return false
		}
	}
	return true
}

// sectionIndex walks headings in step with offsets that only grow: at
// each offset it knows the closest heading above (level 2 or deeper) and
// whether any heading above on the path to it is an aside.
type sectionIndex struct {
	r     *parseState
	hs    []heading
	next  int
	stack []heading // open headings, shallowest first
	sec   *heading  // after at: the section's heading (level 2 or deeper), or nil
}

// at advances to offset off and returns the section title and whether it
// is an aside.
func (s *sectionIndex) at(off int) (section string, aside bool, nearest *heading) {
	for ; s.next < len(s.hs) && s.hs[s.next].start < off; s.next++ {
		h := s.hs[s.next]
		for len(s.stack) > 0 && s.stack[len(s.stack)-1].level >= h.level {
			s.stack = s.stack[:len(s.stack)-1]
		}
		s.stack = append(s.stack, h)
	}
	s.sec = nil
	for i := len(s.stack) - 1; i >= 0; i-- {
		h := &s.stack[i]
		if h.level >= 2 && section == "" { // a level-1 heading is the plan's title
			section, s.sec = h.title, h
		}
		if (s.r != nil && s.r.facts(h).aside) || (s.r == nil && isAside(h.title)) {
			aside = true
		}
	}
	if len(s.stack) > 0 {
		nearest = &s.stack[len(s.stack)-1]
	}
	return section, aside, nearest
}

// readChecklist reads top-level checklist items. Items under an aside
// heading ("Definition of done", "Completed") are not tasks while other
// items are; items whose numbered id continues the item before ("1.1"
// after "1.") are folded into it, as a reader would.
func (r *parseState) readChecklist(top topBlocks) reading {
	rd := reading{form: FormChecklist}
	var items []checkItem
	for _, l := range top.lists {
		items = r.listTasks(l, items)
	}
	if len(items) == 0 {
		return rd
	}
	sections := sectionIndex{r: r, hs: top.hs}
	var all, kept []taskBuild
	asides := map[string]int{}
	for _, it := range items {
		section, aside, _ := sections.at(it.start)
		t := r.checklistTask(it)
		t.Section = section
		t.underList = sections.sec != nil && r.facts(sections.sec).names
		all = append(all, t)
		if aside || (sections.sec != nil && r.facts(sections.sec).shows) { // "Definition of done"; "Task Breakdown Preview"
			asides[section]++
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) == 0 {
		kept, rd.weak = all, true
	} else {
		for _, h := range top.hs {
			if n := asides[h.title]; n > 0 {
				rd.notes = append(rd.notes, fmt.Sprintf("%d checklist %s under %q (line %d) read as context, not tasks", n, words.Plural(n, "item"), h.title, r.lineOf(h.start)+1))
				delete(asides, h.title)
			}
		}
	}
	rd.tasks = r.foldSubtasks(&rd, kept)
	r.dropLoneCodes(rd.tasks)
	return rd
}

// checklistTask makes a task of one checklist item.
func (r *parseState) checklistTask(it checkItem) taskBuild {
	rest := it.first[3:] // after "[ ]"
	t := taskBuild{}
	if len(rest) > 0 && rest[0] == '*' {
		t.Optional = true
		rest = rest[1:]
	}
	lab := parseLabel(string(rest), true)
	t.kind = lab.kind
	if lab.kind != labelNone {
		t.ID, t.Title, t.explicitID, t.Labels, t.ticked = lab.id, lab.title, true, lab.tags, lab.ticked
	} else {
		t.Title = strings.TrimSpace(string(rest))
	}
	t.Title = trimArrowDeps(t.Title)
	if i := strings.LastIndex(t.Title, "(parallel: "); i > 0 { // CCPM's epic task list: "Title (parallel: true, 20h, Size: L) - note"
		if strings.HasPrefix(t.Title[i:], "(parallel: true") {
			t.Labels = append(t.Labels, "P")
		}
		t.Title = strings.TrimSpace(t.Title[:i])
	}
	if it.status == StatusInProgress || it.status == StatusCancelled {
		t.Status = it.status // "[~]", "[-]": a plain box says no more than checked does
	}
	t.Checked = it.status.skips()
	t.Start, t.End = it.start, it.end
	t.headEnd = r.lineEnd(r.lineOf(it.start))
	return t
}

// foldSubtasks folds an item whose id extends the id of the task before
// it ("2.1" after "2") into that task: Kiro writes sub-tasks flat, and
// openspec-gradle ("`tdg-2.1`" after "`tdg-2`"). A code id written bare
// ("S1.1" after "S1") is a task of its own, as it always was.
func (r *parseState) foldSubtasks(rd *reading, ts []taskBuild) []taskBuild {
	var out []taskBuild
	folded := 0
	for _, t := range ts {
		if n := len(out); n > 0 && (t.kind == labelNumber || (t.kind == labelCode && t.ticked)) && out[n-1].explicitID &&
			strings.HasPrefix(t.ID, out[n-1].ID+".") && !r.hasText(out[n-1].End, t.Start) {
			p := &out[n-1]
			p.End = t.End
			p.Checked = p.Checked && t.Checked
			folded++
			continue
		}
		out = append(out, t)
	}
	if folded > 0 {
		rd.notes = append(rd.notes, fmt.Sprintf("%d numbered sub-%s (\"1.1\" after \"1.\") folded into the task above", folded, words.Plural(folded, "item")))
	}
	return out
}

// dropLoneCodes takes back a code id ("S3: bucket policy") that no other
// task's id shares the letters of: one is a word, a family is a scheme.
func (r *parseState) dropLoneCodes(ts []taskBuild) {
	family := func(id string) string { return id[:strings.IndexAny(id, "-0123456789")] }
	count := map[string]int{}
	for _, t := range ts {
		if t.kind == labelCode {
			count[family(t.ID)]++
		}
	}
	for i := range ts {
		t := &ts[i]
		if t.kind == labelCode && count[family(t.ID)] < 2 {
			rd := r.lineOf(t.Start)
			line := strings.TrimSpace(string(lineText(r.src, r.lines, rd)))
			if j := strings.Index(line, "]"); j >= 0 {
				line = strings.TrimSpace(strings.TrimPrefix(line[j+1:], "*"))
			}
			t.kind, t.ID, t.explicitID, t.Title, t.Labels = labelNone, "", false, line, nil
		}
	}
}

// readNumbered reads the items of top-level ordered lists as tasks when
// the list sits under a heading that names the work ("## Tasks", "###
// Task breakdown", "## Implementation steps") or, under no heading but
// the plan's title, every item starts with a bold title ("1.
// **Reorganize the file layout**"). Lists under an aside
// heading are left out. A task's span runs to the next task or heading,
// so code that broke the list stays with its item.
func (r *parseState) readNumbered(top topBlocks) reading {
	rd := reading{form: FormNumbered}
	sections := sectionIndex{r: r, hs: top.hs}
	// A heading that names the task list ("## Step by Step Tasks") is where
	// a reader looks: when the plan has one, only lists right under one
	// are its tasks, and a phase's numbered steps elsewhere are not.
	anchored := slices.ContainsFunc(top.hs, func(h heading) bool { return r.facts(&h).names })
	var items []*ast.ListItem
	for _, l := range top.lists {
		if !l.IsOrdered() || l.Pos() < 0 {
			continue
		}
		_, aside, nearest := sections.at(r.abs(l.Pos()))
		if aside || (nearest != nil && r.facts(nearest).explains) {
			continue
		}
		if anchored && (nearest == nil || !r.facts(nearest).names) {
			continue
		}
		var its []*ast.ListItem
		bold := true
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			if item, ok := it.(*ast.ListItem); ok && item.Pos() >= 0 {
				its = append(its, item)
				bold = bold && strings.HasPrefix(r.itemRest(item), "**")
			}
		}
		// Bold-titled items are the plan's steps only when no section
		// heading frames them: under "### KZG bundling issue" they are
		// that section's options.
		bareBold := bold && len(its) >= 2 && (nearest == nil || nearest.level == 1)
		if len(its) == 0 || !(nearest != nil && isTaskish(nearest.title) && (len(its) >= 2 || len(items) > 0) || bareBold) {
			continue
		}
		items = append(items, its...)
	}
	if len(items) == 0 && !anchored {
		items = r.brokenNumberedList(top)
	}
	if len(items) == 0 && !anchored {
		// Any numbered list of two or more items, when no other form
		// finds tasks: a plan of plain numbered steps.
		items, rd.weak = r.firstNumberedList(top), true
	}
	ids := map[string]bool{}
	dup := false
	for i, item := range items {
		start := r.lineStartOf(r.abs(item.Pos()))
		end := len(r.src)
		if i+1 < len(items) {
			end = r.lineStartOf(r.abs(items[i+1].Pos()))
		}
		for _, h := range top.hs {
			if h.start > start && h.start < end {
				end = h.start
				break
			}
		}
		t := taskBuild{kind: labelNumber}
		t.ID = r.itemNumber(item)
		dup = dup || ids[t.ID]
		ids[t.ID] = true
		t.Title = boldTitle(r.itemRest(item))
		t.Start, t.End = start, r.trimEnd(start, end, true)
		t.headEnd = r.lineEnd(r.lineOf(start))
		t.explicitID = true
		rd.tasks = append(rd.tasks, t)
	}
	if dup { // several lists numbered from 1: the ordinals are the ids
		for i := range rd.tasks {
			rd.tasks[i].ID, rd.tasks[i].explicitID = "", false
		}
	}
	return rd
}

// brokenNumberedList finds a numbered list that paragraphs at the left
// margin broke into one list per item ("1. Consolidate ...", prose, "2.
// Make ...", prose): top-level ordered lists, outside asides, each
// starting where the one before ended. The longest such run of at least
// three items over at least two lists is returned.
func (r *parseState) brokenNumberedList(top topBlocks) []*ast.ListItem {
	sections := sectionIndex{r: r, hs: top.hs}
	var best, run []*ast.ListItem
	lists, next := 0, -1
	for _, l := range top.lists {
		if !l.IsOrdered() || l.Pos() < 0 {
			continue
		}
		if _, aside, nearest := sections.at(r.abs(l.Pos())); aside || (nearest != nil && r.facts(nearest).explains) {
			continue
		}
		if l.Start != next {
			run, lists = nil, 0
		}
		n := 0
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			if item, ok := it.(*ast.ListItem); ok && item.Pos() >= 0 {
				run = append(run, item)
				n++
			}
		}
		lists++
		next = l.Start + n
		if lists >= 2 && len(run) >= 3 && len(run) > len(best) {
			best = append(best[:0:0], run...)
		}
	}
	return best
}

// firstNumberedList returns the items of the first top-level ordered list
// of at least two items outside asides, when the list is most of the
// plan: a numbered list among sections of prose is one part of a
// document, and reading it as the plan would leave the rest undone.
func (r *parseState) firstNumberedList(top topBlocks) []*ast.ListItem {
	sections := sectionIndex{r: r, hs: top.hs}
	for _, l := range top.lists {
		if !l.IsOrdered() || l.Pos() < 0 || l.ChildCount() < 2 {
			continue
		}
		if _, aside, nearest := sections.at(r.abs(l.Pos())); aside || (nearest != nil && r.facts(nearest).explains) {
			continue
		}
		var its []*ast.ListItem
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			if item, ok := it.(*ast.ListItem); ok && item.Pos() >= 0 {
				its = append(its, item)
			}
		}
		start := r.lineStartOf(r.abs(l.Pos()))
		end := len(r.src)
		if next := l.NextSibling(); next != nil && next.Pos() >= 0 {
			end = r.lineStartOf(r.abs(next.Pos()))
		}
		if 2*(end-start) < len(bytes.TrimSpace(r.body)) {
			return nil
		}
		return its
	}
	return nil
}

// itemRest is the first line of a list item after its marker.
func (r *parseState) itemRest(item *ast.ListItem) string {
	line := string(lineText(r.src, r.lines, r.lineOf(r.abs(item.Pos()))))
	line = strings.TrimLeft(line, " \t")
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(line[i:])
}

// itemNumber is the number an ordered item is written with.
func (r *parseState) itemNumber(item *ast.ListItem) string {
	line := strings.TrimLeft(string(lineText(r.src, r.lines, r.lineOf(r.abs(item.Pos())))), " \t")
	n := 0
	for n < len(line) && isDigit(line[n]) {
		n++
	}
	return strings.TrimLeft(line[:n], "0")
}

// boldTitle is the bold lead of an item ("**Reorganize** the files" →
// "Reorganize"), else the line itself.
func boldTitle(s string) string {
	if strings.HasPrefix(s, "**") {
		if end := strings.Index(s[2:], "**"); end > 0 {
			return strings.TrimRight(strings.TrimSpace(s[2:2+end]), ":")
		}
	}
	return s
}

// readBullets reads bullets that start with a task id in bold or in
// backticks ("- **3.2** ✅ Add the cache", "- **P0-1**: Remove test
// data", "- `S01` Scaffold"), each with the plain bullets after it in
// the same list ("- Files: ...", "- Depends: 3.1"): they are its
// details, as a reader sees them. A plan needs two such bullets.
func (r *parseState) readBullets(top topBlocks) reading {
	rd := reading{form: FormBullets}
	sections := sectionIndex{r: r, hs: top.hs}
	for _, l := range top.lists {
		if l.IsOrdered() || l.Pos() < 0 {
			continue
		}
		section, aside, nearest := sections.at(r.abs(l.Pos()))
		if aside || (nearest != nil && r.facts(nearest).explains) {
			continue
		}
		after := len(r.src)
		for m := l.NextSibling(); m != nil; m = m.NextSibling() {
			if m.Pos() >= 0 {
				after = r.lineStartOf(r.abs(m.Pos()))
				break
			}
		}
		var cur *taskBuild
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			item, ok := it.(*ast.ListItem)
			if !ok || item.Pos() < 0 {
				continue
			}
			start := r.lineStartOf(r.abs(item.Pos()))
			if _, _, box := r.taskItem(item); box {
				continue // a checklist's business
			}
			rest, st := cutStatus(r.itemRest(item))
			lab := parseLabel(rest, true)
			marked := strings.HasPrefix(rest, "**") || strings.HasPrefix(rest, "__") || lab.ticked
			if lab.kind == labelNone || !marked || (lab.kind == labelNumber && !strings.Contains(lab.id, ".") && !strings.HasPrefix(rest, "**"+lab.id+"**")) {
				continue // a plain bullet: a detail of the task above, if any
			}
			if cur != nil {
				cur.End = r.trimEnd(cur.Start, start, false)
			}
			t := taskBuild{kind: lab.kind}
			t.ID, t.Title, t.Labels, t.explicitID, t.ticked = lab.id, lab.title, lab.tags, true, lab.ticked
			if _, tst := cutStatus(lab.title); st == StatusNone {
				st = tst
			}
			if st != StatusPending {
				t.Status = st
			}
			t.Checked = st.skips()
			t.Section = section
			t.underList = nearest != nil && r.facts(nearest).names
			t.Start, t.End = start, after
			t.headEnd = r.lineEnd(r.lineOf(start))
			rd.tasks = append(rd.tasks, t)
			cur = &rd.tasks[len(rd.tasks)-1]
		}
		if cur != nil {
			cur.End = r.trimEnd(cur.Start, after, false)
		}
	}
	if len(rd.tasks) < 2 {
		rd.tasks = nil
	}
	return rd
}
