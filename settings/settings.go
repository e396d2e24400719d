package settings

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Settings are a run's settings. They are journaled with the run, so that a
// resume defaults to them; their JSON is read back by every later implloop
// and hashed into the run's inputs digest, so it keeps its shape.
type Settings struct {
	Plan        string `json:"plan"`
	Agent       string `json:"agent"`
	AgentCmd    string `json:"agent_cmd,omitempty"`
	Model       string `json:"model,omitempty"`
	Verify      string `json:"verify,omitempty"`
	TaskRange   string `json:"task_range,omitempty"`
	MaxAttempts int    `json:"max_attempts"`
	// Jobs is how many tasks may run at once (--jobs); 0 and 1 mean one
	// at a time. Never hashed: a task's identity is the same however many
	// run beside it.
	Jobs           int               `json:"jobs,omitempty"`
	Timeout        Duration          `json:"timeout"`
	OnBlocked      string            `json:"on_blocked"`
	Env            []string          `json:"env,omitempty"`
	Params         map[string]string `json:"params,omitempty"`
	PlanContext    string            `json:"plan_context"`
	IncludeChecked bool              `json:"include_checked,omitempty"`

	// Unattended runs (limits.go, budget.go, notify.go). None of them is
	// hashed: a fallback's calls have identities of their own (their
	// agent and model), and a cap or a wait changes when a run stops, not
	// what a call is asked.
	//
	// Fallbacks are the agents that take a call, in order, when the
	// agent (and every model of Model's list) hit a limit: NAME or
	// NAME:MODEL (--fallback-agent, repeatable).
	Fallbacks []string `json:"fallback_agents,omitempty"`
	// MaxWait bounds the time a run spends waiting for limits to lift,
	// in all; past it the run stops PARTIAL (0: it never waits).
	MaxWait Duration `json:"max_wait"`
	// MaxCost and MaxTokens cap what the run's live calls spend (0: no
	// cap); MaxTaskCost what one task's do. Replays never count.
	MaxCost     float64 `json:"max_cost,omitempty"`
	MaxTokens   int64   `json:"max_tokens,omitempty"`
	MaxTaskCost float64 `json:"max_task_cost,omitempty"`
	// Notify is a command run (with sh -c) at the end of the run, at a
	// block and when a wait for a limit begins, the event as one JSON
	// object on its stdin (docs/events.md).
	Notify string `json:"notify,omitempty"`
	// Sandbox runs each agent call in a sandbox (--sandbox, package
	// sandbox): SandboxAllow are more paths it may write, SandboxNetwork
	// "none" cuts it off the network, SandboxGates puts the gates in too.
	// Never hashed: the same work, done safer, is the same unit.
	Sandbox        bool     `json:"sandbox,omitempty"`
	SandboxAllow   []string `json:"sandbox_allow,omitempty"`
	SandboxNetwork string   `json:"sandbox_network,omitempty"`
	SandboxGates   bool     `json:"sandbox_gates,omitempty"`
	// SandboxTool is the tool that made the sandbox ("bubblewrap",
	// "sandbox-exec"), recorded at the start of a sandboxed run for its
	// report and explain.
	SandboxTool string `json:"sandbox_tool,omitempty"`

	// AgentVersion is what the agent CLI's --version printed at the start
	// of the run (presets only): recorded for the record, never hashed.
	AgentVersion string `json:"agent_version,omitempty"`

	// Flags names the settings given as flags, in this run or an ancestor
	// it resumes: front matter never overrides them.
	Flags []string `json:"flags,omitempty"`
	// FrontMatter names the settings taken from the plan's front matter, so
	// that a resume follows a front-matter edit (and a removed key reverts).
	FrontMatter []string `json:"front_matter,omitempty"`
}

// Defaults for the settings a user did not give.
const (
	DefaultMaxAttempts = 3
	// MaxJobs bounds --jobs: each job is an agent and a worktree.
	MaxJobs            = 64
	DefaultTimeout     = 30 * time.Minute
	DefaultOnBlocked   = "stop"
	DefaultPlanContext = "task"
	// DefaultMaxWait is how long a run waits for limits, in all, before it
	// stops: a night.
	DefaultMaxWait = 6 * time.Hour
)

// Default returns the settings of a run given no flags.
func Default() Settings {
	return Settings{
		Agent:       "exec",
		MaxAttempts: DefaultMaxAttempts,
		Timeout:     Duration(DefaultTimeout),
		OnBlocked:   DefaultOnBlocked,
		PlanContext: DefaultPlanContext,
		MaxWait:     Duration(DefaultMaxWait),
	}
}

// Models is the --model list: the model asked for first, then those
// that take a call when it hits a limit ("opus,sonnet"). [""] for none
// (the agent's default).
func (s Settings) Models() []string {
	var out []string
	for _, m := range strings.Split(s.Model, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// Fallback splits a --fallback-agent value, NAME or NAME:MODEL.
func Fallback(v string) (name, model string) {
	name, model, _ = strings.Cut(strings.TrimSpace(v), ":")
	return name, model
}

// Validate checks settings, whichever source they came from: flags, the
// plan's front matter, or a parent run's journal (see loop.Inherit). `run` and
// `resume` refuse the same values with the same words. The error is a
// *Error.
func (s Settings) Validate() error {
	if s.AgentCmd != "" && s.Agent != "exec" {
		// --agent-cmd is the exec backend's command; a preset would
		// silently ignore it and run something else than was asked for.
		return &Error{Flag: "agent-cmd",
			Msg:  fmt.Sprintf("--agent %s and --agent-cmd both given", s.Agent),
			Hint: "--agent-cmd runs your command with the exec backend: drop --agent " + s.Agent + " (or drop --agent-cmd to run " + s.Agent + ")"}
	}
	if s.MaxAttempts < 1 {
		return &Error{Flag: "max-attempts", Msg: fmt.Sprintf("--max-attempts must be at least 1, got %d", s.MaxAttempts),
			Hint: "give --max-attempts 1 or more"}
	}
	// 0 is what a journaled run without the key holds (one at a time);
	// given as a flag or in front matter it is refused (ValidateJobs).
	if s.Jobs < 0 || s.Jobs > MaxJobs {
		return jobsError(s.Jobs)
	}
	if s.OnBlocked != "stop" && s.OnBlocked != "continue" {
		return &Error{Flag: "on-blocked", Msg: fmt.Sprintf("--on-blocked must be stop or continue, got %q", s.OnBlocked),
			Hint: "give --on-blocked stop or --on-blocked continue"}
	}
	if s.PlanContext != "task" && s.PlanContext != "full" {
		return &Error{Flag: "plan-context", Msg: fmt.Sprintf("--plan-context must be task or full, got %q", s.PlanContext),
			Hint: "give --plan-context task or --plan-context full"}
	}
	if s.Timeout < 0 {
		return &Error{Flag: "timeout", Msg: "--timeout must not be negative", Hint: "give a duration like 20m, or 0 for no limit"}
	}
	for _, n := range s.Env {
		if err := checkEnvName(n); err != nil {
			return err
		}
	}
	for k := range s.Params {
		if k == "" {
			return &Error{Flag: "param", Msg: "--param with an empty name", Hint: "write --param as name=value"}
		}
	}
	return s.validateUnattended()
}

// validateUnattended checks the settings of unattended runs.
func (s Settings) validateUnattended() error {
	for _, f := range s.Fallbacks {
		name, _ := Fallback(f)
		switch {
		case name == "exec":
			return &Error{Flag: "fallback-agent", Msg: "--fallback-agent exec: a fallback is a preset (it has no command line of its own)",
				Hint: "give a preset: " + strings.Join(fallbackNames(), ", ") + " (NAME or NAME:MODEL)"}
		case !slices.Contains(fallbackNames(), name):
			return &Error{Flag: "fallback-agent", Msg: fmt.Sprintf("--fallback-agent %q: not an agent", f),
				Hint: "give a preset: " + strings.Join(fallbackNames(), ", ") + " (NAME or NAME:MODEL)"}
		}
	}
	if strings.Contains(s.Model, ",") && slices.Contains(s.Models(), "") {
		return &Error{Flag: "model", Msg: fmt.Sprintf("--model %q has an empty name in its list", s.Model), Hint: "write the list as --model opus,sonnet"}
	}
	if s.MaxWait < 0 {
		return &Error{Flag: "max-wait", Msg: "--max-wait must not be negative", Hint: "give a duration like 6h, or 0 to stop at the first limit instead of waiting"}
	}
	for _, c := range []struct {
		flag string
		v    float64
	}{{"max-cost", s.MaxCost}, {"max-task-cost", s.MaxTaskCost}} {
		if c.v < 0 || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return &Error{Flag: c.flag, Msg: fmt.Sprintf("--%s must be a positive number of US dollars, got %v", c.flag, c.v),
				Hint: "give --" + c.flag + " 5 (dollars), or leave it out for no cap"}
		}
	}
	if s.MaxTokens < 0 {
		return &Error{Flag: "max-tokens", Msg: fmt.Sprintf("--max-tokens must not be negative, got %d", s.MaxTokens),
			Hint: "give --max-tokens 2000000, or leave it out for no cap"}
	}
	return s.validateSandbox()
}

// validateSandbox checks the --sandbox-* settings.
func (s Settings) validateSandbox() error {
	switch s.SandboxNetwork {
	case "", SandboxNetworkOn, SandboxNetworkNone:
	default:
		return &Error{Flag: "sandbox-network", Msg: fmt.Sprintf("--sandbox-network must be on or none, got %q", s.SandboxNetwork),
			Hint: "give --sandbox-network none (no network in the sandbox) or on (the default)"}
	}
	for _, p := range s.SandboxAllow {
		if strings.TrimSpace(p) == "" {
			return &Error{Flag: "sandbox-allow", Msg: "--sandbox-allow with an empty path", Hint: "give --sandbox-allow a directory or file the agent may write"}
		}
	}
	if s.Sandbox && s.Agent == "builtin" {
		return &Error{Flag: "sandbox", Msg: "--sandbox with --agent builtin: the builtin agent runs inside implloop, there is no call to sandbox",
			Hint: "drop --sandbox, or run an external agent (--agent claude, --agent-cmd ...)"}
	}
	return nil
}

// ValidateJobs refuses a --jobs value someone gave (a flag, front
// matter): 1 to MaxJobs. Validate lets 0 pass, which a run journaled
// without the key holds and means one at a time.
func ValidateJobs(n int) error {
	if n < 1 || n > MaxJobs {
		return jobsError(n)
	}
	return nil
}

func jobsError(n int) error {
	return &Error{Flag: "jobs", Msg: fmt.Sprintf("--jobs must be between 1 and %d, got %d", MaxJobs, n),
		Hint: "give --jobs 1 (one task at a time, the default) or more"}
}

// Agents are the agent backends, sorted: the values of --agent. They are
// package agent's Names (a test in package loop holds the two together:
// this package may not import agent, see the package doc).
func Agents() []string {
	return []string{"builtin", "claude", "codex", "exec", "gemini", "opencode"}
}

// fallbackNames are the agents a --fallback-agent may name: the presets
// and builtin (exec has no command line of its own to fall back to).
func fallbackNames() []string {
	return slices.DeleteFunc(Agents(), func(n string) bool { return n == "exec" })
}

// The values of --sandbox-network.
const (
	SandboxNetworkOn   = "on"
	SandboxNetworkNone = "none"
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidEnvName reports whether name is an environment variable's name:
// letters, digits and _, not starting with a digit. It is the rule package
// identity applies to every unit's preimage (a test in package loop holds
// the two together), so that no run starts whose identities would then be
// refused.
func ValidEnvName(name string) bool { return envNameRE.MatchString(name) }

// checkEnvName refuses an --env entry that is not a variable name. A value
// is never echoed: NAME=secret prints as NAME=....
func checkEnvName(n string) error {
	if ValidEnvName(n) {
		return nil
	}
	shown := n
	if k, _, ok := strings.Cut(n, "="); ok {
		shown = k + "=..."
	}
	if n == "" || shown != n {
		return &Error{Flag: "env", Msg: fmt.Sprintf("--env %q: expected a variable name", shown),
			Hint: "--env takes a variable's NAME; its value is read from the environment and never stored"}
	}
	return &Error{Flag: "env", Msg: fmt.Sprintf("--env %q: not a variable name", shown),
		Hint: "--env takes a variable's NAME: letters, digits and _, not starting with a digit"}
}

// ParseParams reads --param values, each name=value, into a map; nil for
// none.
func ParseParams(list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range list {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, &Error{Flag: "param", Msg: fmt.Sprintf("--param %q: expected name=value", p), Hint: "write --param as name=value"}
		}
		out[k] = v
	}
	return out, nil
}

// Error is a run setting implloop refuses (a usage error): which
// flag sets it, what is wrong, what to do, and where the value came from
// when it was not a flag on this command line.
type Error struct {
	Flag string // the flag that sets it: "param", "agent-cmd"
	Msg  string // what is wrong, naming the flag
	Hint string // what to do next
	From string // "" for a flag; "inherited from run X"; "set by KEY in the plan's front matter"
}

func (e *Error) Error() string {
	if e.From == "" {
		return e.Msg
	}
	return e.Msg + ": " + e.From
}

// Duration is a time.Duration that reads and writes as "30m0s" in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*d = Duration(n)
	return nil
}
