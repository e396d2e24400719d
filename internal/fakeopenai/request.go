package fakeopenai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/implloop/implloop/internal/scripted"
)

// Request is one HTTP request as the server received it; for a Responses
// call (POST /v1/responses), the body decoded.
type Request struct {
	// Seq numbers every HTTP request the server saw, from 1.
	Seq    int
	Method string
	Path   string // URL path, e.g. "/v1/responses"
	Query  string
	Header http.Header
	Body   []byte

	Model  string
	Stream bool
	Tools  []string // tool names (or types, for unnamed tools) in request order
	Input  []Item   // the conversation so far, in order
}

// Item is one entry of a Responses request's input array: a message
// (Role, Text), a tool call the model made earlier (Name, CallID and
// Arguments or Input), a tool's output (CallID, Output), or anything else
// (Type tells).
type Item struct {
	Type      string
	Role      string // message
	Text      string // message: its text parts joined by "\n"
	Name      string // function_call, custom_tool_call
	CallID    string
	Arguments string // function_call: JSON text
	Input     string // custom_tool_call: free text (an apply_patch patch)
	Output    string // function_call_output, custom_tool_call_output
}

type wireItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	CallID    string          `json:"call_id"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Output    json.RawMessage `json:"output"`
}

// decodeResponses fills the Responses fields from r.Body.
func (r *Request) decodeResponses() error {
	var w struct {
		Model  string     `json:"model"`
		Stream bool       `json:"stream"`
		Input  []wireItem `json:"input"`
		Tools  []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &w); err != nil {
		return err
	}
	r.Model, r.Stream = w.Model, w.Stream
	for _, t := range w.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		r.Tools = append(r.Tools, name)
	}
	for _, wi := range w.Input {
		r.Input = append(r.Input, Item{
			Type: wi.Type, Role: wi.Role, Text: strings.Join(texts(wi.Content), "\n"),
			Name: wi.Name, CallID: wi.CallID, Arguments: wi.Arguments, Input: wi.Input,
			Output: strings.Join(texts(wi.Output), "\n"),
		})
	}
	return nil
}

// texts reads a string-or-parts field (message content, a tool's output)
// and returns the texts in it.
func texts(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return out
}

// IsResponses reports whether this is a POST to the Responses endpoint.
func (r *Request) IsResponses() bool {
	return r.Method == http.MethodPost && strings.TrimSuffix(r.Path, "/") == "/v1/responses"
}

// HasTool reports whether the request offers the named tool.
func (r *Request) HasTool(name string) bool { return slices.Contains(r.Tools, name) }

// IsAgentTurn reports whether this is a turn of codex's agent loop: a
// Responses call that offers its shell tool, exec_command.
func (r *Request) IsAgentTurn() bool { return r.IsResponses() && r.HasTool(ShellTool) }

var cwdRe = regexp.MustCompile(`<cwd>([^<\n]+)</cwd>`)

// WorkingDir is the directory codex runs in, as its <environment_context>
// message states it. It is "" when the request does not say.
func (r *Request) WorkingDir() string {
	for _, it := range r.Input {
		if m := cwdRe.FindStringSubmatch(it.Text); m != nil {
			return m[1]
		}
	}
	return ""
}

// wrapperRe matches the user messages codex writes itself around the
// prompt: <environment_context>...</environment_context> and the like.
var wrapperRe = regexp.MustCompile(`^<([a-z_]+)>[\s\S]*</([a-z_]+)>$`)

// Prompt is the text codex was given on stdin: the first user message that
// is not one of codex's own tagged context blocks.
func (r *Request) Prompt() string {
	for _, it := range r.Input {
		if it.Type == "message" && it.Role == "user" && !wrapperRe.MatchString(strings.TrimSpace(it.Text)) {
			return it.Text
		}
	}
	return ""
}

// TaskText is the task text implloop attached to the prompt, or the whole
// prompt when it has none (see scripted.TaskText).
func (r *Request) TaskText() string { return scripted.TaskText(r.Prompt()) }

// isModelOutput reports whether the item is one the model produced (as
// opposed to the user's messages, the instructions and the tools' outputs).
func (it Item) isModelOutput() bool {
	switch it.Type {
	case "message":
		return it.Role == "assistant"
	case "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call":
		return true
	}
	return false
}

// Turn is the number of model answers already in the conversation: 0 on
// the first call of a prompt, 1 after one tool round trip, and so on (the
// items of one answer sit together in the input, so a run of them counts
// once).
func (r *Request) Turn() int {
	n, in := 0, false
	for _, it := range r.Input {
		out := it.isModelOutput()
		if out && !in {
			n++
		}
		in = out
	}
	return n
}

// ToolCalls lists the tool calls the model made so far, in order.
func (r *Request) ToolCalls() []Item {
	var out []Item
	for _, it := range r.Input {
		if it.Type == "function_call" || it.Type == "custom_tool_call" {
			out = append(out, it)
		}
	}
	return out
}

// ToolOutputs maps the call id of every tool output so far to its text.
func (r *Request) ToolOutputs() map[string]string {
	out := map[string]string{}
	for _, it := range r.Input {
		if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
			out[it.CallID] = it.Output
		}
	}
	return out
}
