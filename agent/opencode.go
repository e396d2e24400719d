package agent

// opencodePreset is opencode (npm opencode-ai; checked against 1.18.33's
// `opencode run --help` and binary):
//
//	opencode run --format json [-m PROVIDER/MODEL]
//
// `run` is the non-interactive mode; when stdin is not a terminal it reads
// stdin and uses it as the message (joined to any message arguments, of
// which none are given). --format json prints JSON events, one per line;
// each step_finish event carries that step's tokens (input, output,
// reasoning, cache.read, cache.write) and cost, which are summed. Models
// are named provider/model.
func opencodePreset() preset {
	return preset{
		name: "opencode",
		bin:  "opencode",
		pkg:  "opencode-ai",
		args: func(model string) []string {
			return withModel([]string{"run", "--format", "json"}, "-m", model)
		},
	}
}
