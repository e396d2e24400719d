package agent

import (
	"fmt"
	"strings"
)

// SplitCommand splits an --agent-cmd command line into an argv the way a
// POSIX shell splits words, without running a shell: blanks (spaces and
// tabs) separate words, as do newlines before the first word or after the
// last; 'single quotes' keep everything literally;
// "double quotes" keep everything except that a backslash escapes $, `, ",
// \ and newline; outside quotes a backslash escapes the next character and
// backslash-newline is removed. Nothing is expanded.
//
// Syntax that only a shell could give meaning to is refused rather than
// passed on as literal text: unquoted | & ; < > ( ), a newline between
// words, # at the start of a word, $ and `
// (outside single quotes), and a leading NAME=value assignment. Wrap such a
// command in `sh -c '...'` to get a shell.
func SplitCommand(s string) ([]string, error) {
	var w splitter
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if c == '\n' && (len(w.argv) > 0 || w.inWord) && strings.Trim(s[i+1:], " \t\n") != "" {
				return nil, fmt.Errorf("newline at byte %d: a shell would start a new command there; quote it, or end the line with a backslash", i)
			}
			if w.leadingAssignment() {
				return nil, fmt.Errorf("command starts with the assignment %q: that needs a shell; pass variables with --env or use sh -c", w.word.String())
			}
			w.end()
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote at byte %d", i)
			}
			w.word.WriteString(s[i+1 : i+1+j])
			i += j + 1
			w.inWord, w.quoted = true, true
		case c == '"':
			w.inWord, w.quoted = true, true
			closing, err := doubleQuoted(s, i, &w.word)
			if err != nil {
				return nil, err
			}
			i = closing
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("trailing backslash")
			}
			i++
			if s[i] == '\n' { // line continuation
				continue
			}
			w.word.WriteByte(s[i])
			w.inWord, w.quoted = true, true
		case strings.IndexByte("|&;<>()$`", c) >= 0, c == '#' && !w.inWord:
			return nil, fmt.Errorf("%q at byte %d is shell syntax, and implloop runs no shell; quote it, or wrap the command in sh -c '...'", string(c), i)
		default:
			w.word.WriteByte(c)
			w.inWord = true
		}
	}
	if w.leadingAssignment() {
		return nil, fmt.Errorf("command is only the assignment %q", w.word.String())
	}
	w.end()
	if len(w.argv) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return w.argv, nil
}

// splitter is SplitCommand's state: the words so far and the one being
// read.
type splitter struct {
	argv   []string
	word   strings.Builder
	inWord bool // a word has started (even an empty one: '')
	// quoted: some part of the current word was quoted or escaped, so a
	// leading NAME= in it is not an assignment.
	quoted bool
}

// end closes the word being read, if one has started.
func (w *splitter) end() {
	if w.inWord {
		w.argv = append(w.argv, w.word.String())
	}
	w.word.Reset()
	w.inWord, w.quoted = false, false
}

// leadingAssignment reports whether the word being read is the command's
// first and an unquoted NAME=value, which only a shell would understand.
func (w *splitter) leadingAssignment() bool {
	return len(w.argv) == 0 && w.inWord && !w.quoted && isAssignment(w.word.String())
}

// doubleQuoted copies the double-quoted text that opens at s[open] into
// word, undoing the escapes a shell undoes there, and returns where the
// closing quote stands.
func doubleQuoted(s string, open int, word *strings.Builder) (int, error) {
	for i := open + 1; i < len(s); i++ {
		d := s[i]
		if d == '"' {
			return i, nil
		}
		if d == '\\' && i+1 < len(s) {
			switch n := s[i+1]; n {
			case '$', '`', '"', '\\':
				word.WriteByte(n)
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		if d == '$' || d == '`' {
			return 0, fmt.Errorf("%q at byte %d inside double quotes would be expanded by a shell, and implloop runs no shell; use single quotes, or sh -c", string(d), i)
		}
		word.WriteByte(d)
	}
	return 0, fmt.Errorf("unterminated double quote")
}

// isAssignment reports whether w reads as NAME=value.
func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := w[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
