package plan

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
)

// depsRe matches the start of a dependency line: "Depends on:", "depends
// on", "Depends:", "**Dependencies:**". Group 1 is the colon.
//
// The same label in other languages reads the same way: "Dependencias:",
// "Depende de", "Dependências", "Voraussetzung:", "Abhängig von:",
// "Dépend de", "依赖:", "依赖任务：", "前置：", "依存:", "의존성:".
var depsRe = regexp.MustCompile(`^(?:\*\*|__|\*|_)?(?:(?i:depends\s+on|depends|dependencies|dependencias?|depende\s+de|dependências|dependência|voraussetzung(?:en)?|abhängig\s+von|abhängigkeiten|dépend\s+de|dépendances?|prerequisites?|prérequis|requisitos\s+previos)\b|` + cjkDepLabels + `)(?:\*\*|__|\*|_)?(\s*[:：])?(?:\*\*|__|\*|_)?`)

// cjkDepLabels are the dependency labels of languages written without
// spaces, which \b cannot bound: the longest first.
const cjkDepLabels = `依赖任务|依赖项|依赖关系|依赖|依賴|前置任务|前置任務|前置条件|前置|依存タスク|依存関係|依存|前提タスク|선행\s*작업|의존성|의존`

var depTokenRe = regexp.MustCompile(`[^\s,;、，；]+`)

// scanDeps reads a dependency declaration from one line of a task's prose.
// absStart is the line's offset in the file.
func (r *parseState) scanDeps(t *taskBuild, absStart int, line []byte, open bool) bool {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	open = r.scanInlineDeps(t, absStart, line, open)
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	j := i
	for j < len(line) && (line[j] == '*' || line[j] == '_') {
		j++
	}
	if j >= len(line) || !mayStartDeps(line[j]) { // cheap reject for most lines
		return open
	}
	m := depsRe.FindSubmatchIndex(line[i:])
	if m == nil {
		r.scanNeeds(t, absStart, line, i)
		r.scanDepFields(t, absStart, line)
		return open
	}
	colon := m[2] >= 0
	restStart := i + m[1]
	rest := line[restStart:]

	found, none := r.depList(absStart+restStart, rest, false)
	if !colon && !slices.ContainsFunc(found, func(d depRef) bool { return !d.weak }) {
		return open // prose: "Depends on the config loader being fast", "Depends on go-1.22"
	}
	if len(found) == 0 && !none {
		if !englishDepLabel(line[i : i+m[1]]) {
			return open // "依赖：Node + npm" names software, not tasks: prose in any language but the one the hint is in
		}
		l, c := r.position(absStart + i)
		r.diag(l, c, SeverityWarning, `dependency line in task %s names no task id (write "Depends on: 3, 5" or "Depends on: none")`, t.ID)
		return open
	}
	t.deps = append(t.deps, found...)
	t.noDeps = t.noDeps || none
	return open
}

// englishDepLabel reports whether a matched dependency label is one of
// the English ones ("Depends on:", "**Dependencies:**").
func englishDepLabel(label []byte) bool {
	l := strings.ToLower(strings.Join(strings.Fields(strings.Trim(string(label), "*_:： \t")), " "))
	l = strings.TrimRight(l, "*_:： ")
	return l == "depends on" || l == "depends" || l == "dependencies"
}

// mayStartDeps reports whether a line whose text starts with c may start
// a dependency label: a letter some label starts with, or any non-ASCII
// byte (the labels of other scripts).
func mayStartDeps(c byte) bool {
	switch c | 0x20 {
	case 'd', 'n', 'v', 'a', 'p', 'r':
		return true
	}
	return c >= 0x80
}

// scanDepFields reads a dependency label that is one field of a metadata
// line: "**Estimate**: 0.5 h | **Depends**: Task 1.1", "**Status:** open
// · **Abhängig von:** WP03". Only a label with a colon counts there.
func (r *parseState) scanDepFields(t *taskBuild, absStart int, line []byte) {
	if !bytes.ContainsAny(line, "|·") {
		return
	}
	for i := 0; i < len(line); i++ {
		var sep int
		switch {
		case line[i] == '|':
			sep = 1
		case bytes.HasPrefix(line[i:], []byte("·")):
			sep = len("·")
		default:
			continue
		}
		k := i + sep
		for k < len(line) && (line[k] == ' ' || line[k] == '\t') {
			k++
		}
		j := k
		for j < len(line) && (line[j] == '*' || line[j] == '_') {
			j++
		}
		if j >= len(line) || !mayStartDeps(line[j]) {
			continue
		}
		m := depsRe.FindSubmatchIndex(line[k:])
		if m == nil || m[2] < 0 {
			continue
		}
		rest := line[k+m[1]:]
		if e := bytes.IndexAny(rest, "|"); e >= 0 {
			rest = rest[:e]
		} else if e := bytes.Index(rest, []byte("·")); e >= 0 {
			rest = rest[:e]
		}
		found, none := r.depList(absStart+k+m[1], rest, false)
		t.deps = append(t.deps, found...)
		t.noDeps = t.noDeps || none
	}
}

// needsRe matches a "Needs" label at the start of a line: "**Needs**",
// "Needs:".
var needsRe = regexp.MustCompile(`^(?:\*\*|__|\*|_)?(?i:needs)(?:\*\*|__|\*|_)?(?:\s*:)?(?:\*\*|__|\*|_)?(?:\s|$)`)

// scanNeeds reads "**Needs** REL-01, REL-02" as dependencies, but only
// when everything after the label is task ids (or "none", "—"): "Needs"
// starts prose more often than "Depends" does ("Needs: 3 more tests",
// "**Needs** Postgres 15"), and such a line is neither read nor warned
// about.
func (r *parseState) scanNeeds(t *taskBuild, absStart int, line []byte, i int) {
	m := needsRe.FindIndex(line[i:])
	if m == nil {
		return
	}
	rest := line[i+m[1]:]
	found, none := r.depList(absStart+i+m[1], rest, false)
	if none || len(found) == 0 {
		return
	}
	if depTokens(rest) != len(found) {
		return // prose after the ids: "Needs 2 reviewers"
	}
	t.deps = append(t.deps, found...)
}

// depTokens counts the words of a dependency list that are not
// connectors ("and", "task", "&").
func depTokens(rest []byte) int {
	n := 0
	for _, loc := range depTokenRe.FindAllIndex(rest, -1) {
		tok := strings.Trim(string(rest[loc[0]:loc[1]]), "`*_([#)].:")
		if isDepConnector(strings.ToLower(tok)) {
			continue
		}
		n++
	}
	return n
}

// scanInlineDeps reads spec-kit's inline form anywhere in a line:
// "Implement AlbumService in src/album.py (depends on T012, T013)", also
// after a semicolon ("(data-model.md; depends on T011)") or an arrow
// (openspec-gradle's "Build the graph → depends: tdg-2, tdg-3") when only
// ids follow it. open says a "(depends on" on an earlier line of the paragraph
// is not closed yet, so this line's first ids continue its list ("(depends
// on T003, T012," then "T014)"); the result says the same for the next
// line.
func (r *parseState) scanInlineDeps(t *taskBuild, absStart int, line []byte, open bool) bool {
	if open {
		end := bytes.IndexByte(line, ')')
		seg := line
		if end >= 0 {
			seg = line[:end]
		}
		lead := len(seg) - len(bytes.TrimLeft(seg, " \t"))
		if m := leadingOnRe.FindIndex(seg[lead:]); m != nil { // "(depends" ended the line before
			lead += m[1]
		}
		found, _ := r.depList(absStart+lead, seg[lead:], false)
		t.deps = append(t.deps, found...)
		if end < 0 {
			return len(found) > 0 || len(bytes.TrimSpace(seg)) == 0
		}
	}
	open = false
	if !bytes.Contains(line, []byte("epends")) && !bytes.Contains(line, []byte("EPENDS")) {
		return false // most lines: no regexp
	}
	if !bytes.ContainsAny(line, "(;>→") {
		return false // "Depends on: 3" lines: nothing inline opens a list
	}
	for _, m := range inlineDepsRe.FindAllIndex(line, -1) {
		rest := line[m[1]:]
		end := bytes.IndexByte(rest, ')')
		seg := rest
		if end >= 0 {
			seg = rest[:end]
		}
		if bytes.IndexByte(seg, '(') >= 0 {
			continue
		}
		arrow := line[m[0]] != '(' && line[m[0]] != ';'
		found, _ := r.depList(absStart+m[1], seg, arrow)
		if line[m[0]] != '(' && depTokens(seg) != len(found) {
			continue // "(cached; depends on 2 flags)", "→ depends on the network" are prose
		}
		t.deps = append(t.deps, found...)
		inParen := line[m[0]] == '(' || bytes.LastIndexByte(line[:m[0]], '(') > bytes.LastIndexByte(line[:m[0]], ')')
		open = end < 0 && inParen
	}
	return open
}

// inlineDepsRe matches where an inline dependency list starts: "(depends
// on", "(depends:", "; depends on", "→ depends:" or "-> depends:".
var inlineDepsRe = regexp.MustCompile(`(?:[(;]|→|->)\s*(?i:depends(?:\s+on)?)\b\s*:?`)

// arrowDepsRe matches an arrow dependency list ending a title, which the
// title leaves out: "Build the graph → depends: tdg-2, tdg-3". Only ids
// may follow: "Define `→ depends:` syntax" keeps its words.
var arrowDepsRe = regexp.MustCompile(`\s*(?:→|->)\s*(?i:depends(?:\s+on)?)\s*:?\s*([\w.-]+(?:\s*,\s*[\w.-]+)*)\s*$`)

// trimArrowDeps takes an arrow dependency list off the end of a title,
// when every word of it is a task id: "Set up the client -> depends on
// network" is prose, and stays.
func trimArrowDeps(title string) string {
	if !strings.Contains(title, "epends") && !strings.Contains(title, "EPENDS") {
		return title
	}
	m := arrowDepsRe.FindStringSubmatchIndex(title)
	if m == nil {
		return title
	}
	for _, id := range strings.Split(title[m[2]:m[3]], ",") {
		id = strings.TrimSpace(id)
		if !isDepID(id) && slugID(id) != len(id) {
			return title
		}
	}
	return title[:m[0]]
}

// leadingOnRe matches the "on" that "(depends" at the end of a line left
// for the next.
var leadingOnRe = regexp.MustCompile(`^(?i:on)\b\s*:?`)

// depList reads task ids from the text after "Depends on:"; absStart is
// the text's offset in the file. It stops at the first word that is not an
// id, so "Depends on: 1 (the word count)" is [1]. none reports an explicit
// "none". A slug id ("tdg-2", openspec-gradle's) is read as weak
// (depRef.weak) unless it is in backticks or slugs is set (an arrow list
// or a dependency column, which hold only ids): in prose, "node-18" or
// "go-1.22" is more often a version than a task.
func (r *parseState) depList(absStart int, rest []byte, slugs bool) (found []depRef, none bool) {
	span := false // a range word ("a", "to", "bis") after an id: the next id ends a range
tokens:
	for _, loc := range depTokenRe.FindAllIndex(rest, -1) {
		tok := string(rest[loc[0]:loc[1]])
		trimmed := strings.TrimLeft(tok, "`*_([#")
		off := loc[0] + len(tok) - len(trimmed)
		tok = strings.TrimRight(trimmed, "`*_)].:。")
		if w := taskWord(tok); w > 0 && w < len(tok) && codeID(tok) != len(tok) { // "任务1.1", "Task#3" ("TASK-001" is a code id)
			off += w
			tok = strings.TrimLeft(tok[w:], "#")
		}
		switch low := strings.ToLower(tok); {
		case isRangeWord(low) && len(found) > 0 && !span && found[len(found)-1].through == "":
			span = true
			continue
		case isDepConnector(low):
			continue
		case isNoneWord(low):
			none = len(found) == 0
			break tokens
		}
		ticked := strings.HasPrefix(strings.TrimLeft(string(rest[loc[0]:loc[1]]), "*_([#"), "`")
		slug := !isDepID(tok) && slugID(tok) == len(tok)
		if !isDepID(tok) && !slug {
			break
		}
		if span { // "Tareas 1.12 a 1.21": every task from 1.12 to 1.21
			span = false
			if !slug {
				found[len(found)-1].through = tok
				continue
			}
		}
		l, c := r.position(absStart + off)
		found = append(found, depRef{id: tok, line: l, col: c, weak: slug && !slugs && !ticked})
	}
	return found, none
}

// isDepConnector reports whether a word of a dependency list is a
// connector between ids ("and", "tasks", "&", "和", "und"), not an id.
func isDepConnector(w string) bool {
	switch w {
	case "", "task", "tasks", "step", "steps", "and", "&", "+",
		"tareas", "tarefas", "aufgaben", "tâches", "taches", "pasos", "passos", "schritte", // "Tareas 0.1, 0.2"
		"y", "e", "und", "et", "o", "ou", "oder", "or", "和", "及", "与", "と", "및", "과", "와":
		return true
	}
	return taskWord(w) == len(w)
}

// isRangeWord reports whether a word between two ids of a dependency
// list makes them a range: "Tareas 1.1 a 1.9", "tasks 3 to 5", "2 bis 4".
func isRangeWord(w string) bool {
	switch w {
	case "to", "through", "thru", "a", "até", "ate", "bis", "à":
		return true
	}
	return false
}

// isNoneWord reports whether a word says a task depends on nothing.
func isNoneWord(w string) bool {
	switch w {
	case "none", "nothing", "n/a", "-", "–", "—", "无", "無", "なし", "없음",
		"ninguna", "ninguno", "nenhuma", "nenhum", "nada", "keine", "keiner", "aucune", "aucun", "rien":
		return true
	}
	return false
}

// isDepID reports whether s looks like a task id: "3", "3.2", "T012",
// "S01", "P0-1" (slug ids like "tdg-2": see depList).
func isDepID(s string) bool {
	if n := codeID(s); n > 0 && n == len(s) {
		return true
	}
	if len(s) > 1 && s[0] == 'T' {
		for i := 1; i < len(s); i++ {
			if !isDigit(s[i]) {
				return false
			}
		}
		return true
	}
	return s != "" && dottedNumber(s) == len(s)
}

// NumericID returns the numbers of a task id: "10" → [10], "3.2" → [3 2],
// "T010" → [10]. Ranges and ordering compare these. ok is false for an id
// with no number.
func NumericID(id string) (nums []int, ok bool) {
	i := 0
	for i < len(id) && !isDigit(id[i]) {
		i++
	}
	if i == len(id) {
		return nil, false
	}
	n := 0
	digits := false
	for ; i < len(id); i++ {
		c := id[i]
		switch {
		case isDigit(c):
			if n > 1e8 { // absurdly long numbers saturate instead of overflowing
				continue
			}
			n = n*10 + int(c-'0')
			digits = true
		case c == '.' && digits:
			nums = append(nums, n)
			n, digits = 0, false
		default:
			return nil, false
		}
	}
	if !digits {
		return nil, false
	}
	return append(nums, n), true
}

// CompareNumeric compares two numeric ids as version tuples: [3] < [3 1] <
// [3 2] < [4].
func CompareNumeric(a, b []int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
