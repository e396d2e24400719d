package loop

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/settings"
)

// Inherit is the one place a resume's settings are put together: the
// parent's, then the flags given again. Every source goes through Validate
// and a refusal says where the value came from.
func TestInherit(t *testing.T) {
	t.Parallel()
	parent := DefaultSettings()
	parent.Agent, parent.AgentCmd = "exec", "./agent.sh"
	parent.Params = map[string]string{"k": "v"}
	parent.Flags = []string{"agent-cmd", "param"}

	flags := func(mod func(*Settings), given ...string) Settings {
		g := DefaultSettings()
		mod(&g)
		g.Flags = given
		return g
	}
	tests := []struct {
		name   string
		parent Settings
		given  Settings
		check  func(t *testing.T, s Settings)
		flag   string // a *SettingError for this flag
		from   string // ... whose From contains this ("" for a flag)
	}{
		{name: "nothing given keeps the parent's", parent: parent, given: flags(func(*Settings) {}),
			check: func(t *testing.T, s Settings) {
				if s.AgentCmd != "./agent.sh" || s.Params["k"] != "v" {
					t.Errorf("got %+v", s)
				}
			}},
		{name: "a param given replaces the inherited ones", parent: parent,
			given: flags(func(g *Settings) { g.Params = map[string]string{"x": "1"} }, "param"),
			check: func(t *testing.T, s Settings) {
				if len(s.Params) != 1 || s.Params["x"] != "1" {
					t.Errorf("params %v", s.Params)
				}
			}},
		{name: "a preset given alone drops the inherited command line", parent: parent,
			given: flags(func(g *Settings) { g.Agent = "claude" }, "agent"),
			check: func(t *testing.T, s Settings) {
				if s.Agent != "claude" || s.AgentCmd != "" {
					t.Errorf("agent %q cmd %q", s.Agent, s.AgentCmd)
				}
			}},
		{name: "a command line given alone is the exec backend", parent: DefaultSettings(),
			given: flags(func(g *Settings) { g.AgentCmd = "./b.sh" }, "agent-cmd"),
			check: func(t *testing.T, s Settings) {
				if s.Agent != "exec" || s.AgentCmd != "./b.sh" {
					t.Errorf("agent %q cmd %q", s.Agent, s.AgentCmd)
				}
			}},
		{name: "a preset and a command line given", parent: parent,
			given: flags(func(g *Settings) { g.Agent, g.AgentCmd = "claude", "echo" }, "agent", "agent-cmd"),
			flag:  "agent-cmd"},
		{name: "a bad flag", parent: parent,
			given: flags(func(g *Settings) { g.MaxAttempts = 0 }, "max-attempts"), flag: "max-attempts"},
		{name: "a bad flag not given is not looked at", parent: parent,
			given: flags(func(g *Settings) { g.Model = "m" }, "model"),
			check: func(t *testing.T, s Settings) {
				if s.Model != "m" || s.Flags[len(s.Flags)-1] != "param" {
					t.Errorf("model %q flags %v", s.Model, s.Flags)
				}
			}},
		{name: "an inherited bad env name", parent: func() Settings { p := parent; p.Env = []string{"1BAD"}; return p }(),
			given: flags(func(*Settings) {}), flag: "env", from: "inherited from run r-1"},
		{name: "an inherited bad env name given again", parent: func() Settings { p := parent; p.Env = []string{"1BAD"}; return p }(),
			given: flags(func(g *Settings) { g.Env = []string{"GOOD"} }, "env"),
			check: func(t *testing.T, s Settings) {
				if len(s.Env) != 1 || s.Env[0] != "GOOD" {
					t.Errorf("env %v", s.Env)
				}
			}},
		{name: "an inherited negative timeout", parent: func() Settings { p := parent; p.Timeout = Duration(-time.Second); return p }(),
			given: flags(func(*Settings) {}), flag: "timeout", from: "inherited"},
		{name: "inherited preset and command line", parent: func() Settings { p := parent; p.Agent = "codex"; return p }(),
			given: flags(func(*Settings) {}), flag: "agent-cmd", from: "inherited"},
		{name: "the sandbox is inherited", parent: func() Settings {
			p := parent
			p.Sandbox, p.SandboxAllow, p.SandboxNetwork = true, []string{"/opt/cache"}, "none"
			return p
		}(), given: flags(func(*Settings) {}),
			check: func(t *testing.T, s Settings) {
				if !s.Sandbox || len(s.SandboxAllow) != 1 || s.SandboxNetwork != "none" {
					t.Errorf("got %+v", s)
				}
			}},
		{name: "--sandbox=false turns it off", parent: func() Settings { p := parent; p.Sandbox = true; return p }(),
			given: flags(func(g *Settings) { g.Sandbox = false }, "sandbox"),
			check: func(t *testing.T, s Settings) {
				if s.Sandbox {
					t.Errorf("got %+v", s)
				}
			}},
		{name: "a bad --sandbox-network", parent: parent,
			given: flags(func(g *Settings) { g.SandboxNetwork = "off" }, "sandbox-network"), flag: "sandbox-network"},
		{name: "the builtin agent in an inherited sandbox", parent: func() Settings { p := parent; p.Sandbox = true; return p }(),
			given: flags(func(g *Settings) { g.Agent = "builtin" }, "agent"), flag: "sandbox", from: "inherited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Inherit(tt.parent, "r-1", tt.given)
			if tt.flag == "" {
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, s)
				return
			}
			var se *SettingError
			if !errors.As(err, &se) || se.Flag != tt.flag || !strings.Contains(se.From, tt.from) || (tt.from == "") != (se.From == "") {
				t.Fatalf("error %v (%+v), want a SettingError for --%s from %q", err, se, tt.flag, tt.from)
			}
			if se.Hint == "" {
				t.Errorf("%v: no hint", err)
			}
		})
	}
}

// The front matter goes through the same check, and a refusal names the
// key; its agent and agent_cmd pick the backend together, as the flags do.
func TestFrontMatterValidated(t *testing.T) {
	t.Parallel()
	none := func(string) bool { return false }
	for _, tt := range []struct {
		fm   map[string]any
		flag string
		key  string
	}{
		{map[string]any{"on_blocked": "maybe"}, "on-blocked", "on_blocked"},
		{map[string]any{"plan_context": "some"}, "plan-context", "plan_context"},
		{map[string]any{"env": []any{"A=1"}}, "env", "env"},
		{map[string]any{"params": map[string]any{"": "x"}}, "param", "params"},
		{map[string]any{"agent": "claude", "agent_cmd": "echo"}, "agent-cmd", "agent_cmd"},
	} {
		_, err := applyFrontMatter(DefaultSettings(), tt.fm, none)
		var se *SettingError
		if !errors.As(err, &se) || se.Flag != tt.flag || !strings.Contains(se.From, tt.key+" in the plan's front matter") {
			t.Errorf("front matter %v: %v, want a SettingError for --%s naming %s", tt.fm, err, tt.flag, tt.key)
		}
	}
	// An inherited command line does not survive a front-matter preset.
	d := DefaultSettings()
	d.AgentCmd = "./old.sh"
	d.FrontMatter = []string{"agent_cmd"}
	s, err := frontMatterOnResume(d, map[string]any{"agent": "claude"})
	if err != nil || s.Agent != "claude" || s.AgentCmd != "" {
		t.Fatalf("agent: claude over an inherited agent_cmd: %+v, %v", s, err)
	}
}

// SettingsOf is where a resume, watch and check start: the defaults, the
// parent's journaled settings over them, then the plan path.
func TestSettingsOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		settings string
		planPath string
		wantPlan string
		wantErr  string
		check    func(s Settings) bool
	}{
		{name: "no settings journaled: defaults, the run's plan", wantPlan: "plan.md",
			check: func(s Settings) bool {
				return s.MaxAttempts == settings.DefaultMaxAttempts && s.OnBlocked == settings.DefaultOnBlocked
			}},
		{name: "journaled settings win over defaults", settings: `{"plan":"p.md","agent":"claude","max_attempts":5}`, wantPlan: "p.md",
			check: func(s Settings) bool {
				return s.Agent == "claude" && s.MaxAttempts == 5 && s.PlanContext == settings.DefaultPlanContext
			}},
		{name: "a plan path given wins", settings: `{"plan":"p.md"}`, planPath: "docs/p.md", wantPlan: "docs/p.md"},
		{name: "bad JSON", settings: `{"max_attempts":"x"}`, wantErr: "run r-1: settings in the journal: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run := &cache.Run{ID: "r-1", PlanPath: "plan.md", Settings: []byte(tt.settings)}
			s, err := SettingsOf(run, tt.planPath)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Plan != tt.wantPlan || (tt.check != nil && !tt.check(s)) {
				t.Errorf("settings %+v", s)
			}
		})
	}
}
