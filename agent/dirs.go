package agent

// ConfigDirs are the paths an agent CLI writes besides the work tree: its
// config, credentials, sessions and caches, which --sandbox keeps
// writable (package sandbox). "~/" is the home directory; a path ending in
// "/" is a directory (made when missing, as the CLI would), any other a
// file (writable when it exists). getenv reads the environment variables
// that move them. exec and builtin have none.
func ConfigDirs(name string, getenv func(string) string) []string {
	switch name {
	case "claude":
		// ~/.claude.json is rewritten in place when its atomic rename is
		// refused (a file can be bound writable, not its siblings).
		dirs := []string{"~/.claude/", "~/.claude.json", "~/.local/state/claude/"}
		if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
			dirs = append(dirs, d+"/")
		}
		return dirs
	case "codex":
		if d := getenv("CODEX_HOME"); d != "" {
			return []string{d + "/"}
		}
		return []string{"~/.codex/"}
	case "gemini":
		return []string{"~/.gemini/"}
	case "opencode":
		return []string{"~/.local/share/opencode/", "~/.local/state/opencode/", "~/.cache/opencode/"}
	}
	return nil
}
