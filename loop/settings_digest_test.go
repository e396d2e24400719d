package loop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/unit"
)

// everySetting is a Settings with every field away from its zero value.
func everySetting() Settings {
	return Settings{
		Plan: "docs/plan.md", Agent: "exec", AgentCmd: "./agent.sh --fast", Model: "opus,sonnet", Verify: "make test",
		TaskRange: "2:5", MaxAttempts: 4, Jobs: 3, Timeout: Duration(90 * time.Second), OnBlocked: "continue",
		Env: []string{"API_TOKEN", "HOME"}, Params: map[string]string{"lang": "go", "n": "3"}, PlanContext: "full",
		IncludeChecked: true, Fallbacks: []string{"codex", "gemini:flash"}, MaxWait: Duration(2 * time.Hour),
		MaxCost: 5.5, MaxTokens: 2000000, MaxTaskCost: 1.25, Notify: "./notify.sh",
		Sandbox: true, SandboxAllow: []string{"/opt/cache"}, SandboxNetwork: "none", SandboxGates: true, SandboxTool: "bubblewrap",
		AgentVersion: "agent 1.2.3",
		Flags:        []string{"agent-cmd", "max-cost", "model", "notify", "sandbox", "sandbox-allow", "sandbox-network"},
		FrontMatter:  []string{"env", "params", "sandbox_gates"},
	}
}

// The settings a run journals are read back by every later implloop (a
// resume defaults to them) and hashed into its inputs digest: their JSON
// must not change shape, whatever the code that fills them.
const everySettingJSON = `{"plan":"docs/plan.md","agent":"exec","agent_cmd":"./agent.sh --fast","model":"opus,sonnet","verify":"make test","task_range":"2:5","max_attempts":4,"jobs":3,"timeout":"1m30s","on_blocked":"continue","env":["API_TOKEN","HOME"],"params":{"lang":"go","n":"3"},"plan_context":"full","include_checked":true,"fallback_agents":["codex","gemini:flash"],"max_wait":"2h0m0s","max_cost":5.5,"max_tokens":2000000,"max_task_cost":1.25,"notify":"./notify.sh","sandbox":true,"sandbox_allow":["/opt/cache"],"sandbox_network":"none","sandbox_gates":true,"sandbox_tool":"bubblewrap","agent_version":"agent 1.2.3","flags":["agent-cmd","max-cost","model","notify","sandbox","sandbox-allow","sandbox-network"],"front_matter":["env","params","sandbox_gates"]}`

// What of those settings enters the inputs digest: the caps, notify, the
// sandbox and the agent's version are left out, and so are the sandbox's
// flag names (the caps' and notify's stay, as the digest was first
// defined).
const everySettingDigested = `{"plan":"docs/plan.md","agent":"exec","agent_cmd":"./agent.sh --fast","model":"opus,sonnet","verify":"make test","task_range":"2:5","max_attempts":4,"jobs":3,"timeout":"1m30s","on_blocked":"continue","env":["API_TOKEN","HOME"],"params":{"lang":"go","n":"3"},"plan_context":"full","include_checked":true,"fallback_agents":["codex","gemini:flash"],"max_wait":"0s","flags":["agent-cmd","max-cost","model","notify"],"front_matter":["env","params","sandbox_gates"]}`

func TestSettingsJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(everySetting())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != everySettingJSON {
		t.Errorf("settings JSON changed:\n got %s\nwant %s", b, everySettingJSON)
	}
	var back Settings
	if err := json.Unmarshal([]byte(everySettingJSON), &back); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(back); string(b) != everySettingJSON {
		t.Errorf("settings JSON does not read back:\n got %s", b)
	}
}

// The inputs digest of a journaled run must stay what it was: a resume
// compares it with its own to say "nothing changed". The digest is
// rebuilt here from its parts, with the settings part as fixed bytes.
func TestInputsDigestSettingsPart(t *testing.T) {
	t.Parallel()
	sel, err := selectBytes("plan.md", []byte("---\nmodel: m\n---\n# Plan\n\n- [ ] one\n- [ ] two\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode("implloop.inputs\x00v1\x00" + identity.Version)
	for _, r := range unit.Roles() {
		sum := sha256.Sum256(r.Template())
		_ = enc.Encode([]string{r.Name, hex.EncodeToString(sum[:])})
	}
	_ = enc.Encode(json.RawMessage(everySettingDigested))
	_ = enc.Encode(sel)
	if got, want := inputsDigest(sel, everySetting()), hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("inputs digest %s, want %s: the settings part changed", got, want)
	}
}
