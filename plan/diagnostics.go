package plan

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"

	"github.com/implloop/implloop/internal/words"
)

// check adds the plan-level diagnostics and copies the tasks into the plan.
func (r *parseState) check(doc ast.Node) {
	if doc != nil {
		r.checkFences(doc)
	}
	if len(r.tasks) == 0 {
		if r.plan.Reading.Forced != "" {
			return // findTasks said which form found nothing
		}
		r.diag(1, 1, SeverityError, `no tasks: write task headings ("### Task 1: Title") or top-level checklist items ("- [ ] Title"), or run the whole plan as one task with --form whole`)
		if doc != nil {
			r.reportNestedChecklist(doc)
		}
		return
	}

	first := r.checkIDs()
	r.checkDeps(first)
	r.checkCycles(first)

	r.plan.Tasks = make([]Task, len(r.tasks))
	for i := range r.tasks {
		r.plan.Tasks[i] = r.tasks[i].Task
	}
}

// checkIDs checks the tasks' ids (duplicated, missing among explicit ones,
// out of order) and that each task has something in it; it returns each
// id's first task.
func (r *parseState) checkIDs() map[string]int {
	first := map[string]int{} // id -> index of its first task
	explicit := 0
	for i := range r.tasks {
		if r.tasks[i].explicitID {
			explicit++
		}
	}
	var lastNum []int
	lastID := ""
	for i := range r.tasks {
		t := &r.tasks[i]
		if j, dup := first[t.ID]; dup {
			r.diag(t.Line, 1, SeverityError, "duplicate task id %q (first at line %d)", t.ID, r.tasks[j].Line)
			continue
		}
		first[t.ID] = i
		if !t.explicitID && explicit > 0 {
			r.diag(t.Line, 1, SeverityWarning, "task at line %d has no id and takes its ordinal %q; the other tasks have explicit ids", t.Line, t.ID)
		}
		if t.explicitID {
			if n, ok := NumericID(t.ID); ok {
				if lastNum != nil && CompareNumeric(n, lastNum) < 0 {
					r.diag(t.Line, 1, SeverityWarning, "task id %q comes after %q; task ranges select by number, so keep ids increasing", t.ID, lastID)
				}
				lastNum, lastID = n, t.ID
			}
		}
		switch {
		case t.Title == "" && !t.hasBody:
			r.diag(t.Line, 1, SeverityError, "task %s is empty: it has neither a title nor a body", t.ID)
		case t.Level > 0 && !t.hasBody:
			r.diag(t.Line, 1, SeverityWarning, "task %s has a title but no body", t.ID)
		}
	}
	return first
}

// checkDeps resolves each task's dependencies (ranges expanded) into its
// Deps, and reports unknown ids, self and forward references.
func (r *parseState) checkDeps(first map[string]int) {
	var byNum []numberedTask // made when a range first needs it
	for i := range r.tasks {
		t := &r.tasks[i]
		seen := map[string]bool{}
		deps := t.deps
		if slices.ContainsFunc(deps, func(d depRef) bool { return d.through != "" }) {
			if byNum == nil {
				byNum = r.tasksByNumber()
			}
			deps = expandRanges(deps, byNum, first, i)
		}
		for _, d := range deps {
			if seen[d.id] {
				continue
			}
			seen[d.id] = true
			j, ok := first[d.id]
			diag := r.diag
			if d.file != "" {
				diag = r.diagIn(d.file)
			}
			switch {
			case !ok && d.weak:
				diag(d.line, d.col, SeverityWarning, "task %s: a dependency line names %q, which is no task of this plan: read as prose, not as a dependency", t.ID, d.id)
				continue
			case !ok:
				diag(d.line, d.col, SeverityError, "task %s depends on unknown task %q%s", t.ID, d.id, r.didYouMean(d.id))
				continue
			case j == i:
				diag(d.line, d.col, SeverityError, "dependency cycle: task %s depends on itself", t.ID)
				continue
			case j > i:
				diag(d.line, d.col, SeverityWarning, "task %s depends on task %s, which comes later in the plan (tasks run in plan order)", t.ID, d.id)
			}
			t.Deps = append(t.Deps, d.id)
		}
		t.NoDeps = t.noDeps && len(t.Deps) == 0
	}
}

// diagIn is diag for a finding in another file than the plan's own (a
// folder plan's task file).
func (r *parseState) diagIn(path string) func(line, col int, sev Severity, format string, args ...any) {
	return func(line, col int, sev Severity, format string, args ...any) {
		saved := r.path
		r.path = path
		r.diag(line, col, sev, format, args...)
		r.path = saved
	}
}

// didYouMean suggests the task whose id has the same number, for "T12"
// against "T012" or "3" against "T003". The tasks are indexed by number on
// the first call, so a plan with many unknown dependencies costs one pass
// over its tasks, not one per dependency.
func (r *parseState) didYouMean(id string) string {
	want, ok := NumericID(id)
	if !ok {
		return ""
	}
	if r.byNumber == nil {
		// The id of the tasks with each number; "" when two different ids
		// share a number and the suggestion would be a guess.
		r.byNumber = map[string]string{}
		for _, t := range r.tasks {
			if n, ok := NumericID(t.ID); ok {
				key := numericKey(n)
				if match, seen := r.byNumber[key]; seen && match != t.ID {
					r.byNumber[key] = ""
				} else {
					r.byNumber[key] = t.ID
				}
			}
		}
	}
	match := r.byNumber[numericKey(want)]
	if match == "" {
		return ""
	}
	return " (did you mean \"" + match + "\"?)"
}

// numericKey turns the numbers of an id into a map key: ids whose numbers
// compare equal with CompareNumeric get the same key.
func numericKey(nums []int) string {
	b := make([]byte, 0, 4*len(nums))
	for i, n := range nums {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}

// maxCycleReports bounds the cycles reported for one plan: a few are
// enough to act on.
const maxCycleReports = 20

// maxCycleShown bounds the tasks a cycle message names: the first and the
// last few of a long cycle are enough to find it.
const maxCycleShown = 10

// maxIDShown bounds each id a cycle message names.
const maxIDShown = 40

// checkCycles reports each dependency cycle once, at the first task (in
// plan order) that is on it. Iterative, so a plan of a million tasks does
// not overflow the stack, and it stops at maxCycleReports: one deep search
// can meet a back edge at every step, and naming every cycle it closes
// would be quadratic in the number of tasks.
func (r *parseState) checkCycles(index map[string]int) {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(r.tasks))
	edges := func(i int) []int {
		var out []int
		for _, d := range r.tasks[i].Deps {
			if j, ok := index[d]; ok && j != i {
				out = append(out, j)
			}
		}
		return out
	}
	type frame struct {
		node int
		next []int
	}
	reported := 0
	for root := range r.tasks {
		if color[root] != white {
			continue
		}
		stack := []frame{{root, edges(root)}}
		color[root] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if len(top.next) == 0 {
				color[top.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			j := top.next[0]
			top.next = top.next[1:]
			switch color[j] {
			case white:
				color[j] = grey
				stack = append(stack, frame{j, edges(j)})
			case grey: // back edge: the cycle is j ... top
				k := len(stack) - 1
				for stack[k].node != j {
					k--
				}
				cycle := stack[k:]
				at := j
				for _, f := range cycle {
					at = min(at, f.node)
				}
				var ids []string
				for i, f := range cycle {
					if len(cycle) > maxCycleShown && i == maxCycleShown/2 {
						ids = append(ids, fmt.Sprintf("... (%d more) ...", len(cycle)-maxCycleShown))
					}
					if len(cycle) <= maxCycleShown || i < maxCycleShown/2 || i >= len(cycle)-maxCycleShown/2 {
						ids = append(ids, words.Clip(r.tasks[f.node].ID, maxIDShown))
					}
				}
				ids = append(ids, words.Clip(r.tasks[j].ID, maxIDShown))
				r.diag(r.tasks[at].Line, 1, SeverityError, "dependency cycle: %s", unclipped(strings.Join(ids, " -> ")))
				reported++
				if reported >= maxCycleReports {
					return
				}
			}
		}
	}
}

// checkFences warns about a top-level fenced code block that is never
// closed: it swallows the rest of the file, tasks included.
func (r *parseState) checkFences(doc ast.Node) {
	// Only the last block can run to the end of the file.
	if fc, ok := doc.LastChild().(*ast.FencedCodeBlock); ok && fc.Pos() >= 0 {
		open := r.lineOf(r.abs(fc.Pos()))
		opener := bytes.TrimLeft(lineText(r.src, r.lines, open), " ")
		if len(opener) == 0 {
			return
		}
		c := opener[0]
		width := 0
		for width < len(opener) && opener[width] == c {
			width++
		}
		last := open
		if lines := fc.Lines(); lines.Len() > 0 {
			last = r.lineOf(r.abs(lines.At(lines.Len() - 1).Start))
		}
		closing := last + 1
		if closing < len(r.lines) && isClosingFence(lineText(r.src, r.lines, closing), c, width) {
			return
		}
		r.diag(open+1, 1, SeverityWarning, "fenced code block is never closed: everything after line %d is code, tasks included", open+1)
	}
}

// checkNestedFence warns about a fenced block that holds the opening of
// another fence of the same kind ("```markdown" around a "```bash"
// example): CommonMark closes the outer block at the inner one's closing
// fence, so what follows (the rest of the example, often the task's later
// steps) is no longer code and may end the task early.
func (r *parseState) checkNestedFence(fc *ast.FencedCodeBlock) {
	lines := fc.Lines()
	if fc.Pos() < 0 || lines.Len() == 0 {
		return
	}
	open := r.lineOf(r.abs(fc.Pos()))
	opener := bytes.TrimLeft(lineText(r.src, r.lines, open), " ")
	c, width := opener[0], 0
	for width < len(opener) && opener[width] == c {
		width++
	}
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		t := bytes.TrimLeft(r.body[seg.Start:seg.Stop], " ")
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n < width || len(bytes.TrimSpace(t[n:])) == 0 {
			continue
		}
		inner := r.lineOf(r.abs(seg.Start)) + 1
		closing := r.lineOf(r.abs(lines.At(lines.Len()-1).Start)) + 2
		r.diag(open+1, 1, SeverityWarning,
			"fenced block opened here holds another fence (line %d), so it closes at line %d, the inner block's end; the lines after it are not code and may fall outside the task: open the outer block with a longer fence (%s)",
			inner, closing, strings.Repeat(string(c), width+1))
		return
	}
}

func lineText(src []byte, lines []int, l int) []byte {
	end := len(src)
	if l+1 < len(lines) {
		end = lines[l+1]
	}
	return bytes.TrimRight(src[lines[l]:end], "\r\n")
}

func isClosingFence(line []byte, c byte, width int) bool {
	t := bytes.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	return n >= width && len(bytes.TrimRight(t[n:], " \t")) == 0
}

// reportNestedChecklist explains a plan with no tasks whose checklist items
// are all nested under items that are not tasks.
func (r *parseState) reportNestedChecklist(doc ast.Node) {
	var found ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if item, ok := n.(*ast.ListItem); ok && item.Pos() >= 0 {
			if _, _, ok := r.taskItem(item); ok {
				found = item
				return ast.WalkStop, nil
			}
		}
		return ast.WalkContinue, nil
	})
	if found != nil {
		l, c := r.position(r.abs(found.Pos()))
		r.diag(l, c, SeverityWarning, "checklist item is not a task: only top-level checklist items are (this one is nested or quoted)")
	}
}

// numberedTask is a task's number ("3.2" is [3 2]) and its index.
type numberedTask struct {
	nums []int
	i    int
	id   string
}

// maxRangeDeps bounds the tasks one dependency range stands for: a real
// plan's "Tareas 1.1 a 1.9" names a handful, and a plan of thousands of
// ranges over thousands of tasks must not cost their product.
const maxRangeDeps = 1000

// tasksByNumber returns the tasks with numeric ids, sorted by number.
func (r *parseState) tasksByNumber() []numberedTask {
	out := make([]numberedTask, 0, len(r.tasks))
	for i, t := range r.tasks {
		if n, ok := NumericID(t.ID); ok {
			out = append(out, numberedTask{n, i, t.ID})
		}
	}
	slices.SortStableFunc(out, func(a, b numberedTask) int { return CompareNumeric(a.nums, b.nums) })
	return out
}

// expandRanges replaces each dependency range ("Tareas 1.12 a 1.21") by
// its first task and every task numbered after it up to the last one (a
// last "1.2" covers 1.2.1, as a task range does); task self, inside a
// range it lies in, is left out. An end that names no task stays, to be
// reported as unknown.
func expandRanges(deps []depRef, byNum []numberedTask, first map[string]int, self int) []depRef {
	out := make([]depRef, 0, len(deps))
	for _, d := range deps {
		if d.through == "" {
			out = append(out, d)
			continue
		}
		start := d
		start.through = ""
		out = append(out, start)
		end := depRef{id: d.through, line: d.line, col: d.col, weak: d.weak, file: d.file}
		_, okLo := first[d.id]
		_, okHi := first[d.through]
		lo, numLo := NumericID(d.id)
		hi, numHi := NumericID(d.through)
		if !okLo || !okHi || !numLo || !numHi || CompareNumeric(lo, hi) > 0 {
			out = append(out, end)
			continue
		}
		k, _ := slices.BinarySearchFunc(byNum, lo, func(t numberedTask, n []int) int { return CompareNumeric(t.nums, n) })
		for n := 0; k < len(byNum) && n < maxRangeDeps; k++ {
			t := byNum[k]
			if CompareNumeric(t.nums, hi) > 0 && !numericPrefix(hi, t.nums) {
				break
			}
			if t.i == self || CompareNumeric(t.nums, lo) == 0 {
				continue
			}
			out = append(out, depRef{id: t.id, line: d.line, col: d.col, file: d.file})
			n++
		}
		out = append(out, end)
	}
	return out
}

// numericPrefix reports whether p is a prefix of n: 3 of 3.2.
func numericPrefix(p, n []int) bool {
	return len(p) <= len(n) && slices.Equal(p, n[:len(p)])
}
