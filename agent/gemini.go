package agent

// geminiPreset is Google's Gemini CLI (npm @google/gemini-cli; checked
// against 0.61.0's --help, its source and a run):
//
//	gemini --output-format stream-json --approval-mode auto_edit --skip-trust [-m M]
//
// With stdin not a terminal, Gemini CLI runs headless and takes stdin as
// the prompt (its -p text would be appended to stdin, so none is given).
// --output-format stream-json prints JSON lines (init, message, tool_use,
// tool_result, error) ending with a result record whose stats hold the
// session's tokens, on failure too: status "error", error.message and the
// calls paid before it. (--output-format json writes its failure object to
// stderr with no stats, so a failed call looked free.)
// auto_edit approves its edit tools without asking. --skip-trust trusts
// the repository for this session only: headless Gemini CLI otherwise
// exits (code 55) in a folder the user never trusted interactively, and an
// untrusted folder would also force the approval mode back to "default".
// Running implloop in the repository is that trust decision, as it is for
// Claude Code, whose -p mode skips its trust dialog. Gemini CLI reports no
// cost.
func geminiPreset() preset {
	return preset{
		name: "gemini",
		bin:  "gemini",
		pkg:  "@google/gemini-cli",
		args: func(model string) []string {
			return withModel([]string{"--output-format", "stream-json", "--approval-mode", "auto_edit", "--skip-trust"}, "-m", model)
		},
	}
}
