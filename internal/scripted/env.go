package scripted

import (
	"os"
	"strings"
)

// IsolatedEnv is the environment that keeps a CLI under test on loopback
// and out of the user's files: anything that would leave the machine goes
// to the server at url instead (which logs and refuses it, so it shows in
// the server's record of calls as a CONNECT or an absolute URL), and home
// (a temp dir) is its HOME and XDG base, so no user configuration or
// credentials are read.
func IsolatedEnv(url, home string) map[string]string {
	return map[string]string{
		"HTTPS_PROXY":     url,
		"HTTP_PROXY":      url,
		"ALL_PROXY":       url,
		"https_proxy":     url,
		"http_proxy":      url,
		"all_proxy":       url,
		"NO_PROXY":        "127.0.0.1,localhost",
		"no_proxy":        "127.0.0.1,localhost",
		"HOME":            home,
		"XDG_CONFIG_HOME": home + "/.config",
		"XDG_CACHE_HOME":  home + "/.cache",
		"XDG_DATA_HOME":   home + "/.local/share",
		"XDG_STATE_HOME":  home + "/.local/state",
	}
}

// Environ is os.Environ() without the variables named in env, without any
// whose name starts with XDG_, OTEL_ or one of drop, plus env: a full
// environment for exec.Cmd.Env in which only env speaks for the CLI.
func Environ(env map[string]string, drop ...string) []string {
	drop = append([]string{"XDG_", "OTEL_"}, drop...)
	var out []string
next:
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := env[name]; ok {
			continue
		}
		for _, p := range drop {
			if strings.HasPrefix(name, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
