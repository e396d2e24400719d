package identity

// Preimage is everything that changes what an agent is asked to do. Its
// canonical form (RFC 8785) is what Digest hashes. Optional fields are
// omitted when unset so that adding one keeps every existing digest.
//
// Text fields marked "normalized" must hold the output of [Normalize] (see
// [Preimage.Normalized]); Canonical hashes what it is given. The scope
// table ([HashedScope], docs/identity.md) says why each field is here.
type Preimage struct {
	Version        string            `json:"v"`                         // hash scope version, "1"
	Role           string            `json:"role"`                      // "implement"
	Agent          string            `json:"agent"`                     // backend name: claude, codex, exec, builtin...
	AgentCmd       []string          `json:"agent_cmd,omitempty"`       // the exec backend's argv, each argument normalized
	Model          string            `json:"model,omitempty"`           // "" means the agent's default
	Instructions   string            `json:"instructions"`              // hex sha256 of the role's template bytes
	Task           *TaskInput        `json:"task,omitempty"`            //
	PreambleSHA256 string            `json:"preamble_sha256,omitempty"` // sha256 of the normalized preamble
	PlanSHA256     string            `json:"plan_sha256,omitempty"`     // only for units whose prompt reads the plan
	Prompt         string            `json:"prompt,omitempty"`          // normalized free prompt (implloop id)
	Attempt        int               `json:"attempt"`                   // 1-based
	GateFeedback   string            `json:"gate_feedback,omitempty"`   // normalized
	Gate           string            `json:"gate,omitempty"`            // normalized gate command the prompt names
	Artifacts      []string          `json:"artifacts,omitempty"`       // sorted hashes of declared deps' artifacts
	TimeoutSeconds int64             `json:"timeout_s,omitempty"`       //
	Env            []string          `json:"env,omitempty"`             // sorted NAMES of passed-through variables
	Params         map[string]string `json:"params,omitempty"`          // user params
}

// TaskInput is the task part of a preimage.
type TaskInput struct {
	ID   string `json:"id"`
	Text string `json:"text"` // normalized task text
}

// Normalized returns a copy of p whose free-text fields (Task.Text, Prompt,
// GateFeedback, Gate) have gone through [Normalize] under env. Hash fields
// (PreambleSHA256, ...) are the caller's: hash the normalized text.
func (p Preimage) Normalized(env Env) Preimage {
	pe := prepare(env)
	if p.Task != nil {
		t := *p.Task
		t.Text = pe.normalize(t.Text)
		p.Task = &t
	}
	p.Prompt = pe.normalize(p.Prompt)
	p.GateFeedback = pe.normalize(p.GateFeedback)
	p.Gate = pe.normalize(p.Gate)
	if p.AgentCmd != nil {
		argv := make([]string, len(p.AgentCmd))
		for i, a := range p.AgentCmd {
			argv[i] = pe.normalize(a)
		}
		p.AgentCmd = argv
	}
	return p
}
