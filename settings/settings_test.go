package settings

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestParseParams(t *testing.T) {
	t.Parallel()
	m, err := ParseParams([]string{"a=1", "b=", "c=x=y"})
	if err != nil || m["a"] != "1" || m["b"] != "" || m["c"] != "x=y" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"foo", "=v", ""} {
		var se *Error
		if _, err := ParseParams([]string{bad}); !errors.As(err, &se) || se.Flag != "param" {
			t.Errorf("--param %q: %v", bad, err)
		}
	}
	if m, err := ParseParams(nil); m != nil || err != nil {
		t.Errorf("no params: %v %v", m, err)
	}
}

// everyField is a Settings with every field away from its default.
func everyField() Settings {
	return Settings{
		Plan: "docs/plan.md", Agent: "claude", AgentCmd: "./agent.sh", Model: "opus,sonnet", Verify: "make test",
		TaskRange: "2:5", MaxAttempts: 4, Jobs: 3, Timeout: Duration(90 * time.Second), OnBlocked: "continue",
		Env: []string{"API_TOKEN"}, Params: map[string]string{"n": "3"}, PlanContext: "full",
		IncludeChecked: true, Fallbacks: []string{"codex"}, MaxWait: Duration(2 * time.Hour),
		MaxCost: 5.5, MaxTokens: 2000000, MaxTaskCost: 1.25, Notify: "./notify.sh",
		Sandbox: true, SandboxAllow: []string{"/opt/cache"}, SandboxNetwork: "none", SandboxGates: true, SandboxTool: "bubblewrap",
		AgentVersion: "agent 1.2.3", Flags: []string{"model"}, FrontMatter: []string{"env"},
	}
}

func equalJSON(t *testing.T, a, b Settings) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
