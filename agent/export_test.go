package agent

// Test-only entry points: the program feeds the parser as output streams
// in (process.go), and never quotes a command.

import (
	"strings"
)

// ParseOutput reads an agent's accounting from its complete stdout. The
// accepted shapes, in the order they are tried:
//
//  1. one JSON object: Claude Code's --output-format json result
//     (result, is_error, usage, total_cost_usd, session_id), or Gemini
//     CLI's --output-format json object (response, stats.models, error);
//  2. a JSON array of messages: the last element with type "result";
//  3. JSON lines: the last record with type "result" (Claude Code's
//     stream-json, Gemini CLI's stream-json);
//  4. JSON lines with codex-style "turn.completed" events: their usage summed;
//  5. JSON lines with opencode-style "step_finish" events: tokens and cost summed.
//
// Anything else (plain text) yields a zero Result. ExitCode is not set.
func ParseOutput(out []byte) Result {
	p := newParser()
	p.Write(out)
	return p.result()
}

// QuoteCommand is SplitCommand's inverse: it quotes each word so that
// SplitCommand (and a POSIX shell) gives argv back.
func QuoteCommand(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = quoteWord(a)
	}
	return strings.Join(parts, " ")
}

func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./:,+@%", c) >= 0) {
			safe = false
			break
		}
	}
	if safe && !isAssignment(w) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
