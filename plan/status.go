package plan

import (
	"strings"
	"unicode/utf8"
)

// Status is what a plan says of a task's progress, when it says it with a
// mark a reader knows: a checkbox, a status emoji, a status word in a
// table cell or a status line.
type Status string

const (
	StatusNone       Status = ""            // no mark: not done
	StatusDone       Status = "done"        // "[x]", "✅", "Completed"
	StatusInProgress Status = "in progress" // "[~]", "[/]", "🚧", "🔄"
	StatusCancelled  Status = "cancelled"   // "[-]", "❌": dropped, never to run
	StatusPending    Status = "pending"     // "⏳", "⬜": said to be open
)

// skips reports whether a task with this status is left out of a run (it
// counts as checked): done, or cancelled.
func (s Status) skips() bool { return s == StatusDone || s == StatusCancelled }

// statusMarks are the status marks a title or a cell may start or end
// with, and what each means. Emoji are matched with and without the
// variation selector (U+FE0F) that often follows them.
var statusMarks = []struct {
	mark   string
	status Status
}{
	{"✅", StatusDone}, {"✔️", StatusDone}, {"✔", StatusDone}, {"☑️", StatusDone}, {"☑", StatusDone}, {"🟢", StatusDone}, {"✓", StatusDone},
	{"🚧", StatusInProgress}, {"🔄", StatusInProgress}, {"🟡", StatusInProgress},
	{"❌", StatusCancelled}, {"✖️", StatusCancelled}, {"🚫", StatusCancelled}, {"⛔", StatusCancelled},
	{"⏳", StatusPending}, {"⬜", StatusPending}, {"🔲", StatusPending}, {"🔴", StatusPending}, {"⌛", StatusPending},
	{"[x]", StatusDone}, {"[X]", StatusDone}, {"[~]", StatusInProgress}, {"[/]", StatusInProgress}, {"[-]", StatusCancelled}, {"[ ]", StatusPending},
}

// cutStatus takes status marks (and the emphasis around them) off the
// front and the end of a title: "✅ **Task 3:** Add login" is "**Task 3:**
// Add login", done; "### 7.1 Theme ✅" is "7.1 Theme", done. The first
// mark found wins.
func cutStatus(s string) (string, Status) {
	st := StatusNone
	s = strings.TrimSpace(s)
	for {
		m, ms := leadingMark(s)
		if m == 0 {
			break
		}
		if st == StatusNone {
			st = ms
		}
		s = strings.TrimLeft(s[m:], " \t\uFE0F")
	}
	for {
		m, ms := trailingMark(s)
		if m == 0 {
			break
		}
		if st == StatusNone {
			st = ms
		}
		s = strings.TrimRight(s[:len(s)-m], " \t")
	}
	return s, st
}

// leadingMark returns the length of a status mark at the start of s (and
// a variation selector after it), or 0.
func leadingMark(s string) (int, Status) {
	if s == "" {
		return 0, StatusNone
	}
	c := s[0]
	if c != '[' && c < utf8.RuneSelf {
		return 0, StatusNone // most titles: no look at the table
	}
	for _, m := range statusMarks {
		if strings.HasPrefix(s, m.mark) {
			n := len(m.mark)
			if m.mark[0] == '[' && n < len(s) && s[n] != ' ' && s[n] != '\t' {
				return 0, StatusNone // "[x]y" is text
			}
			if strings.HasPrefix(s[n:], "\uFE0F") {
				n += len("\uFE0F")
			}
			return n, m.status
		}
	}
	return 0, StatusNone
}

// trailingMark returns the length of a status emoji ending s, or 0.
// Bracket marks only count at the start.
func trailingMark(s string) (int, Status) {
	t := strings.TrimSuffix(s, "\uFE0F")
	if t == "" || t[len(t)-1] < utf8.RuneSelf {
		return 0, StatusNone
	}
	for _, m := range statusMarks {
		if m.mark[0] == '[' || !strings.HasSuffix(t, m.mark) {
			continue
		}
		// Only a mark set off by a space: "Done✅" is rare, "C++✓" is not a status.
		before := t[:len(t)-len(m.mark)]
		if before != "" && before[len(before)-1] != ' ' && before[len(before)-1] != '\t' {
			return 0, StatusNone
		}
		return len(s) - len(before), m.status
	}
	return 0, StatusNone
}

// statusWord reads a status cell or line value: "Done", "✅ Completed",
// "In Progress", "Cancelled", "Yes" (under a "Completed" header), or one
// of the same words in the plan's language.
func statusWord(s string, completedColumn bool) Status {
	rest, st := cutStatus(s)
	if st != StatusNone && st != StatusPending {
		return st
	}
	w := strings.ToLower(strings.Trim(rest, " *_`~.:"))
	switch {
	case w == "":
		return st
	case completedColumn && oneOf(w, "yes", "y", "true", "x", "done", "sí", "si", "sim", "ja", "oui", "是", "はい", "예", "完了", "完成", "완료"):
		return StatusDone
	}
	for _, p := range statusWords {
		if strings.HasPrefix(w, p.word) {
			return p.status
		}
	}
	return st
}

// statusWords are the status words read from a status cell or line,
// matched at the start of its lower-cased value.
var statusWords = []struct {
	word   string
	status Status
}{
	{"done", StatusDone}, {"complete", StatusDone}, {"finished", StatusDone}, {"closed", StatusDone}, {"merged", StatusDone}, {"resolved", StatusDone}, {"shipped", StatusDone},
	{"hecho", StatusDone}, {"completad", StatusDone}, {"terminad", StatusDone}, {"finalizad", StatusDone}, {"concluíd", StatusDone}, {"concluid", StatusDone}, {"feito", StatusDone},
	{"erledigt", StatusDone}, {"abgeschlossen", StatusDone}, {"fertig", StatusDone}, {"terminé", StatusDone}, {"fait", StatusDone}, {"achevé", StatusDone},
	{"已完成", StatusDone}, {"完成", StatusDone}, {"完了", StatusDone}, {"済", StatusDone}, {"완료", StatusDone},
	{"in progress", StatusInProgress}, {"in-progress", StatusInProgress}, {"in_progress", StatusInProgress}, {"wip", StatusInProgress}, {"ongoing", StatusInProgress}, {"started", StatusInProgress},
	{"en progreso", StatusInProgress}, {"en curso", StatusInProgress}, {"em andamento", StatusInProgress}, {"em progresso", StatusInProgress}, {"in arbeit", StatusInProgress}, {"en cours", StatusInProgress},
	{"进行中", StatusInProgress}, {"進行中", StatusInProgress}, {"対応中", StatusInProgress}, {"진행", StatusInProgress},
	{"cancel", StatusCancelled}, {"dropped", StatusCancelled}, {"won't", StatusCancelled}, {"wontfix", StatusCancelled}, {"abandoned", StatusCancelled}, {"obsolete", StatusCancelled},
	{"cancelad", StatusCancelled}, {"abgebrochen", StatusCancelled}, {"annulé", StatusCancelled}, {"已取消", StatusCancelled}, {"取消", StatusCancelled}, {"中止", StatusCancelled}, {"취소", StatusCancelled},
	{"todo", StatusPending}, {"to do", StatusPending}, {"pending", StatusPending}, {"open", StatusPending}, {"planned", StatusPending}, {"not started", StatusPending}, {"backlog", StatusPending},
	{"pendiente", StatusPending}, {"pendente", StatusPending}, {"offen", StatusPending}, {"geplant", StatusPending}, {"à faire", StatusPending}, {"prévu", StatusPending},
	{"待办", StatusPending}, {"未开始", StatusPending}, {"未着手", StatusPending}, {"未完了", StatusPending}, {"대기", StatusPending}, {"예정", StatusPending},
}
