package loop

import (
	"testing"
	"time"
)

func TestApplyFrontMatter(t *testing.T) {
	t.Parallel()
	fm := map[string]any{
		"title": "ignored", "agent": "claude", "model": "m1", "verify": "make test",
		"max_attempts": 2, "timeout": "90s", "env": []any{"API_TOKEN"},
		"params": map[string]any{"lang": "go", "n": 3},
	}
	none := func(string) bool { return false }
	s, err := applyFrontMatter(DefaultSettings(), fm, none)
	if err != nil {
		t.Fatal(err)
	}
	if s.Agent != "claude" || s.Model != "m1" || s.Verify != "make test" || s.MaxAttempts != 2 ||
		time.Duration(s.Timeout) != 90*time.Second || len(s.Env) != 1 || s.Params["n"] != "3" {
		t.Fatalf("settings = %+v", s)
	}

	// A flag the user gave wins over the front matter.
	given := func(f string) bool { return f == "model" || f == "max-attempts" }
	d := DefaultSettings()
	d.Model, d.MaxAttempts = "flag-model", 5
	s, err = applyFrontMatter(d, fm, given)
	if err != nil {
		t.Fatal(err)
	}
	if s.Model != "flag-model" || s.MaxAttempts != 5 || s.Agent != "claude" {
		t.Fatalf("flags did not win: %+v", s)
	}

	// Seconds as a number, and a bad value.
	s, err = applyFrontMatter(DefaultSettings(), map[string]any{"timeout": 120}, none)
	if err != nil || time.Duration(s.Timeout) != 2*time.Minute {
		t.Fatalf("timeout 120: %v %v", s.Timeout, err)
	}
	if _, err := applyFrontMatter(DefaultSettings(), map[string]any{"on_blocked": "explode"}, none); err == nil {
		t.Fatal("on_blocked explode: want an error")
	}

	// The sandbox's keys; --sandbox given wins over sandbox:, and a
	// resume whose plan dropped them reverts to no sandbox.
	box := map[string]any{"sandbox": true, "sandbox_allow": []any{"~/.gradle", "fixtures"}, "sandbox_network": "none", "sandbox_gates": true}
	s, err = applyFrontMatter(DefaultSettings(), box, none)
	if err != nil || !s.Sandbox || len(s.SandboxAllow) != 2 || s.SandboxAllow[0] != "~/.gradle" || s.SandboxNetwork != "none" || !s.SandboxGates {
		t.Fatalf("sandbox keys: %+v %v", s, err)
	}
	if s, err = frontMatterOnResume(s, map[string]any{}); err != nil || s.Sandbox || s.SandboxAllow != nil || s.SandboxNetwork != "" || s.SandboxGates {
		t.Fatalf("sandbox keys removed: %+v %v", s, err)
	}
	s, err = applyFrontMatter(DefaultSettings(), box, func(f string) bool { return f == "sandbox" })
	if err != nil || s.Sandbox {
		t.Fatalf("--sandbox=false given: %+v %v", s, err)
	}
	if _, err := applyFrontMatter(DefaultSettings(), map[string]any{"sandbox_network": "maybe"}, none); err == nil {
		t.Fatal("sandbox_network maybe: want an error")
	}
}

// --agent-cmd outranks the front matter's agent (and --agent its
// agent_cmd): the two pick the backend together.
func TestFrontMatterAgentVersusAgentCmd(t *testing.T) {
	t.Parallel()
	d := DefaultSettings()
	d.AgentCmd = "./agent.sh"
	s, err := applyFrontMatter(d, map[string]any{"agent": "builtin"}, func(f string) bool { return f == "agent-cmd" })
	if err != nil {
		t.Fatal(err)
	}
	if s.Agent != "exec" || s.AgentCmd != "./agent.sh" {
		t.Fatalf("front matter agent replaced --agent-cmd: %+v", s)
	}
	d = DefaultSettings()
	d.Agent = "claude"
	s, err = applyFrontMatter(d, map[string]any{"agent_cmd": "./other.sh"}, func(f string) bool { return f == "agent" })
	if err != nil {
		t.Fatal(err)
	}
	if s.Agent != "claude" || s.AgentCmd != "" {
		t.Fatalf("front matter agent_cmd replaced --agent: %+v", s)
	}
}
