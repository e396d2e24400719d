package plan

import (
	"strings"

	"github.com/implloop/implloop/internal/words"
)

// wholeWords name a section that says what to change, in a plan written
// for one fix: "## Fix", "### Changes to `src/ipc.ts`", "## Proposed
// solution", "## Approach", "## Implementation".
var wholeWords = []string{
	"fix", "fixes", "fixing", "solution", "solutions", "approach", "approaches",
	"change", "changes", "changing", "implementation", "implementing", "plan of work", "what to do",
}

// namesWork reports whether a section heading's title says what to
// change: one of wholeWords as a whole word of it ("## Changelog" and
// "## Fixtures" do not).
func namesWork(title string) bool {
	t := strings.ToLower(title)
	for _, w := range wholeWords {
		for i := 0; ; {
			j := strings.Index(t[i:], w)
			if j < 0 {
				break
			}
			j += i
			end := j + len(w)
			if (j == 0 || !isLetter(t[j-1])) && (end == len(t) || !isLetter(t[end])) {
				return true
			}
			i = j + 1
		}
	}
	return false
}

// readWhole reads a plan written for one change, with no task list of any
// form (a title, a problem statement, "## Fix" and "### Changes to ..."
// sections), as one task: the whole plan, titled by its first heading.
// It is the last resort, tried when no other form finds tasks, and only
// when a section heading below the title names the work ("## Fix", "##
// Changes", "## Proposed solution"): a note with a title and a paragraph
// is not a plan, and stays a "no tasks" error. Forced (--form whole), any
// plan with text is one task.
func (r *parseState) readWhole(top topBlocks) reading {
	rd := reading{form: FormWhole, weak: true}
	if r.base >= len(r.src) {
		return rd
	}
	first := r.lineOf(r.base) // the first line of text in the body (after a byte order mark)
	for first < len(r.lines) && (isBlank(r.src[max(r.lines[first], r.base):r.lineEnd(first)]) || r.breakLines[first]) {
		first++
	}
	if first >= len(r.lines) {
		return rd
	}
	forced := false
	if f, _ := r.forcedForm(); f == FormWhole {
		forced = true
	} else {
		work := false
		for _, h := range top.hs {
			if h.level >= 2 && h.start > top.hs[0].start && namesWork(h.title) {
				work = true
				break
			}
		}
		if !work {
			return rd
		}
	}
	t := taskBuild{}
	t.ID, t.Ordinal = "1", 1
	if len(top.hs) > 0 && r.lineOf(top.hs[0].start) == first {
		h := top.hs[0]
		t.Start, t.headEnd, t.Level = h.start, h.end, h.level
		t.Title = strings.Trim(h.title, " *_")
	} else {
		t.Start = max(r.lines[first], r.base)
		t.headEnd = r.lineEnd(first)
		t.Title = words.Clip(strings.TrimSpace(string(r.src[t.Start:r.lineEnd(first)])), 80)
	}
	t.End = r.trimEnd(t.Start, len(r.src), true)
	rd.tasks = []taskBuild{t}
	if !forced {
		rd.warn(r.lineOf(t.Start)+1, "no task list found (task headings, checklist items, a numbered list under a Tasks heading, table rows or numbered sections): the whole plan is one task, %q; write \"### Task N: ...\" headings to run it in steps", words.Clip(t.Title, 60))
	}
	return rd
}
