package loop

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// ApplyFrontMatter fills the settings a plan's front matter sets, for each
// setting whose flag the user did not give (given reports whether the flag
// of that name was set on the command line). Flags win over front matter,
// front matter over defaults. The plan package has already checked each
// value's type (lint errors stop a run before this).
func ApplyFrontMatter(s Settings, fm map[string]any, given func(flag string) bool) (Settings, error) {
	str := func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case nil:
			return ""
		}
		return fmt.Sprint(v)
	}
	for key, v := range fm {
		flag := map[string]string{
			"agent": "agent", "agent_cmd": "agent-cmd", "model": "model", "verify": "verify",
			"max_attempts": "max-attempts", "timeout": "timeout", "on_blocked": "on-blocked",
			"plan_context": "plan-context", "env": "env", "params": "param",
		}[key]
		if flag == "" || given(flag) {
			continue
		}
		switch key {
		case "agent":
			s.Agent = str(v)
		case "agent_cmd":
			s.AgentCmd = str(v)
			if !given("agent") {
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
		case "timeout":
			d, err := parseTimeout(v)
			if err != nil {
				return s, fmt.Errorf("front matter timeout: %w", err)
			}
			s.Timeout = Duration(d)
		case "on_blocked":
			s.OnBlocked = str(v)
		case "plan_context":
			s.PlanContext = str(v)
		case "env":
			list, _ := v.([]any)
			s.Env = nil
			for _, n := range list {
				s.Env = append(s.Env, str(n))
			}
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
	return s, s.Validate()
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
