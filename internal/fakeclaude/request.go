package fakeclaude

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// Request is one Messages API call as the server received it, decoded.
type Request struct {
	// Seq numbers every HTTP request the server saw, from 1.
	Seq    int
	Method string
	Path   string // URL path, e.g. "/v1/messages"
	Query  string // raw query, e.g. "beta=true"
	Header http.Header
	Body   []byte

	// Decoded from a Messages body (empty for other requests).
	Model     string
	Stream    bool
	MaxTokens int
	System    string // the text of every system block, joined by "\n"
	Messages  []Message
	Tools     []string // tool names in request order
}

// Message is one entry of the request's messages array.
type Message struct {
	Role    string
	Content []Block
}

// Block is one content block of a request message: text, tool_use,
// tool_result, or anything else (Type tells).
type Block struct {
	Type      string
	Text      string          // text: the text; tool_result: its text content
	ID        string          // tool_use
	Name      string          // tool_use
	Input     json.RawMessage // tool_use
	ToolUseID string          // tool_result
	IsError   bool            // tool_result
}

type wireRequest struct {
	Model     string          `json:"model"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// decodeMessages fills the Messages fields from r.Body. It is lenient: a
// body that is not a Messages request leaves them empty.
func (r *Request) decodeMessages() error {
	var w wireRequest
	if err := json.Unmarshal(r.Body, &w); err != nil {
		return err
	}
	r.Model, r.Stream, r.MaxTokens = w.Model, w.Stream, w.MaxTokens
	r.System = strings.Join(textsOf(w.System), "\n")
	for _, m := range w.Messages {
		r.Messages = append(r.Messages, Message{Role: m.Role, Content: blocksOf(m.Content)})
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	return nil
}

// textsOf reads a string-or-blocks field (system, or tool_result content)
// and returns the texts in it.
func textsOf(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var bs []wireBlock
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	var out []string
	for _, b := range bs {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

func blocksOf(raw json.RawMessage) []Block {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var ws []wireBlock
	if json.Unmarshal(raw, &ws) != nil {
		return nil
	}
	out := make([]Block, 0, len(ws))
	for _, w := range ws {
		b := Block{Type: w.Type, Text: w.Text, ID: w.ID, Name: w.Name, Input: w.Input, ToolUseID: w.ToolUseID, IsError: w.IsError}
		if w.Type == "tool_result" {
			b.Text = strings.Join(textsOf(w.Content), "\n")
		}
		out = append(out, b)
	}
	return out
}

// IsMessages reports whether this is a POST to the Messages endpoint
// (not count_tokens).
func (r *Request) IsMessages() bool {
	return r.Method == http.MethodPost && strings.TrimSuffix(r.Path, "/") == "/v1/messages"
}

// HasTool reports whether the request offers the named tool.
func (r *Request) HasTool(name string) bool { return slices.Contains(r.Tools, name) }

// IsAgentTurn reports whether this is a turn of Claude Code's main agent
// loop: a Messages call that offers the Write tool. Side calls (quota
// checks, titles, summaries) offer no tools.
func (r *Request) IsAgentTurn() bool { return r.IsMessages() && r.HasTool("Write") }

var workDirRe = regexp.MustCompile(`(?m)Primary working directory:\s*(\S[^\n]*?)\s*$`)

// WorkingDir is the repository path Claude Code runs in, as its system
// prompt (or first user message) states it: "Primary working directory:
// /path". It is "" when the request does not say.
func (r *Request) WorkingDir() string {
	if m := workDirRe.FindStringSubmatch(r.System); m != nil {
		return m[1]
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if mm := workDirRe.FindStringSubmatch(b.Text); mm != nil {
				return mm[1]
			}
		}
	}
	return ""
}

// UserText is the text of every text block of every user message, joined
// by "\n": the prompt Claude Code was given, plus the reminders it adds.
func (r *Request) UserText() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// ToolUses lists the tool_use blocks of all assistant messages so far, in
// order: what this conversation already asked Claude Code to do.
func (r *Request) ToolUses() []Block { return r.blocks("assistant", "tool_use") }

// ToolResults lists the tool_result blocks of all user messages so far, in
// order.
func (r *Request) ToolResults() []Block { return r.blocks("user", "tool_result") }

// blocks lists the blocks of type typ in the messages of role, in order.
func (r *Request) blocks(role, typ string) []Block {
	var out []Block
	for _, m := range r.Messages {
		if m.Role != role {
			continue
		}
		for _, b := range m.Content {
			if b.Type == typ {
				out = append(out, b)
			}
		}
	}
	return out
}

// Turn is the number of assistant messages already in the conversation:
// 0 on the first call of a prompt, 1 after one tool round trip, and so on.
func (r *Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}
