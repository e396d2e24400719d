// Package unit computes a task's work list: the units the loop dispatches
// (or replays), each with its prompt, its attached context and its identity.
//
// # One pure function
//
// [WorkList] is a pure function of the extracted task, the run parameters
// ([Params]) and the journal-derived facts passed in ([Facts]): no clock, no
// IO, no journal. The fresh run and the resume both call it, and nothing
// else builds prompts or identity preimages, so the two paths cannot
// disagree about what a unit is.
//
// # No interpolation
//
// A prompt is the role's instruction template, an embedded file used
// byte-exact, followed by the attached context: one fenced `json` block
// written by encoding/json. Task text, preamble, gate feedback and params
// travel inside JSON strings, so `${{ x }}`, `{{item}}`, a line that reads
// like an end marker, or the task's own ``` fences are content the agent
// receives byte for byte, never markup that implloop expands. The fence
// around the context is longer than any run of backticks inside it.
//
// # Which units read the plan
//
// Whether a role's prompt reads the plan is a row of the roles table
// ([Roles]). The implementer gets the task text and the preamble, not the
// plan, unless the plan-context mode is [PlanContextFull]: then its context
// also names the plan's path and sha256, and its identity includes
// plan_sha256, so any edit to the plan re-runs it.
package unit

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/mdfence"
)

// PlanContext says how much of the plan an implementer's prompt carries.
type PlanContext string

const (
	// PlanContextTask (the default) gives the implementer the task text and
	// the preamble; the plan's other tasks cannot change its identity.
	PlanContextTask PlanContext = "task"
	// PlanContextFull also gives it the plan's path and sha256: any edit to
	// the plan changes every such unit's identity.
	PlanContextFull PlanContext = "full"
)

// ParsePlanContext checks a --plan-context value; "" means the default.
func ParsePlanContext(s string) (PlanContext, error) {
	switch PlanContext(s) {
	case "", PlanContextTask:
		return PlanContextTask, nil
	case PlanContextFull:
		return PlanContextFull, nil
	}
	return "", fmt.Errorf("plan context %q: want %q or %q", s, PlanContextTask, PlanContextFull)
}

// Params are the run's parameters as they bear on one task's units.
type Params struct {
	Index int // the task's 1-based position in the plan; 0 means task.Ordinal
	Count int // the number of tasks in the whole plan

	Agent       string      // backend name as it enters the identity: claude, exec, builtin...
	AgentCmd    []string    // the exec backend's argv (--agent-cmd split into words); nil for the others
	Model       string      // "" means the agent's default
	PlanContext PlanContext // "" means PlanContextTask
	PlanPath    string      // the plan's path as the user gave it
	PlanSHA256  string      // hex sha256 of the plan's bytes on disk now
	Preamble    string      // the plan's text before the first task
	// Gate is the command that judges the task's work (its verify block,
	// else --verify; "" when it has none): the prompt tells the agent.
	Gate string

	Timeout    time.Duration     // the per-call timeout; hashed in whole seconds
	EnvNames   []string          // NAMES of the variables passed through (never values)
	UserParams map[string]string // --param name=value

	// Norm is the environment identity.Normalize uses (project root, home,
	// temp dirs). It shapes the identity only; the agent gets byte-exact text.
	Norm identity.Env
}

// Facts are what the journal says about this task so far.
type Facts struct {
	Attempt      int      // 1-based; 0 is taken as 1
	GateFeedback string   // the previous attempt's gate output, "" on the first
	Artifacts    []string // artifact hashes of the task's declared dependencies
}

// Unit is one agent call's worth of work.
type Unit struct {
	ID       string // task id, role and attempt: "10/implement~a2"
	TaskID   string
	Role     string
	Attempt  int
	Prompt   []byte            // template bytes + fenced context: exactly what goes to stdin
	Context  []byte            // the context JSON object (IMPLLOOP_CONTEXT_FILE), as in the prompt
	Preimage identity.Preimage // what the identity hashes
	Identity string            // identity.Digest(Preimage)
}

// Role is one row of the roles table.
type Role struct {
	Name string
	// ReadsPlan reports whether this role's prompt reads the plan (and so
	// whether plan_sha256 enters its identity) under a plan-context mode.
	ReadsPlan func(PlanContext) bool
	// template is the role's instruction template, used byte-exact.
	template string
}

// Template returns the role's instruction template bytes.
func (r Role) Template() []byte { return []byte(r.template) }

//go:embed templates/implement.md
var implementTemplate string

// Roles returns the roles table, in the order WorkList emits units. Which
// roles read the plan is decided here and nowhere else.
func Roles() []Role {
	return []Role{
		{
			Name:      "implement",
			ReadsPlan: func(m PlanContext) bool { return m == PlanContextFull },
			template:  implementTemplate,
		},
	}
}

// WorkList returns the units of one task for the attempt in f, in dispatch
// order. It is pure: the same arguments give byte-identical units.
//
// Strings are coerced to valid UTF-8 the way encoding/json does (each
// invalid byte becomes U+FFFD) before they enter the prompt or the
// preimage, so the identity keys on exactly what the agent receives.
//
// It fails on parameters no identity can be computed for: an unknown
// plan-context mode, an empty agent name, an env entry that is not a bare
// variable name, a param with an empty name, an empty artifact hash.
func WorkList(task extractor.Task, p Params, f Facts) ([]Unit, error) {
	mode, err := ParsePlanContext(string(p.PlanContext))
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", task.ID, err)
	}
	roles := Roles()
	units := make([]Unit, 0, len(roles))
	for _, r := range roles {
		u, err := build(r, task, p, f, r.ReadsPlan(mode))
		if err != nil {
			return nil, fmt.Errorf("task %s, role %s: %w", task.ID, r.Name, err)
		}
		units = append(units, u)
	}
	return units, nil
}

// contextDoc is the attached context. Field order is the JSON order.
type contextDoc struct {
	Task         taskDoc           `json:"task"`
	Preamble     string            `json:"preamble"`
	Attempt      int               `json:"attempt"`
	Gate         string            `json:"gate,omitempty"`
	GateFeedback string            `json:"gate_feedback,omitempty"`
	Params       map[string]string `json:"params,omitempty"`
	Plan         *planDoc          `json:"plan,omitempty"`
}

type taskDoc struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Index int    `json:"index"`
	Count int    `json:"count"`
	Text  string `json:"text"`
}

type planDoc struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

func build(r Role, task extractor.Task, p Params, f Facts, readsPlan bool) (Unit, error) {
	attempt := f.Attempt
	if attempt < 1 {
		attempt = 1
	}
	index := p.Index
	if index == 0 {
		index = task.Ordinal
	}
	text := validUTF8(task.Text)
	preamble := validUTF8(p.Preamble)
	feedback := validUTF8(f.GateFeedback)
	gate := validUTF8(p.Gate)
	params := validMap(p.UserParams)

	doc := contextDoc{
		Task: taskDoc{
			ID:    validUTF8(task.ID),
			Title: validUTF8(task.Title),
			Index: index,
			Count: p.Count,
			Text:  text,
		},
		Preamble:     preamble,
		Attempt:      attempt,
		Gate:         gate,
		GateFeedback: feedback,
		Params:       params,
	}
	if readsPlan {
		doc.Plan = &planDoc{Path: validUTF8(p.PlanPath), SHA256: p.PlanSHA256}
	}
	ctxJSON := encodeContext(doc)

	tmpl := r.Template()
	pre := identity.Preimage{
		Version:        identity.Version,
		Role:           r.Name,
		Agent:          p.Agent,
		AgentCmd:       normalizeAll(p.AgentCmd, p.Norm),
		Model:          p.Model,
		Instructions:   extractor.SHA256Hex(string(tmpl)),
		Task:           &identity.TaskInput{ID: doc.Task.ID, Text: identity.Normalize(text, p.Norm)},
		PreambleSHA256: extractor.SHA256Hex(identity.Normalize(preamble, p.Norm)),
		Attempt:        attempt,
		GateFeedback:   identity.Normalize(feedback, p.Norm),
		Gate:           identity.Normalize(gate, p.Norm),
		Artifacts:      sortedCopy(f.Artifacts),
		TimeoutSeconds: int64(p.Timeout / time.Second),
		Env:            sortedCopy(p.EnvNames),
		Params:         params,
	}
	if readsPlan {
		pre.PlanSHA256 = p.PlanSHA256
	}
	id, err := identity.Digest(pre)
	if err != nil {
		return Unit{}, err
	}
	return Unit{
		ID:       doc.Task.ID + "/" + r.Name + "~a" + strconv.Itoa(attempt),
		TaskID:   doc.Task.ID,
		Role:     r.Name,
		Attempt:  attempt,
		Prompt:   assemble(tmpl, ctxJSON),
		Context:  ctxJSON,
		Preimage: pre,
		Identity: id,
	}, nil
}

// encodeContext writes doc as indented JSON, with HTML characters left
// alone (the agent should see `<`, `>` and `&`, not \u003c), ending in a
// newline.
func encodeContext(doc contextDoc) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		panic("unit: encoding the context: " + err.Error()) // strings and ints only
	}
	return buf.Bytes()
}

// assemble appends the context to the template as one fenced json block.
// The fence is longer than the longest run of backticks in the context, so
// nothing inside can close it.
func assemble(tmpl, ctxJSON []byte) []byte {
	fence := mdfence.For(ctxJSON)
	out := make([]byte, 0, len(tmpl)+len(ctxJSON)+2*len(fence)+16)
	out = append(out, tmpl...)
	if len(tmpl) > 0 && tmpl[len(tmpl)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, '\n')
	out = append(out, fence...)
	out = append(out, "json\n"...)
	out = append(out, ctxJSON...)
	out = append(out, fence...)
	out = append(out, '\n')
	return out
}

// validUTF8 replaces each byte that is not part of valid UTF-8 with U+FFFD,
// exactly as encoding/json does when it writes a string.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

func validMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[validUTF8(k)] = validUTF8(v)
	}
	return out
}

// sortedCopy returns the sorted distinct values of s (nil when empty), the
// form identity.Canonical gives them. The caller's slice is not reordered.
func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := make([]string, 0, len(s))
	for _, v := range s {
		out = append(out, validUTF8(v))
	}
	sort.Strings(out)
	w := 0
	for i, v := range out {
		if i == 0 || v != out[w-1] {
			out[w] = v
			w++
		}
	}
	return out[:w]
}

// normalizeAll normalizes each argument of argv (nil stays nil, so the key
// stays absent for backends without a command line).
func normalizeAll(argv []string, env identity.Env) []string {
	if len(argv) == 0 {
		return nil
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = identity.Normalize(validUTF8(a), env)
	}
	return out
}
