package plan

import (
	"strings"
	"unicode/utf8"
)

// labelKind says what kind of label started a heading or an item.
type labelKind int

const (
	labelNone    labelKind = iota
	labelTask              // "Task 3"
	labelStep              // "Step 3"
	labelSpecKit           // "T003"
	labelNumber            // "3." or "3.2" (checklist items only)
)

// label is the id part of a task heading or item: "Task 3:" in "Task 3:
// Add login".
type label struct {
	kind  labelKind
	id    string
	title string
}

// parseLabel reads a task label at the start of s. bare allows a bare
// number ("3. Title", "3.2 Title"), which is an id in a checklist item but
// not in a heading ("## 1. Introduction" is not a task).
func parseLabel(s string, bare bool) label {
	s = strings.TrimSpace(s)
	rest, opener := stripOpeningEmphasis(s)

	var kind labelKind
	var id string
	var after string
	switch {
	case hasWordPrefixFold(rest, "task"), hasWordPrefixFold(rest, "step"):
		kind = labelTask
		if strings.EqualFold(rest[:4], "step") {
			kind = labelStep
		}
		r := strings.TrimLeft(rest[4:], " \t")
		if len(r) == len(rest)-4 { // no space between word and number
			return label{}
		}
		r = strings.TrimPrefix(r, "#")
		n := dottedNumber(r)
		if n == 0 {
			return label{}
		}
		id, after = r[:n], r[n:]
	case len(rest) > 1 && rest[0] == 'T' && isDigit(rest[1]):
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		kind, id, after = labelSpecKit, rest[:n], rest[n:]
	case bare && len(rest) > 0 && isDigit(rest[0]):
		n := dottedNumber(rest)
		id, after = rest[:n], rest[n:]
		switch {
		case strings.Contains(id, "."):
		case len(after) > 0 && (after[0] == '.' || after[0] == ')'):
		default:
			return label{} // "2 eggs": a number, not an id
		}
		kind = labelNumber
	default:
		return label{}
	}
	if !labelBoundary(after) {
		return label{}
	}
	title, closed := skipSeparator(after, opener)
	if opener != "" && !closed {
		// "**Step 1: Write the test**": the emphasis closes after the title.
		title = strings.TrimSpace(strings.TrimSuffix(title, opener))
	}
	return label{kind: kind, id: id, title: title}
}

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
	return r == '–' || r == '—'
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
	default:
		s = strings.TrimLeft(s, "-–—")
	}
	s = strings.TrimLeft(s, " \t")
	closeEm()
	return strings.TrimSpace(s), closed
}
