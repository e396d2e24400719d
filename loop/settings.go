package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/implloop/implloop/identity"
)

// Settings are the run flags. They are recorded with the run so that a
// resume defaults to them.
type Settings struct {
	Plan           string            `json:"plan"`
	Agent          string            `json:"agent"`
	AgentCmd       string            `json:"agent_cmd,omitempty"`
	Model          string            `json:"model,omitempty"`
	Verify         string            `json:"verify,omitempty"`
	TaskRange      string            `json:"task_range,omitempty"`
	MaxAttempts    int               `json:"max_attempts"`
	Timeout        Duration          `json:"timeout"`
	OnBlocked      string            `json:"on_blocked"`
	Env            []string          `json:"env,omitempty"`
	Params         map[string]string `json:"params,omitempty"`
	PlanContext    string            `json:"plan_context"`
	IncludeChecked bool              `json:"include_checked,omitempty"`

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
	DefaultTimeout     = 30 * time.Minute
	DefaultOnBlocked   = "stop"
	DefaultPlanContext = "task"
)

// DefaultSettings returns the settings of a run given no flags.
func DefaultSettings() Settings {
	return Settings{
		Agent:       "exec",
		MaxAttempts: DefaultMaxAttempts,
		Timeout:     Duration(DefaultTimeout),
		OnBlocked:   DefaultOnBlocked,
		PlanContext: DefaultPlanContext,
	}
}

// Validate checks settings that come from the user.
func (s Settings) Validate() error {
	if s.MaxAttempts < 1 {
		return fmt.Errorf("--max-attempts must be at least 1, got %d", s.MaxAttempts)
	}
	if s.OnBlocked != "stop" && s.OnBlocked != "continue" {
		return fmt.Errorf("--on-blocked must be stop or continue, got %q", s.OnBlocked)
	}
	if s.PlanContext != "task" && s.PlanContext != "full" {
		return fmt.Errorf("--plan-context must be task or full, got %q", s.PlanContext)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("--timeout must not be negative")
	}
	for _, n := range s.Env {
		if !identity.ValidEnvName(n) {
			return &EnvNameError{Name: n}
		}
	}
	return nil
}

// EnvNameError is an --env entry that is not a variable name (the rule
// identity.ValidEnvName applies to every unit's preimage).
type EnvNameError struct{ Name string }

func (e *EnvNameError) Error() string {
	name := e.Name
	if k, _, ok := strings.Cut(name, "="); ok {
		name = k + "=..." // a value is never echoed
	}
	return fmt.Sprintf("--env %q is not a variable name (letters, digits and _, not starting with a digit)", name)
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
