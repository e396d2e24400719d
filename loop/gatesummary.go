package loop

import (
	"regexp"
	"strings"
)

// GateSummary is the one line that says why a gate failed, for progress
// lines, block reasons and reports: the first line of its output that names
// an error (a compile error with its position, a failing test, a panic, an
// assertion), not the last line, which is usually a tool's own
// "FAIL", "exit status 1" or "make: *** Error 2". With no such line it is
// the last line that says more than that; "" for empty output.
func GateSummary(output string) string {
	lines := strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n")
	for _, re := range summaryPatterns {
		for _, l := range lines {
			l = strings.TrimSpace(l)
			if l != "" && !noise(l) && re.MatchString(l) {
				return clipSummary(l)
			}
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !noise(l) {
			return clipSummary(l)
		}
	}
	return clipSummary(strings.TrimSpace(lastLine(output)))
}

// summaryPatterns are tried in order, each over the whole output: the most
// specific first, so a failing test's name wins over a generic "error".
var summaryPatterns = []*regexp.Regexp{
	// A position: file.go:12:3: msg, src/a.ts(3,5): error TS2304, a.py:7: ...
	regexp.MustCompile(`^[^\s:]+\.[A-Za-z0-9]+(:\d+(:\d+)?:|\(\d+,\d+\):) ?\S`),
	// Rust and friends: error[E0425]: cannot find value
	regexp.MustCompile(`^error(\[\w+\])?: `),
	// Go tests, pytest, jest, cargo test, mocha.
	regexp.MustCompile(`^(--- FAIL: |FAILED |FAIL: |● |test \S+ \.\.\. FAILED|\d+\) )`),
	regexp.MustCompile(`^panic: |^fatal error: |^Traceback |^thread '.*' panicked`),
	regexp.MustCompile(`(?i)^(\w+)?(error|exception)\b.*:|assert`),
	regexp.MustCompile(`(?i)\b(error|failed|failure|undefined|cannot|not found|no such)\b`),
}

// noise reports lines that end a tool's output without saying what went
// wrong.
func noise(l string) bool {
	return noiseLine.MatchString(l)
}

var noiseLine = regexp.MustCompile(`^(FAIL|FAILED|ok|PASS|exit status \d+|make(\[\d+\])?: \*\*\* .*|npm (ERR!|error) .*(code|errno|Lifecycle|A complete log|command failed|exit).*|error: (command|script|Recipe) .*|FAIL\s+\S+\s+[\d.]+s|FAIL\s+\S+ \[(build|setup) failed\]|=+ .* =+|# \S+|Error: Process completed with exit code \d+\.?|ERROR: .*returned non-zero.*|implloop: gate killed after .*)$`)

// clipSummary keeps a summary to one readable line.
func clipSummary(s string) string {
	const max = 160
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
