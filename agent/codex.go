package agent

// codexPreset is the OpenAI Codex CLI (npm @openai/codex; checked against
// codex-cli 0.171.0's `codex exec --help`):
//
//	codex exec --json --sandbox workspace-write [-m M] -
//
// `exec` is the non-interactive mode; a prompt of `-` makes it read the
// instructions from stdin. --json prints JSONL events whose
// turn.completed records carry usage (input_tokens, cached_input_tokens,
// output_tokens). workspace-write lets it edit the repository and nothing
// outside it. -m goes before the `-` so it is not taken as the prompt.
func codexPreset() preset {
	return preset{
		name: "codex",
		bin:  "codex",
		pkg:  "@openai/codex",
		args: func(model string) []string {
			return append(withModel([]string{"exec", "--json", "--sandbox", "workspace-write"}, "-m", model), "-")
		},
	}
}
