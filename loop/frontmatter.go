package loop

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"
)

// applyFrontMatter fills the settings a plan's front matter sets, for each
// setting whose flag the user did not give (given reports whether the flag
// of that name was set on the command line). Flags win over front matter,
// front matter over defaults. The plan package has already checked each
// value's type (lint errors stop a run before this).
//
// The keys applied are recorded in s.FrontMatter.
func applyFrontMatter(s Settings, fm map[string]any, given func(flag string) bool) (Settings, error) {
	str := func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case nil:
			return ""
		}
		return fmt.Sprint(v)
	}
	s.FrontMatter = nil
	keys := make([]string, 0, len(fm))
	for k := range fm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := fm[key]
		flag := frontMatterFlags[key]
		if flag == "" || given(flag) {
			continue
		}
		// --agent and --agent-cmd pick the backend together: either flag
		// outranks both keys (agent: claude in a shared plan must not
		// replace the user's --agent-cmd, nor the reverse).
		if (key == "agent" && given("agent-cmd")) || (key == "agent_cmd" && given("agent")) {
			continue
		}
		s.FrontMatter = append(s.FrontMatter, key)
		switch key {
		// The two keys pick the backend together, as the two flags do
		// (Settings.Validate refuses a preset with a command line).
		case "agent":
			s.Agent = str(v)
			if _, both := fm["agent_cmd"]; !both && s.Agent != "exec" {
				s.AgentCmd = ""
			}
		case "agent_cmd":
			s.AgentCmd = str(v)
			if _, both := fm["agent"]; !both && !given("agent") {
				s.Agent = "exec"
			}
		case "model":
			s.Model = str(v)
		case "verify":
			s.Verify = str(v)
		case "max_attempts":
			n, err := strconv.Atoi(str(v))
			if err != nil {
				return s, fmt.Errorf("front matter max_attempts: %w", err)
			}
			s.MaxAttempts = n
		case "jobs":
			n, err := strconv.Atoi(str(v))
			if err != nil {
				return s, fmt.Errorf("front matter jobs: %w", err)
			}
			s.Jobs = n
		case "timeout":
			d, err := parseTimeout(v)
			if err != nil {
				return s, fmt.Errorf("front matter timeout: %w", err)
			}
			s.Timeout = Duration(d)
		case "on_blocked":
			s.OnBlocked = str(v)
		case "notify":
			s.Notify = str(v)
		case "plan_context":
			s.PlanContext = str(v)
		case "env":
			list, _ := v.([]any)
			s.Env = nil
			for _, n := range list {
				s.Env = append(s.Env, str(n))
			}
		case "sandbox":
			s.Sandbox, _ = v.(bool)
		case "sandbox_allow":
			list, _ := v.([]any)
			s.SandboxAllow = nil
			for _, p := range list {
				s.SandboxAllow = append(s.SandboxAllow, str(p))
			}
		case "sandbox_network":
			s.SandboxNetwork = str(v)
		case "sandbox_gates":
			s.SandboxGates, _ = v.(bool)
		case "params":
			m, _ := v.(map[string]any)
			s.Params = map[string]string{}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				s.Params[k] = str(m[k])
			}
		}
	}
	if err := s.Validate(); err != nil {
		var se *SettingError
		if errors.As(err, &se) {
			for key, flag := range frontMatterFlags {
				if flag == se.Flag && slices.Contains(s.FrontMatter, key) {
					se.From = "set by " + key + " in the plan's front matter"
					se.Hint = "fix " + key + " in the plan's front matter (or pass --" + flag + ", which wins over it)"
				}
			}
		}
		return s, err
	}
	return s, nil
}

// frontMatterFlags maps the front-matter keys that are run settings to the
// flags that set the same thing.
var frontMatterFlags = map[string]string{
	"agent": "agent", "agent_cmd": "agent-cmd", "model": "model", "verify": "verify",
	"max_attempts": "max-attempts", "jobs": "jobs", "timeout": "timeout", "on_blocked": "on-blocked",
	"plan_context": "plan-context", "env": "env", "params": "param", "notify": "notify",
	"sandbox": "sandbox", "sandbox_allow": "sandbox-allow", "sandbox_network": "sandbox-network", "sandbox_gates": "sandbox-gates",
}

// frontMatterOnResume re-applies the plan's front matter as it is now to the
// settings a resume inherited: a front-matter edit (model: a -> b) reaches
// the resume, a removed key reverts to its default, and a setting any run
// of the lineage was given as a flag is left alone.
func frontMatterOnResume(s Settings, fm map[string]any) (Settings, error) {
	flagged := func(flag string) bool {
		for _, f := range s.Flags {
			if f == flag {
				return true
			}
		}
		return false
	}
	d := DefaultSettings()
	for _, key := range s.FrontMatter {
		if _, still := fm[key]; still || flagged(frontMatterFlags[key]) {
			continue
		}
		switch key {
		case "agent":
			s.Agent = d.Agent
		case "agent_cmd":
			s.AgentCmd = ""
		case "model":
			s.Model = ""
		case "verify":
			s.Verify = ""
		case "max_attempts":
			s.MaxAttempts = d.MaxAttempts
		case "jobs":
			s.Jobs = d.Jobs
		case "timeout":
			s.Timeout = d.Timeout
		case "on_blocked":
			s.OnBlocked = d.OnBlocked
		case "notify":
			s.Notify = ""
		case "plan_context":
			s.PlanContext = d.PlanContext
		case "env":
			s.Env = nil
		case "params":
			s.Params = nil
		case "sandbox":
			s.Sandbox = false
		case "sandbox_allow":
			s.SandboxAllow = nil
		case "sandbox_network":
			s.SandboxNetwork = ""
		case "sandbox_gates":
			s.SandboxGates = false
		}
	}
	return applyFrontMatter(s, fm, flagged)
}

func parseTimeout(v any) (time.Duration, error) {
	switch x := v.(type) {
	case int:
		return time.Duration(x) * time.Second, nil
	case int64:
		return time.Duration(x) * time.Second, nil
	case float64:
		return time.Duration(x * float64(time.Second)), nil
	case string:
		if n, err := strconv.Atoi(x); err == nil {
			return time.Duration(n) * time.Second, nil
		}
		return time.ParseDuration(x)
	}
	return 0, fmt.Errorf("want a duration like \"20m\" or a number of seconds, got %v", v)
}
