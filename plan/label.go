package plan

import (
	"strings"
	"unicode/utf8"

	"github.com/implloop/implloop/internal/words"
)

// labelKind says what kind of label started a heading or an item.
type labelKind int

const (
	labelNone    labelKind = iota
	labelTask              // "Task 3"
	labelStep              // "Step 3"
	labelSpecKit           // "T003"
	labelNumber            // "3." or "3.2" (checklist items, numbered sections)
	labelCode              // "S01:", "P0-1:", "T-001:", "SYNC.1:" (two or more at one heading level)
	labelPhase             // "Phase 2", "Milestone 3" (section headings)
)

// label is the id part of a task heading or item: "Task 3:" in "Task 3:
// Add login".
type label struct {
	kind  labelKind
	id    string
	title string
	tags  []string // spec-kit's "[P]", "[US1]" after the id, without brackets
	// ticked: the id was written in backticks ("`tdg-2.1` Title").
	ticked bool
}

// parseLabel reads a task label at the start of s. bare allows a bare
// number ("3. Title", "3.2 Title"), which is an id in a checklist item but
// not in a heading ("## 1. Introduction" is not a task).
func parseLabel(s string, bare bool) label { return parseLabelWith(s, bare, false) }

// phaseWords start the labels of section headings: "## Phase 2 — Auth",
// "## Fase 2", "## 阶段 2", "## フェーズ2".
var phaseWords = []string{"phase", "milestone", "stage", "sprint", "part", "epic", "iteration", "wave", "chunk",
	"fase", "etapa", "hito", "meilenstein", "teil", "jalon", "étape", "阶段", "階段", "フェーズ", "段階", "단계", "페이즈"}

// taskWords start task labels, with the kind of label each makes and
// whether a space must follow it before the number ("Task 3", "Tarea 3",
// "任务1", "タスク 1"). Words of scripts written without spaces need none.
var taskWords = []struct {
	word   string
	kind   labelKind
	spaced bool
}{
	{"task", labelTask, true}, {"step", labelStep, true},
	{"tarea", labelTask, true}, {"paso", labelStep, true}, // Spanish
	{"tarefa", labelTask, true}, {"passo", labelStep, true}, // Portuguese
	{"aufgabe", labelTask, true}, {"schritt", labelStep, true}, // German
	{"tâche", labelTask, true}, {"tache", labelTask, true}, // French ("étape" is a phase word)
	{"任务", labelTask, false}, {"任務", labelTask, false}, {"步骤", labelStep, false}, {"步驟", labelStep, false}, // Chinese
	{"タスク", labelTask, false}, {"ステップ", labelStep, false}, // Japanese
	{"작업", labelTask, false}, {"태스크", labelTask, false}, // Korean
}

// taskWord returns the length of a task word at the start of s, or 0.
func taskWord(s string) int {
	n, _, _ := taskWordAt(s)
	return n
}

func taskWordAt(s string) (n int, kind labelKind, spaced bool) {
	for _, w := range taskWords {
		if hasWordPrefixFold(s, w.word) {
			if w.spaced && len(s) > len(w.word) && isLetter(s[len(w.word)]) {
				continue // "Tasks", "Stepper"
			}
			return len(w.word), w.kind, w.spaced
		}
	}
	return 0, labelNone, false
}

// parseLabelWith is parseLabel that also reads the label of a section
// heading ("Phase 2", "Milestone 3") when phases is set.
func parseLabelWith(s string, bare, phases bool) label {
	s = strings.TrimSpace(s)
	rest, opener := stripOpeningEmphasis(s)

	kind, id, after, ticked, ok := labelID(rest, opener, bare, phases)
	if !ok {
		return label{}
	}
	if !labelBoundary(after) {
		return label{}
	}
	title, closed := skipSeparator(after, opener)
	if opener != "" && !closed {
		// "**Step 1: Write the test**", "**M0 — Boot.** Details...": the
		// emphasis closes after the title; what follows it is detail.
		if i := strings.Index(title, opener); i >= 0 {
			title = strings.TrimSpace(title[:i])
		}
	}
	title, tags := splitTags(title)
	return label{kind: kind, id: id, title: title, tags: tags, ticked: ticked}
}

// labelID reads the id a label opens with, of whichever kind (task word,
// issue number, phase, spec-kit, code, bare number), and what follows it;
// not ok when the text opens with no id.
func labelID(rest, opener string, bare, phases bool) (kind labelKind, id, after string, ticked, ok bool) {
	fail := func() (labelKind, string, string, bool, bool) { return 0, "", "", false, false }
	// "TASK-001", "STEP-2": a code id that starts with a task word glued
	// to it (no space after "TASK"), not the word "Task" and a number.
	codeNotWord := false
	if w, _, spaced := taskWordAt(rest); w > 0 && spaced && len(strings.TrimLeft(rest[w:], " \t")) == len(rest)-w {
		codeNotWord = codeID(rest) > 0
	}
	switch {
	case taskWord(rest) > 0 && !codeNotWord:
		w, k, spaced := taskWordAt(rest)
		kind = k
		r := strings.TrimLeft(rest[w:], " \t")
		if spaced && len(r) == len(rest)-w { // "Task3" is a word, "タスク3" is not
			return fail()
		}
		r = strings.TrimPrefix(r, "#")
		n := wordID(r)
		if n == 0 {
			return fail()
		}
		id, after = r[:n], r[n:]
	case bare && strings.HasPrefix(rest, "[#") && len(rest) > 3 && isDigit(rest[2]) && strings.Contains(rest, "](") && issueLink(rest) > 0:
		// "[#13](https://github.com/o/r/issues/13) - Title": CCPM after its sync.
		n := issueLink(rest)
		kind, id, after = labelNumber, rest[2:strings.IndexByte(rest, ']')], rest[n:]
	case bare && len(rest) > 2 && rest[0] == '#' && isDigit(rest[1]):
		// "#24 - Fix the calendar API" (CCPM's task list, by issue number).
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		kind, id, after = labelNumber, rest[1:n], rest[n:]
		if after != "" && after[0] != ' ' && after[0] != ':' && after[0] != '\t' {
			return fail()
		}
	case phases && phaseWord(rest) > 0:
		w := phaseWord(rest)
		r := strings.TrimLeft(rest[w:], " \t")
		n := wordID(r)
		if n == 0 || (len(r) == len(rest)-w && rest[0] < utf8.RuneSelf) {
			return fail()
		}
		kind, id, after = labelPhase, r[:n], r[n:]
	case len(rest) > 1 && rest[0] == 'T' && isDigit(rest[1]):
		// "T001", and a dotted "T1.1" (**T1.1**: in a backlog): one id.
		n := 1 + dottedNumber(rest[1:])
		kind, id, after = labelSpecKit, rest[:n], rest[n:]
	case len(rest) > 2 && rest[0] == '`' && backtickID(rest) > 0:
		// "`tdg-1` Title" (openspec-gradle): the backticks say it is an
		// id, so a space is separator enough.
		n := backtickID(rest)
		kind, id, after, ticked = labelCode, rest[1:n-1], rest[n:], true
		if after != "" && after[0] != ' ' && after[0] != '\t' && !codeBoundary(after, "") {
			return fail()
		}
	case codeID(rest) > 0:
		n := codeID(rest)
		id, after = rest[:n], rest[n:]
		if !codeBoundary(after, opener) && !(paddedCode(id) && (after[0] == ' ' || after[0] == '\t')) {
			return fail()
		}
		kind = labelCode
	case bare && len(rest) > 0 && isDigit(rest[0]):
		n := dottedNumber(rest)
		id, after = rest[:n], rest[n:]
		switch {
		case strings.Contains(id, "."):
		case len(after) > 0 && (after[0] == '.' || after[0] == ')'):
		default:
			return fail() // "2 eggs": a number, not an id
		}
		kind = labelNumber
	default:
		return fail()
	}
	return kind, id, after, ticked, true
}

// splitTags takes spec-kit's markers ("[P] [US1] Create the model") off
// the front of a title: short bracketed words, kept without brackets.
func splitTags(title string) (string, []string) {
	var tags []string
	for strings.HasPrefix(title, "[") {
		end := strings.IndexByte(title, ']')
		tag := ""
		if end > 0 {
			tag = title[1:end]
		}
		if tag == "" || len(tag) > 16 || strings.ContainsAny(tag, " \t[") || tag == "x" || tag == "X" {
			break
		}
		tags = append(tags, tag)
		title = strings.TrimLeft(title[end+1:], " \t")
	}
	return title, tags
}

// phaseWord returns the length of a phase word ("Phase", "milestone") at
// the start of s, followed by a space, or 0.
func phaseWord(s string) int {
	for _, w := range phaseWords {
		if !hasWordPrefixFold(s, w) || len(s) <= len(w) {
			continue
		}
		if c := s[len(w)]; c == ' ' || c == '\t' || (w[0] >= utf8.RuneSelf && (isDigit(c) || (c >= utf8.RuneSelf && !isLetter(c)))) {
			return len(w) // "Phase 2"; "フェーズ2", "阶段一" need no space
		}
	}
	return 0
}

// wordID returns the length of the id after "Task " or "Phase ": a dotted
// number ("3", "3.2") with an optional prefix of up to three letters
// ("S1.1", "A2"), or 0.
func wordID(s string) int {
	i := 0
	for i < len(s) && i < 3 && isLetter(s[i]) {
		i++
	}
	n := dottedNumber(s[i:])
	if n == 0 {
		return 0
	}
	return i + n
}

// codeID returns the length of a code id at the start of s: one to five
// capital letters, an optional dash or dot, a number, and optionally more
// numbers after dots or dashes ("S01", "P0-1", "T-001", "US2.3",
// "SYNC.1"); or 0.
func codeID(s string) int {
	i := 0
	for i < len(s) && i < 5 && 'A' <= s[i] && s[i] <= 'Z' {
		i++
	}
	if i == 0 || i == len(s) {
		return 0
	}
	if s[i] == '-' || s[i] == '.' {
		i++
	}
	if i == len(s) || !isDigit(s[i]) {
		return 0
	}
	for {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i+1 < len(s) && (s[i] == '.' || s[i] == '-') && isDigit(s[i+1]) {
			i++
			continue
		}
		return i
	}
}

// backtickID returns the length of a task id in backticks at the start of
// s, backticks included ("`tdg-1`", "`gtp-12.3`", "`S01`"), or 0: a code
// id or a slug id, nothing else ("`src/main.go`" is a path).
func backtickID(s string) int {
	end := strings.IndexByte(s[1:], '`')
	if end <= 0 {
		return 0
	}
	in := s[1 : end+1]
	if n := codeID(in); n == len(in) || slugID(in) == len(in) {
		return end + 2
	}
	return 0
}

// slugID returns the length of a lower-case slug id at the start of s:
// one to eight letters, a dash, and a dotted number, optionally followed
// by more dashed numbers ("tdg-1", "gtp-12.3", "auth-2-1"); or 0. The
// dash is required: "v2" and "go1.22" are versions, not ids.
func slugID(s string) int {
	i := 0
	for i < len(s) && i < 8 && isLetter(s[i]) {
		i++
	}
	if i == 0 || i+1 >= len(s) || s[i] != '-' || !isDigit(s[i+1]) {
		return 0
	}
	i++
	for {
		i += dottedNumber(s[i:])
		if i+1 < len(s) && s[i] == '-' && isDigit(s[i+1]) {
			i++
			continue
		}
		return i
	}
}

// priorityTier reports whether a code id is a bare priority ("P0" to
// "P9"): as a heading it names a tier of work ("## P1 — Critical Path"),
// while "P0-1" names one task.
func priorityTier(id string) bool {
	return len(id) == 2 && id[0] == 'P' && isDigit(id[1])
}

// codeBoundary reports whether a code id is followed by a separator that
// makes it a label ("S01: Title", "**P0-1** Title"), not a word ("S3
// bucket").
func codeBoundary(after, opener string) bool {
	if after == "" || (opener != "" && strings.HasPrefix(after, opener)) {
		return true
	}
	switch after[0] {
	case ':', ')':
		return true
	case '.', ' ', '\t':
		t := strings.TrimLeft(after[1:], " \t")
		if after[0] == '.' {
			return true
		}
		r, _ := utf8.DecodeRuneInString(t)
		return strings.HasPrefix(t, "-") || strings.HasPrefix(t, ":") || strings.HasPrefix(t, "|") || r == '–' || r == '—' || r == '·'
	}
	r, _ := utf8.DecodeRuneInString(after)
	return r == '–' || r == '—'
}

// paddedCode reports whether a code id is written as an id, not a word:
// its number is zero-padded ("S01", "SM05", "T001") or set off by a
// dash ("GOAL-001", "US-003"). Such an id needs no colon before its
// title ("- [ ] S01 Scaffold the project"); "S3 bucket" stays a word. A
// lone one is still taken back (dropLoneCodes): ids come in families.
func paddedCode(id string) bool {
	i := strings.IndexFunc(id, func(r rune) bool { return r >= '0' && r <= '9' })
	if i <= 0 {
		return false
	}
	return id[i-1] == '-' || (id[i] == '0' && i+1 < len(id) && isDigit(id[i+1]))
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// stripOpeningEmphasis removes a leading "**", "__", "*" or "_".
func stripOpeningEmphasis(s string) (string, string) {
	for _, m := range []string{"**", "__", "*", "_"} {
		if strings.HasPrefix(s, m) {
			return s[len(m):], m
		}
	}
	return s, ""
}

// hasWordPrefixFold reports whether s starts with word, case-insensitively.
func hasWordPrefixFold(s, word string) bool {
	return len(s) >= len(word) && strings.EqualFold(s[:len(word)], word)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// dottedNumber returns the length of the dotted number ("3", "3.2",
// "10.1.4") at the start of s; a trailing dot is not part of it.
func dottedNumber(s string) int {
	n := 0
	for {
		start := n
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		if n == start {
			if start == 0 {
				return 0
			}
			return start - 1 // drop the dot that had no digits after it
		}
		if n < len(s) && s[n] == '.' && n+1 < len(s) && isDigit(s[n+1]) {
			n++
			continue
		}
		return n
	}
}

// labelBoundary reports whether an id may end where after begins: at the
// end, before a space or a separator, or before closing emphasis.
func labelBoundary(after string) bool {
	if after == "" {
		return true
	}
	switch after[0] {
	case ' ', '\t', ':', '.', ')', '-', '*', '_', '\r', '\n':
		return true
	}
	r, _ := utf8.DecodeRuneInString(after)
	return r == '–' || r == '—' || r == '：' || r == '、' || r == '．' || r == '）'
}

// skipSeparator drops what separates a label from its title: spaces,
// closing emphasis, one of ":", ".", ")" or a run of dashes. closed
// reports whether it consumed the emphasis opened before the label.
func skipSeparator(s, opener string) (title string, closed bool) {
	closeEm := func() {
		if opener != "" && !closed && strings.HasPrefix(s, opener) {
			s, closed = s[len(opener):], true
		}
	}
	s = strings.TrimLeft(s, " \t")
	closeEm()
	switch {
	case strings.HasPrefix(s, ":"), strings.HasPrefix(s, "."), strings.HasPrefix(s, ")"):
		s = s[1:]
	case strings.HasPrefix(s, "："), strings.HasPrefix(s, "、"), strings.HasPrefix(s, "．"), strings.HasPrefix(s, "）"):
		s = s[len("："):] // fullwidth, three bytes each
	default:
		s = strings.TrimLeft(s, "-–—·|")
	}
	s = strings.TrimLeft(s, " \t")
	closeEm()
	return strings.TrimSpace(s), closed
}

// maxTitle is how long a title may run before it is cut at its first
// sentence: a title names the task, the text says what it is.
const maxTitle = 200

// cleanTitle makes a task's title what a reader calls the task: without
// status marks ("✅"), a leading symbol ("🔧"), or emphasis that only
// marks where the title starts ("**Add login** — with sessions" and
// "**Add login:** with sessions" are "Add login"); a title that runs on
// like a paragraph is cut at its first sentence.
func cleanTitle(s string) string {
	s, _ = cutStatus(s)
	s = strings.TrimSpace(trimLeadingSymbols(s))
	for _, m := range []string{"**", "__"} {
		if !strings.HasPrefix(s, m) {
			continue
		}
		end := strings.Index(s[len(m):], m)
		if end <= 0 {
			break
		}
		lead := strings.TrimSpace(s[len(m) : len(m)+end])
		after := strings.TrimSpace(s[len(m)+end+len(m):])
		r, _ := utf8.DecodeRuneInString(after)
		if after == "" || strings.HasSuffix(lead, ":") || strings.HasSuffix(lead, ".") || strings.ContainsRune(":—–-(|·", r) {
			s = strings.TrimRight(lead, ":.： ")
		}
		break
	}
	if len(s) > 2 && (s[0] == '"' && s[len(s)-1] == '"' || strings.HasPrefix(s, "“") && strings.HasSuffix(s, "”")) {
		s = strings.TrimSpace(strings.Trim(s, "\"“”")) // CCPM quotes its task names
	}
	if len(s) > maxTitle {
		s = firstSentence(s)
	}
	return s
}

// trimLeadingSymbols drops pictographs and symbols before a title's first
// word ("🔧 Fix the parser"), but not a bracket, quote, code span or
// emphasis, which are part of it.
func trimLeadingSymbols(s string) string {
	for s != "" {
		r, n := utf8.DecodeRuneInString(s)
		if r < 0x2000 || r == '【' || r == '「' || r == '『' || (r >= 0x3000 && r < 0xFE00 && r != 0x3000) || r > 0x1FFFF {
			if r == 0x3000 { // ideographic space
				s = s[n:]
				continue
			}
			return s
		}
		if r >= 0x4E00 && r <= 0x9FFF { // CJK ideographs are words
			return s
		}
		s = strings.TrimLeft(s[n:], " \t\uFE0F\u200D")
	}
	return s
}

// firstSentence cuts a long title at the end of its first sentence (a
// full stop before a capital letter, or "。"), else at a word before
// maxTitle.
func firstSentence(s string) string {
	for i := 10; i < len(s) && i < maxTitle; i++ {
		switch {
		case strings.HasPrefix(s[i:], "。"), strings.HasPrefix(s[i:], "！"), strings.HasPrefix(s[i:], "？"):
			return s[:i]
		case (s[i] == '.' || s[i] == '!' || s[i] == '?') && i+2 < len(s) && s[i+1] == ' ' && 'A' <= s[i+2] && s[i+2] <= 'Z':
			return s[:i]
		}
	}
	cut := words.Clip(s, maxTitle)
	if i := strings.LastIndexByte(cut[:len(cut)-len("…")], ' '); i > maxTitle/2 {
		cut = cut[:i] + "…"
	}
	return cut
}

// issueLink returns the length of a link "[#13](url)" at the start of s
// whose text is "#" and a number, or 0.
func issueLink(s string) int {
	end := strings.IndexByte(s, ']')
	if end < 3 || !strings.HasPrefix(s[end:], "](") {
		return 0
	}
	for _, c := range []byte(s[2:end]) {
		if !isDigit(c) {
			return 0
		}
	}
	close := strings.IndexByte(s[end:], ')')
	if close < 0 {
		return 0
	}
	return end + close + 1
}
