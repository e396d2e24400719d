package fakeopenai

import (
	"encoding/json"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/implloop/implloop/internal/scripted"
)

// Usage is the token usage the server reports for one response, as the
// Responses API's usage object has it: cached and cache-write tokens are
// parts of InputTokens (input_tokens_details), reasoning tokens a part of
// OutputTokens (output_tokens_details).
type Usage struct {
	InputTokens      int64 // input_tokens
	CachedTokens     int64 // input_tokens_details.cached_tokens
	CacheWriteTokens int64 // input_tokens_details.cache_write_tokens
	OutputTokens     int64 // output_tokens
	ReasoningTokens  int64 // output_tokens_details.reasoning_tokens
}

// Add returns u + v, field by field.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// IsZero reports whether every field is zero.
func (u Usage) IsZero() bool { return u == Usage{} }

func (u Usage) json() obj {
	return obj{
		"input_tokens":          u.InputTokens,
		"input_tokens_details":  obj{"cached_tokens": u.CachedTokens, "cache_write_tokens": u.CacheWriteTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": obj{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens":          u.InputTokens + u.OutputTokens,
	}
}

// ShellTool is the name of codex 0.169's shell tool: a function whose
// arguments are {"cmd": "shell command", "workdir": ...}.
const ShellTool = "exec_command"

// Output is one item of a scripted answer: a message, or a tool call.
type Output struct {
	Type   string // "message", "function_call" or "custom_tool_call"
	Text   string // message
	Name   string // tool name
	CallID string // generated when empty
	// Arguments (function_call) is JSON-encoded into the arguments string;
	// Input (custom_tool_call) is sent as it is.
	Arguments any
	Input     string
}

// Text is an assistant message.
func Text(s string) Output { return Output{Type: "message", Text: s} }

// FunctionCall is a call of the named function tool with args (a map or a
// struct that encodes to a JSON object).
func FunctionCall(name string, args any) Output {
	return Output{Type: "function_call", Name: name, Arguments: args}
}

// Shell is a call of codex's shell tool running cmd (with bash, in the
// turn's working directory).
func Shell(cmd string) Output { return FunctionCall(ShellTool, map[string]string{"cmd": cmd}) }

// ShellWrite is a Shell call that writes content to the file at rel (a
// path relative to the working directory), making its directory first.
func ShellWrite(rel, content string) Output {
	cmd := "printf '%s' " + shellQuote(content) + " > " + shellQuote(rel)
	if dir := path.Dir(rel); dir != "." {
		cmd = "mkdir -p " + shellQuote(dir) + " && " + cmd
	}
	return Shell(cmd)
}

// ApplyPatch is a call of codex's apply_patch tool (a freeform tool: the
// patch text is the input).
func ApplyPatch(patch string) Output {
	return Output{Type: "custom_tool_call", Name: "apply_patch", Input: patch}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Response is the scripted answer to one Responses call.
type Response struct {
	Output []Output
	// Usage is what the server reports for the call. When zero, the
	// server's Options.Usage (or DefaultUsage) decides.
	Usage Usage
	// Status, when not 0 or 200, answers with this HTTP status and an API
	// error body instead.
	Status   int
	ErrorMsg string
	// Error, when set, is the error object of that answer as it is sent
	// ({"error": Error}): a usage limit's type, resets_at and plan_type,
	// say. ErrorMsg is then unused.
	Error map[string]any
	// Header holds response headers sent with the answer (retry-after).
	Header map[string]string
}

// Reply is an answer with one message and no tool call: the turn ends.
func Reply(text string) Response { return Response{Output: []Output{Text(text)}} }

// UseTools answers with the given tool calls.
func UseTools(calls ...Output) Response { return Response{Output: calls} }

// DefaultUsage derives a deterministic, call-specific usage from the
// request: distinct figures for every call, every field non-zero, cached
// and cache-write tokens within the input and reasoning within the output,
// so sums over calls are a real check.
func DefaultUsage(req *Request, resp *Response) Usage {
	out := int64(5)
	for _, o := range resp.Output {
		out += int64(len(o.Text)/4 + len(o.Input)/4 + 3)
		if o.Arguments != nil {
			b, _ := json.Marshal(o.Arguments)
			out += int64(len(b)/4 + 10)
		}
	}
	in := int64(len(req.Body)/4) + int64(req.Seq) + 2000
	return Usage{
		InputTokens:      in,
		CachedTokens:     min(in/2, int64(1000+13*req.Seq)),
		CacheWriteTokens: min(in/4, int64(100+7*req.Seq)),
		OutputTokens:     out,
		ReasoningTokens:  out/3 + 1,
	}
}

type obj = map[string]any

// answer is one response being written: its ids and items.
type answer struct {
	id, model string
	created   int64
	items     []obj // the output items, complete
}

func newAnswer(id, model string, resp *Response, ids func(string) string) (*answer, error) {
	a := &answer{id: id, model: model, created: time.Now().Unix()}
	for i := range resp.Output {
		o := &resp.Output[i]
		switch o.Type {
		case "function_call", "custom_tool_call":
			if o.CallID == "" {
				o.CallID = ids("call")
			}
			it := obj{"type": o.Type, "status": "completed", "call_id": o.CallID, "name": o.Name}
			if o.Type == "function_call" {
				it["id"] = ids("fc")
				args := o.Arguments
				if args == nil {
					args = obj{}
				}
				b, err := json.Marshal(args)
				if err != nil {
					return nil, err
				}
				it["arguments"] = string(b)
			} else {
				it["id"] = ids("ctc")
				it["input"] = o.Input
			}
			a.items = append(a.items, it)
		default:
			a.items = append(a.items, obj{"type": "message", "id": ids("msg"), "status": "completed", "role": "assistant",
				"content": []obj{{"type": "output_text", "text": o.Text, "annotations": []any{}}}})
		}
	}
	return a, nil
}

func (a *answer) response(status string, output []obj, u *Usage) obj {
	r := obj{"id": a.id, "object": "response", "created_at": a.created, "status": status,
		"model": a.model, "output": output, "usage": nil}
	if u != nil {
		r["usage"] = u.json()
	}
	return r
}

// event is one server-sent event of a streamed answer.
type event struct {
	typ    string
	fields obj
}

// stream writes the answer as the Responses API streams one:
// response.created, response.in_progress, then per output item
// output_item.added, its deltas (output_text, function_call_arguments or
// custom_tool_call_input) and output_item.done, then response.completed
// with the usage.
func (a *answer) stream(w http.ResponseWriter, u Usage) error {
	evs := []event{
		{"response.created", obj{"response": a.response("in_progress", []obj{}, nil)}},
		{"response.in_progress", obj{"response": a.response("in_progress", []obj{}, nil)}},
	}
	for i, it := range a.items {
		evs = append(evs, itemEvents(i, it)...)
	}
	evs = append(evs, event{"response.completed", obj{"response": a.response("completed", a.items, &u)}})

	s := scripted.NewSSE(w, map[string]string{"x-request-id": "req_" + a.id})
	for seq, e := range evs {
		e.fields["type"] = e.typ
		e.fields["sequence_number"] = seq
		if err := s.Event(e.typ, e.fields); err != nil {
			return err
		}
	}
	return nil
}

// itemEvents are the events that stream output item it at index i.
func itemEvents(i int, it obj) []event {
	id := it["id"]
	at := func(more obj) obj {
		more["item_id"], more["output_index"] = id, i
		return more
	}
	added := obj{}
	for k, v := range it {
		added[k] = v
	}
	added["status"] = "in_progress"
	var mid []event
	switch it["type"] {
	case "message":
		part := it["content"].([]obj)[0]
		text := part["text"].(string)
		added["content"] = []obj{}
		mid = append(mid, event{"response.content_part.added", at(obj{"content_index": 0,
			"part": obj{"type": "output_text", "text": "", "annotations": []any{}}})})
		for _, d := range scripted.Chunks(text, 2) {
			mid = append(mid, event{"response.output_text.delta", at(obj{"content_index": 0, "delta": d})})
		}
		mid = append(mid,
			event{"response.output_text.done", at(obj{"content_index": 0, "text": text})},
			event{"response.content_part.done", at(obj{"content_index": 0, "part": part})})
	case "function_call", "custom_tool_call":
		field, kind := "arguments", "function_call_arguments"
		if it["type"] == "custom_tool_call" {
			field, kind = "input", "custom_tool_call_input"
		}
		whole := it[field].(string)
		added[field] = ""
		for _, d := range scripted.Chunks(whole, 3) {
			mid = append(mid, event{"response." + kind + ".delta", at(obj{"delta": d})})
		}
		mid = append(mid, event{"response." + kind + ".done", at(obj{field: whole})})
	}
	evs := []event{{"response.output_item.added", obj{"output_index": i, "item": added}}}
	evs = append(evs, mid...)
	return append(evs, event{"response.output_item.done", obj{"output_index": i, "item": it}})
}

// writeWhole answers a non-streaming Responses call with the response object.
func (a *answer) writeWhole(w http.ResponseWriter, u Usage) error {
	return scripted.WriteJSON(w, http.StatusOK, a.response("completed", a.items, &u))
}

func writeError(w http.ResponseWriter, status int, msg string) error {
	if msg == "" {
		msg = strings.ToLower(http.StatusText(status))
	}
	typ := "server_error"
	if status < 500 {
		typ = "invalid_request_error"
	}
	return scripted.WriteJSON(w, status, obj{"error": obj{"message": msg, "type": typ, "param": nil, "code": nil}})
}
