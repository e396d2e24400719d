package agent

// claudePreset is Claude Code (npm @anthropic-ai/claude-code; checked
// against 2.1.197's --help):
//
//	claude -p --output-format json --permission-mode acceptEdits [--model M]
//
// -p (print mode) runs one non-interactive turn and reads the prompt from
// stdin when no prompt argument is given. --output-format json prints one
// result object with result, is_error, usage, total_cost_usd and
// session_id. acceptEdits lets it write files without asking (there is no
// one to ask); commands still need the user's own allow rules.
func claudePreset() preset {
	return preset{
		name: "claude",
		bin:  "claude",
		pkg:  "@anthropic-ai/claude-code",
		args: func(model string) []string {
			return withModel([]string{"-p", "--output-format", "json", "--permission-mode", "acceptEdits"}, "--model", model)
		},
	}
}
