package fakeclaude

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/implloop/implloop/internal/scripted"
)

// Usage is the token usage the server reports for one call, in the
// Messages API's field names.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Add returns u + v, field by field.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
	}
}

// IsZero reports whether every field is zero.
func (u Usage) IsZero() bool { return u == Usage{} }

// Content is one content block of a scripted answer: text or a tool call.
type Content struct {
	Type  string // "text" or "tool_use"
	Text  string
	ID    string // tool_use id; generated when empty
	Name  string // tool name
	Input any    // tool input, JSON-encoded into input_json_delta chunks
}

// Text is a text block.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// ToolUse is a call of the named tool with the given input (a map or a
// struct that encodes to a JSON object).
func ToolUse(name string, input any) Content {
	return Content{Type: "tool_use", Name: name, Input: input}
}

// Write is a call of Claude Code's Write tool. path should be absolute.
func Write(path, content string) Content {
	return ToolUse("Write", map[string]string{"file_path": path, "content": content})
}

// Response is the scripted answer to one Messages call.
type Response struct {
	Content []Content
	// StopReason defaults to "tool_use" when Content has a tool call and
	// "end_turn" otherwise.
	StopReason string
	// Usage is what the server reports for the call. When zero, the
	// server's UsageFunc (or DefaultUsage) decides.
	Usage Usage
	// Status, when not 0 or 200, answers with this HTTP status and an
	// API error body of type ErrorType (default "api_error") instead.
	Status    int
	ErrorType string
	ErrorMsg  string
	// Header holds response headers sent with the answer (an error's
	// retry-after, anthropic-ratelimit-unified-*, say).
	Header map[string]string
}

// Reply is a text-only answer that ends the turn.
func Reply(text string) Response { return Response{Content: []Content{Text(text)}} }

// UseTools answers with the given tool calls (and stop_reason tool_use).
func UseTools(calls ...Content) Response { return Response{Content: calls} }

func (r *Response) stopReason() string {
	if r.StopReason != "" {
		return r.StopReason
	}
	for _, c := range r.Content {
		if c.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

// DefaultUsage derives a deterministic, call-specific usage from the
// request: distinct figures for every call, non-zero cache fields, so sums
// over calls are a real check.
func DefaultUsage(req *Request, resp *Response) Usage {
	out := int64(5)
	for _, c := range resp.Content {
		out += int64(len(c.Text)/4 + 3)
		if c.Input != nil {
			b, _ := json.Marshal(c.Input)
			out += int64(len(b)/4 + 10)
		}
	}
	return Usage{
		InputTokens:              int64(len(req.Body)/40) + int64(req.Seq),
		OutputTokens:             out,
		CacheCreationInputTokens: int64(100 + 7*req.Seq),
		CacheReadInputTokens:     int64(1000 + 13*req.Seq),
	}
}

type obj = map[string]any

func (resp *Response) blocksJSON(ids func() string) []obj {
	var out []obj
	for i := range resp.Content {
		c := &resp.Content[i]
		switch c.Type {
		case "tool_use":
			if c.ID == "" {
				c.ID = ids()
			}
			input := c.Input
			if input == nil {
				input = obj{}
			}
			out = append(out, obj{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		default:
			out = append(out, obj{"type": "text", "text": c.Text})
		}
	}
	return out
}

func usageJSON(u Usage) obj {
	return obj{
		"input_tokens":                u.InputTokens,
		"output_tokens":               u.OutputTokens,
		"cache_creation_input_tokens": u.CacheCreationInputTokens,
		"cache_read_input_tokens":     u.CacheReadInputTokens,
	}
}

// writeStream answers a streaming Messages call, the way the API does:
// message_start (usage with input and cache figures), per block
// content_block_start / content_block_delta... / content_block_stop,
// message_delta (stop_reason and the final usage), message_stop.
func writeStream(w http.ResponseWriter, msgID, model string, resp *Response, u Usage, ids func() string) error {
	s := scripted.NewSSE(w, map[string]string{"request-id": "req_" + msgID})

	start := usageJSON(u)
	start["output_tokens"] = min(u.OutputTokens, 1)
	if err := s.Event("message_start", obj{"type": "message_start", "message": obj{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": []obj{}, "stop_reason": nil, "stop_sequence": nil, "usage": start,
	}}); err != nil {
		return err
	}
	if err := s.Event("ping", obj{"type": "ping"}); err != nil {
		return err
	}
	blocks := resp.blocksJSON(ids)
	for i, b := range blocks {
		c := resp.Content[i]
		var startBlock obj
		var deltas []obj
		if c.Type == "tool_use" {
			startBlock = obj{"type": "tool_use", "id": b["id"], "name": b["name"], "input": obj{}}
			js, err := json.Marshal(b["input"])
			if err != nil {
				return err
			}
			deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": ""})
			for _, part := range scripted.Chunks(string(js), 3) {
				deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": part})
			}
		} else {
			startBlock = obj{"type": "text", "text": ""}
			for _, part := range scripted.Chunks(c.Text, 2) {
				deltas = append(deltas, obj{"type": "text_delta", "text": part})
			}
		}
		if err := s.Event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": startBlock}); err != nil {
			return err
		}
		for _, d := range deltas {
			if err := s.Event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": d}); err != nil {
				return err
			}
		}
		if err := s.Event("content_block_stop", obj{"type": "content_block_stop", "index": i}); err != nil {
			return err
		}
	}
	if err := s.Event("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": resp.stopReason(), "stop_sequence": nil},
		"usage": usageJSON(u)}); err != nil {
		return err
	}
	return s.Event("message_stop", obj{"type": "message_stop"})
}

// writeMessage answers a non-streaming Messages call with the whole message.
func writeMessage(w http.ResponseWriter, msgID, model string, resp *Response, u Usage, ids func() string) error {
	return scripted.WriteJSON(w, http.StatusOK, obj{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": resp.blocksJSON(ids), "stop_reason": resp.stopReason(),
		"stop_sequence": nil, "usage": usageJSON(u),
	})
}

func writeError(w http.ResponseWriter, status int, typ, msg string) error {
	if typ == "" {
		typ = "api_error"
	}
	if msg == "" {
		msg = strings.ToLower(http.StatusText(status))
	}
	return scripted.WriteJSON(w, status, obj{"type": "error", "error": obj{"type": typ, "message": msg}})
}
