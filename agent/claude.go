package agent

// claudePreset is Claude Code (npm @anthropic-ai/claude-code; checked
// against 2.1.328's --help and its output under a scripted API server):
//
//	claude -p --output-format stream-json --verbose --permission-mode acceptEdits [--model M]
//
// -p (print mode) runs one non-interactive turn and reads the prompt from
// stdin when no prompt argument is given. --output-format stream-json
// (which print mode accepts only with --verbose) prints JSON lines: an
// assistant line per content block with its message's usage, so the
// tokens so far are known while the call runs (the heartbeat), a
// rate_limit_event whose resetsAt says to the second when a rejected
// usage limit lifts (--output-format json says it only as text, to the
// minute), and last the same result object --output-format json prints
// (result, is_error, usage, total_cost_usd, session_id, and on an API
// failure api_error_status, api_error_type, api_error). acceptEdits lets
// it write files without asking (there is no one to ask); commands still
// need the user's own allow rules.
func claudePreset() preset {
	return preset{
		name: "claude",
		bin:  "claude",
		pkg:  "@anthropic-ai/claude-code",
		args: func(model string) []string {
			return withModel([]string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}, "--model", model)
		},
	}
}
