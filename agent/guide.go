package agent

import "strings"

// Guide is how a newcomer gets a preset working: where it comes from, how
// to log in once, the command line implloop runs it with, and what the
// permission flags in it allow (`implloop init` prints it).
type Guide struct {
	Name    string
	Package string // npm package
	Login   string // how to authenticate, once
	Command string // the argv implloop runs, as a shell would show it
	Allows  string // what the permission flags let the agent do unasked
}

// guideNotes are each preset's login and permission notes, by name. The
// command line comes from the preset itself, so it cannot drift.
var guideNotes = map[string]struct{ login, allows string }{
	"claude": {
		"run `claude` once and log in (/login), or set ANTHROPIC_API_KEY",
		"--permission-mode acceptEdits: it edits files without asking; shell commands (your tests too) only with allow rules in .claude/settings.json (permissions.allow, e.g. \"Bash(go test:*)\")",
	},
	"codex": {
		"`codex login` (or set OPENAI_API_KEY)",
		"--sandbox workspace-write: it edits and runs commands inside the repository, no network, nothing outside it",
	},
	"gemini": {
		"run `gemini` once and sign in with Google, or set GEMINI_API_KEY",
		"--approval-mode auto_edit: it edits files without asking, other tools are refused headless; --skip-trust trusts the repository for the call only",
	},
	"opencode": {
		"`opencode auth login` (pick a provider), or that provider's API key variable",
		"no flag: what it may do is its own configuration's (permission in opencode.json); by default it edits and runs commands",
	},
}

// Guides returns the presets' guides, in the order of Names.
func Guides() []Guide {
	var out []Guide
	for _, p := range presets() {
		n := guideNotes[p.name]
		out = append(out, Guide{Name: p.name, Package: p.pkg, Login: n.login,
			Command: strings.Join(append([]string{p.bin}, p.args("")...), " "), Allows: n.allows})
	}
	return out
}
