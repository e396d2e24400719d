package settings

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"
)

// A Setting is one row of the table: one run setting, by its flag.
type Setting struct {
	// Flag is the flag of `implloop run` and `resume` that gives it
	// ("max-attempts"), the name [Settings.Flags] records.
	Flag string
	// Help is the flag's help text.
	Help string
	// Key is the front-matter key that gives it in a plan
	// ("max_attempts"); "" when the front matter cannot.
	Key string
	// Type is what the key's value must be (lint checks it).
	Type Type
	// Doc is the key's line in docs/plan-format.md.
	Doc string
	// Values are the values it takes when they are few and fixed (the
	// shell completes them); Paths says a value may name a file (the shell
	// completes paths). Neither: the shell completes nothing.
	Values []string
	Paths  bool
	// Hashed says whether it changes what an agent is asked.
	Hashed Hashed

	// field is where it lives in the record: a pointer to the field.
	field func(s *Settings) any
	// flagDefault sets the flag's default where it is not [Default]'s
	// value; hideDefault leaves the default out of the flag's help.
	flagDefault func(s *Settings)
	hideDefault bool
	// pair is the flag of the setting this one picks a value together
	// with, and alone what giving this one without that one does to the
	// record (--agent and --agent-cmd pick the backend together).
	pair  string
	alone func(s *Settings)
}

// Hashed says what a setting's value enters.
type Hashed int

const (
	// Identity: every unit's identity (and so the inputs digest): another
	// value asks the agent something else, and nothing replays.
	Identity Hashed = iota
	// Inputs: the inputs digest only (loop/uptodate.go): another value
	// changes which units a run has or what it does with their verdicts,
	// not what a unit asks, so the units replay but the resume is planned
	// unit by unit instead of answering "nothing changed".
	Inputs
	// Neither: when a run stops, what it tells, and how safely its calls
	// run, never what they ask. Its value is left out of the inputs
	// digest.
	Neither
)

// table is every run setting, in the order their flags apply over a
// parent's settings on resume (agent before agent-cmd) and their keys are
// listed by lint. Help and Doc are user-facing text: docs/cli and
// docs/plan-format.md are generated from them.
var table = []Setting{
	{Flag: "agent", Key: "agent", Type: TypeString, Hashed: Identity,
		Help:   "agent backend: claude, codex, gemini, opencode, builtin, or exec (with --agent-cmd). No default: without --agent, --agent-cmd or agent: in the plan's front matter, run stops with \"no agent given\" (resume: the run's own)",
		Doc:    "agent backend: claude, codex, gemini, opencode, exec, builtin",
		Values: Agents(),
		field:  func(s *Settings) any { return &s.Agent },
		// Internally an unnamed agent is exec without a command, which run
		// refuses; "(default \"exec\")" in the help would promise one.
		hideDefault: true,
		// A preset given alone drops a command line from another source.
		pair: "agent-cmd", alone: func(s *Settings) {
			if s.Agent != "exec" {
				s.AgentCmd = ""
			}
		}},
	{Flag: "agent-cmd", Key: "agent_cmd", Type: TypeString, Hashed: Identity, Paths: true,
		Help:  "command line of a custom agent (implies --agent exec); split like a shell would, run without one",
		Doc:   "the command line of the exec backend",
		field: func(s *Settings) any { return &s.AgentCmd },
		// A command line given alone is the exec backend's.
		pair: "agent", alone: func(s *Settings) { s.Agent = "exec" }},
	{Flag: "model", Key: "model", Type: TypeString, Hashed: Identity,
		Help:  "model to ask the agent for (part of every unit's identity); a list opus,sonnet: on a usage limit the next takes the call",
		Doc:   "model name passed to the agent",
		field: func(s *Settings) any { return &s.Model }},
	{Flag: "verify", Key: "verify", Type: TypeString, Hashed: Identity, Paths: true,
		Help:  "gate command run with sh -c after each attempt (a task's own verify block wins)",
		Doc:   "the gate command run after every task that has no verify block of its own",
		field: func(s *Settings) any { return &s.Verify }},
	{Flag: "task-range", Hashed: Inputs,
		Help:  "tasks to run: 10:13, 10:, :5, 7, T010:T013 (default: all)",
		field: func(s *Settings) any { return &s.TaskRange }},
	{Flag: "max-attempts", Key: "max_attempts", Type: TypePositiveInt, Hashed: Inputs,
		Help:  "live attempts per task before it is blocked",
		Doc:   "attempts per task before it is BLOCKED",
		field: func(s *Settings) any { return &s.MaxAttempts }},
	{Flag: "jobs", Key: "jobs", Type: TypePositiveInt, Hashed: Inputs,
		Help:  "how many tasks may run at once, each in its own worktree (see 'Parallel tasks' in docs/plan-format.md)",
		Doc:   "how many tasks may run at once (see \"Parallel tasks\")",
		field: func(s *Settings) any { return &s.Jobs },
		// The record's 0 is what a run journaled before --jobs holds.
		flagDefault: func(s *Settings) { s.Jobs = 1 }},
	{Flag: "timeout", Key: "timeout", Type: TypeDuration, Hashed: Identity,
		Help:  "per agent call and per gate; the agent's process group is killed after it (0: no limit)",
		Doc:   "limit for one agent call",
		field: func(s *Settings) any { return &s.Timeout }},
	{Flag: "on-blocked", Key: "on_blocked", Type: TypeString, Hashed: Inputs,
		Help:   "after a blocked task: stop, or continue with the next tasks (those depending on it stay pending)",
		Doc:    "what a blocked task does to the run: stop, or continue",
		Values: []string{"stop", "continue"},
		field:  func(s *Settings) any { return &s.OnBlocked }},
	{Flag: "plan-context", Key: "plan_context", Type: TypeScalar, Hashed: Identity,
		Help:   "what the agent gets: task (task text and preamble) or full (also the plan's path; any plan edit re-runs every task)",
		Doc:    "how much of the plan each prompt carries: task, or full",
		Values: []string{"task", "full"},
		field:  func(s *Settings) any { return &s.PlanContext }},
	{Flag: "env", Key: "env", Type: TypeNames, Hashed: Identity,
		Help:  "NAME of an environment variable the agent depends on (repeatable; its name, never its value, joins the identity)",
		Doc:   "environment variables passed through to the agent",
		field: func(s *Settings) any { return &s.Env }},
	{Flag: "param", Key: "params", Type: TypeMapping, Hashed: Identity,
		Help:  "k=v handed to the agent in the task context (repeatable; part of the identity)",
		Doc:   "user parameters handed to the agent",
		field: func(s *Settings) any { return &s.Params }},
	{Flag: "include-checked", Hashed: Inputs,
		Help:  "also run tasks already checked (- [x]) in the plan",
		field: func(s *Settings) any { return &s.IncludeChecked }},
	{Flag: "fallback-agent", Hashed: Inputs,
		Help:   "NAME or NAME:MODEL of an agent that takes a call when the agent hits a usage limit, instead of waiting (repeatable, in order)",
		Values: fallbackNames(),
		field:  func(s *Settings) any { return &s.Fallbacks }},
	{Flag: "max-wait", Hashed: Neither,
		Help:  "how long the run may wait for usage limits to lift, in all, before it stops PARTIAL (0: never wait)",
		field: func(s *Settings) any { return &s.MaxWait }},
	{Flag: "max-cost", Hashed: Neither,
		Help:  "stop at the next task boundary once the run's live calls cost this many US dollars (0: no cap)",
		field: func(s *Settings) any { return &s.MaxCost }},
	{Flag: "max-tokens", Hashed: Neither,
		Help:  "stop at the next task boundary once the run's live calls used this many tokens (0: no cap)",
		field: func(s *Settings) any { return &s.MaxTokens }},
	{Flag: "max-task-cost", Hashed: Neither,
		Help:  "no further attempt of a task once its live calls cost this many US dollars (0: no cap)",
		field: func(s *Settings) any { return &s.MaxTaskCost }},
	{Flag: "notify", Key: "notify", Type: TypeString, Hashed: Neither,
		Help:  "command run with sh -c at the end, at a block and when a wait for a limit begins, the event as JSON on stdin (docs/events.md)",
		Doc:   "a command run at the end of the run, at a block and when a wait for a usage limit begins, with the event as JSON on its stdin",
		field: func(s *Settings) any { return &s.Notify }},
	{Flag: "sandbox", Key: "sandbox", Type: TypeBool, Hashed: Neither,
		Help:  "run each agent call in a sandbox (bubblewrap on Linux, sandbox-exec on macOS): it may write its work tree and nothing of implloop's (see 'Sandbox' in docs/agents.md)",
		Doc:   "run each agent call in a sandbox (see \"Sandbox\" in docs/agents.md)",
		field: func(s *Settings) any { return &s.Sandbox }},
	{Flag: "sandbox-allow", Key: "sandbox_allow", Type: TypePaths, Hashed: Neither, Paths: true,
		Help:  "PATH a sandboxed agent may also write (repeatable)",
		Doc:   "more paths a sandboxed agent may write (relative to the repository root, or ~/...)",
		field: func(s *Settings) any { return &s.SandboxAllow }},
	{Flag: "sandbox-network", Key: "sandbox_network", Type: TypeString, Hashed: Neither,
		Help:   "network in the sandbox: on (the default), or none",
		Doc:    "on, or none: no network in the sandbox",
		Values: []string{SandboxNetworkOn, SandboxNetworkNone},
		field:  func(s *Settings) any { return &s.SandboxNetwork }},
	{Flag: "sandbox-gates", Key: "sandbox_gates", Type: TypeBool, Hashed: Neither,
		Help:  "run the gates in the sandbox too (by default they run outside it, as your command)",
		Doc:   "run the gates in the sandbox too",
		field: func(s *Settings) any { return &s.SandboxGates }},
}

// All returns the table: every run setting, in order.
func All() []Setting { return slices.Clone(table) }

// ByFlag returns the setting the flag gives.
func ByFlag(flag string) (Setting, bool) {
	i := slices.IndexFunc(table, func(st Setting) bool { return st.Flag == flag })
	if i < 0 {
		return Setting{}, false
	}
	return table[i], true
}

// ByKey returns the setting the front-matter key gives.
func ByKey(key string) (Setting, bool) {
	i := slices.IndexFunc(table, func(st Setting) bool { return st.Key != "" && st.Key == key })
	if i < 0 {
		return Setting{}, false
	}
	return table[i], true
}

// Flags are the names of the flags that give a run setting (the ones
// [Settings.Flags] records), in table order.
func Flags() []string {
	out := make([]string, len(table))
	for i, st := range table {
		out[i] = st.Flag
	}
	return out
}

// Field returns where the setting lives in s: a pointer to its field
// (*string, *int, *int64, *float64, *bool, *[]string, *map[string]string
// or *Duration). The commands register their flags on it.
func (st Setting) Field(s *Settings) any { return st.field(s) }

// FlagDefaults are the settings of a command line that gives no setting
// flag: [Default], but where a flag's default differs from the record's.
func FlagDefaults() Settings {
	s := Default()
	for _, st := range table {
		if st.flagDefault != nil {
			st.flagDefault(&s)
		}
	}
	return s
}

// HideDefault reports whether the flag's help leaves its default out.
func (st Setting) HideDefault() bool { return st.hideDefault }

// Pair is the flag of the setting this one picks a value together with
// ("" for none): --agent and --agent-cmd.
func (st Setting) Pair() string { return st.pair }

// Alone does to s what giving this setting without its pair does: a
// preset given alone drops a command line from another source, a command
// line given alone is the exec backend's. Nothing for a setting with no
// pair.
func (st Setting) Alone(s *Settings) {
	if st.alone != nil {
		st.alone(s)
	}
}

// Copy sets the setting in dst to its value in src.
func (st Setting) Copy(dst, src *Settings) {
	switch d := st.field(dst).(type) {
	case *string:
		*d = *st.field(src).(*string)
	case *int:
		*d = *st.field(src).(*int)
	case *int64:
		*d = *st.field(src).(*int64)
	case *float64:
		*d = *st.field(src).(*float64)
	case *bool:
		*d = *st.field(src).(*bool)
	case *Duration:
		*d = *st.field(src).(*Duration)
	case *[]string:
		*d = *st.field(src).(*[]string)
	case *map[string]string:
		*d = *st.field(src).(*map[string]string)
	default:
		panic(fmt.Sprintf("settings: --%s has a field of type %T", st.Flag, d))
	}
}

// Reset sets the setting in s back to its default.
func (st Setting) Reset(s *Settings) {
	d := Default()
	st.Copy(s, &d)
}

// Decode sets the setting in s from v, its front-matter key's value as
// YAML decoded it. Lint has checked v's type ([Type.Check]); a value of
// another type sets the zero value, or an error for a number or duration
// that does not read.
func (st Setting) Decode(s *Settings, v any) error {
	switch d := st.field(s).(type) {
	case *string:
		*d = scalar(v)
	case *int:
		n, err := strconv.Atoi(scalar(v))
		if err != nil {
			return fmt.Errorf("front matter %s: %w", st.Key, err)
		}
		*d = n
	case *Duration:
		t, err := parseDuration(v)
		if err != nil {
			return fmt.Errorf("front matter %s: %w", st.Key, err)
		}
		*d = Duration(t)
	case *bool:
		*d, _ = v.(bool)
	case *[]string:
		list, _ := v.([]any)
		*d = nil
		for _, e := range list {
			*d = append(*d, scalar(e))
		}
	case *map[string]string:
		m, _ := v.(map[string]any)
		*d = map[string]string{}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			(*d)[k] = scalar(m[k])
		}
	default:
		return fmt.Errorf("front matter %s: not a key implloop reads", st.Key)
	}
	return nil
}

// scalar is a front-matter value as text: 3 is "3", null is "".
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// parseDuration reads a front-matter duration: "20m", or a number of
// seconds.
func parseDuration(v any) (time.Duration, error) {
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
