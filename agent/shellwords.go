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
	var (
		argv   []string
		word   strings.Builder
		inWord bool // a word has started (even an empty one: '')
		// quoted: some part of the current word was quoted or escaped, so a
		// leading NAME= in it is not an assignment.
		quoted bool
	)
	end := func() {
		if inWord {
			argv = append(argv, word.String())
		}
		word.Reset()
		inWord, quoted = false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if c == '\n' && (len(argv) > 0 || inWord) && strings.Trim(s[i+1:], " \t\n") != "" {
				return nil, fmt.Errorf("newline at byte %d: a shell would start a new command there; quote it, or end the line with a backslash", i)
			}
			if len(argv) == 0 && inWord && !quoted && isAssignment(word.String()) {
				return nil, fmt.Errorf("command starts with the assignment %q: that needs a shell; pass variables with --env or use sh -c", word.String())
			}
			end()
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote at byte %d", i)
			}
			word.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord, quoted = true, true
		case c == '"':
			inWord, quoted = true, true
			closed := false
			for i++; i < len(s); i++ {
				d := s[i]
				if d == '"' {
					closed = true
					break
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
					return nil, fmt.Errorf("%q at byte %d inside double quotes would be expanded by a shell, and implloop runs no shell; use single quotes, or sh -c", string(d), i)
				}
				word.WriteByte(d)
			}
			if !closed {
				return nil, fmt.Errorf("unterminated double quote")
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("trailing backslash")
			}
			i++
			if s[i] == '\n' { // line continuation
				continue
			}
			word.WriteByte(s[i])
			inWord, quoted = true, true
		case strings.IndexByte("|&;<>()$`", c) >= 0, c == '#' && !inWord:
			return nil, fmt.Errorf("%q at byte %d is shell syntax, and implloop runs no shell; quote it, or wrap the command in sh -c '...'", string(c), i)
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if len(argv) == 0 && inWord && !quoted && isAssignment(word.String()) {
		return nil, fmt.Errorf("command is only the assignment %q", word.String())
	}
	end()
	if len(argv) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return argv, nil
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
