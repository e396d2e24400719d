package fakeclaude

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/scripted"
)

// post sends body to the server and returns the response.
func post(t *testing.T, s *Server, path string, body any, header map[string]string) *http.Response {
	return scripted.PostJSON(t, s.URL()+path, body, header)
}

type event struct {
	name string
	data map[string]any
}

// readEvents parses a server-sent event stream.
func readEvents(t *testing.T, resp *http.Response) []event {
	t.Helper()
	evs, err := scripted.ReadSSE(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]event, 0, len(evs))
	for _, e := range evs {
		if e.Data["type"] != e.Name {
			t.Errorf("event %s carries type %v", e.Name, e.Data["type"])
		}
		out = append(out, event{e.Name, e.Data})
	}
	return out
}

func agentBody(stream bool, user string) map[string]any {
	return map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": stream,
		"system": []any{map[string]any{"type": "text", "text": "You are Claude Code."}},
		"tools":  []any{map[string]any{"name": "Read"}, map[string]any{"name": "Write"}},
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>\n - Primary working directory: /repo/x\n</system-reminder>"},
			map[string]any{"type": "text", "text": user},
		}}},
	}
}

func TestStreamingToolUse(t *testing.T) {
	var seen *Request
	s := New(t, func(r *Request) Response {
		seen = r
		return UseTools(Write(r.WorkingDir()+"/a.txt", "hé\n"))
	})
	resp := post(t, s, "/v1/messages?beta=true", agentBody(true, "write a"), map[string]string{"X-Claude-Code-Session-Id": "s1"})
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	evs := readEvents(t, resp)
	var names []string
	var partial strings.Builder
	for _, e := range evs {
		names = append(names, e.name)
		if e.name == "content_block_delta" {
			d := e.data["delta"].(map[string]any)
			if d["type"] != "input_json_delta" {
				t.Errorf("delta type %v", d["type"])
			}
			partial.WriteString(d["partial_json"].(string))
		}
	}
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta",
		"content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("events %v, want %v", names, want)
	}
	var input map[string]string
	if err := json.Unmarshal([]byte(partial.String()), &input); err != nil {
		t.Fatalf("joined partial_json %q: %v", partial.String(), err)
	}
	if input["file_path"] != "/repo/x/a.txt" || input["content"] != "hé\n" {
		t.Errorf("tool input %v", input)
	}
	start := evs[2].data["content_block"].(map[string]any)
	if start["type"] != "tool_use" || start["name"] != "Write" || !strings.HasPrefix(start["id"].(string), "toolu_") {
		t.Errorf("content_block_start %v", start)
	}
	md := evs[len(evs)-2].data
	if md["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("message_delta %v", md)
	}
	calls := s.Calls()
	if len(calls) != 1 || !calls[0].Agent || !calls[0].Stream || calls[0].SessionID != "s1" || calls[0].Query != "beta=true" {
		t.Fatalf("calls %+v", calls)
	}
	u := md["usage"].(map[string]any)
	got := Usage{InputTokens: int64(u["input_tokens"].(float64)), OutputTokens: int64(u["output_tokens"].(float64)),
		CacheCreationInputTokens: int64(u["cache_creation_input_tokens"].(float64)), CacheReadInputTokens: int64(u["cache_read_input_tokens"].(float64))}
	if got != calls[0].Usage || got != s.Usage() || got.InputTokens == 0 || got.CacheReadInputTokens == 0 {
		t.Errorf("reported %+v, recorded %+v, sum %+v", got, calls[0].Usage, s.Usage())
	}
	if s.UsageBySession()["s1"] != got {
		t.Errorf("by session %v", s.UsageBySession())
	}
	if seen.Model != "claude-sonnet-4-5" || seen.System != "You are Claude Code." || !seen.HasTool("Write") || seen.Prompt() != "write a" || seen.Turn() != 0 {
		t.Errorf("request %+v prompt %q", seen, seen.Prompt())
	}
}

func TestStreamingTextAndFixedUsage(t *testing.T) {
	fixed := Usage{InputTokens: 10, OutputTokens: 20, CacheCreationInputTokens: 30, CacheReadInputTokens: 40}
	s := New(t, func(r *Request) Response {
		return Response{Content: []Content{Text("all done here")}, Usage: fixed}
	})
	evs := readEvents(t, post(t, s, "/v1/messages", agentBody(true, "x"), nil))
	var text strings.Builder
	for _, e := range evs {
		if e.name == "content_block_delta" {
			text.WriteString(e.data["delta"].(map[string]any)["text"].(string))
		}
	}
	if text.String() != "all done here" {
		t.Errorf("text %q", text.String())
	}
	if evs[len(evs)-2].data["delta"].(map[string]any)["stop_reason"] != "end_turn" {
		t.Errorf("stop reason %v", evs[len(evs)-2].data)
	}
	startUsage := evs[0].data["message"].(map[string]any)["usage"].(map[string]any)
	if startUsage["input_tokens"].(float64) != 10 || startUsage["cache_read_input_tokens"].(float64) != 40 {
		t.Errorf("message_start usage %v", startUsage)
	}
	if s.Usage() != fixed {
		t.Errorf("sum %+v", s.Usage())
	}
}

func TestNonStreamingAndSideCalls(t *testing.T) {
	s := New(t, func(r *Request) Response { return Reply("agent") })
	resp := post(t, s, "/v1/messages", agentBody(false, "x"), nil)
	var msg struct {
		Type    string `json:"type"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      Usage  `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || len(msg.Content) != 1 || msg.Content[0].Text != "agent" || msg.StopReason != "end_turn" || msg.Usage.IsZero() {
		t.Errorf("message %+v", msg)
	}

	// No tools offered: a side call, answered by DefaultSide.
	side := map[string]any{"model": "claude-haiku-4-5", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": "quota"}}}
	resp = post(t, s, "/v1/messages?beta=true", side, nil)
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "ok" {
		t.Errorf("side answer %+v", msg)
	}
	if got := SumUsage(s.Calls()); got != msg.Usage.Add(s.Calls()[0].Usage) {
		t.Errorf("sum %+v", got)
	}
}

func TestOtherEndpoints(t *testing.T) {
	s := New(t, func(r *Request) Response { return Reply("x") })
	resp := post(t, s, "/v1/messages/count_tokens?beta=true", agentBody(false, "x"), nil)
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil || ct.InputTokens <= 0 {
		t.Errorf("count_tokens: %v %+v", err, ct)
	}
	for _, m := range []string{http.MethodHead, http.MethodGet} {
		req, _ := http.NewRequest(m, s.URL()+"/", nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil || r.StatusCode != 200 {
			t.Errorf("%s /: %v %v", m, err, r)
		}
		r.Body.Close()
	}
	if r := post(t, s, "/v1/nope", map[string]any{}, nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown endpoint: %d", r.StatusCode)
	}
	if r := post(t, s, "/v1/messages", "not an object", nil); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad body: %d", r.StatusCode)
	}
	if !s.Usage().IsZero() {
		t.Errorf("usage of non-Messages calls counted: %+v", s.Usage())
	}
	if n := len(s.Calls()); n != 5 {
		t.Errorf("%d calls recorded, want 5:\n%s", n, s.Summary())
	}
}

func TestErrorResponse(t *testing.T) {
	s := New(t, func(r *Request) Response { return Response{Status: 529, ErrorType: "overloaded_error"} })
	resp := post(t, s, "/v1/messages", agentBody(true, "x"), nil)
	var e struct {
		Type  string                `json:"type"`
		Error struct{ Type string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 529 || e.Type != "error" || e.Error.Type != "overloaded_error" {
		t.Errorf("%d %+v", resp.StatusCode, e)
	}
	if !s.Usage().IsZero() {
		t.Errorf("a failed call's usage counted")
	}
}

func TestRequestHelpers(t *testing.T) {
	ctxJSON, _ := json.Marshal(map[string]any{"task": map[string]any{"id": "2", "text": "### Task 2\n\n```go path=a.go\npackage a\n```\nWRITE out/f1.txt hello world\n"}})
	r := &Request{Body: mustJSON(t, map[string]any{
		"system": "Primary working directory: /from/system\nmore",
		"messages": []any{
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "<system-reminder>x</system-reminder>"},
				map[string]any{"type": "text", "text": "Do it.\n\n```json\n{\"example\": true}\n```\n\n````json\n" + string(ctxJSON) + "\n````\n"},
			}},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Write", "input": map[string]any{"file_path": "/x"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": []any{map[string]any{"type": "text", "text": "File created"}}}}},
		},
	})}
	if err := r.decodeMessages(); err != nil {
		t.Fatal(err)
	}
	if r.WorkingDir() != "/from/system" {
		t.Errorf("WorkingDir %q", r.WorkingDir())
	}
	if r.Prompt() != "Do it.\n\n```json\n{\"example\": true}\n```\n\n````json\n"+string(ctxJSON)+"\n````\n" {
		t.Errorf("Prompt %q", r.Prompt())
	}
	if got := scripted.FileOps(r.TaskText()); !reflect.DeepEqual(got, []scripted.FileOp{{Path: "a.go", Content: "package a\n"}, {Path: "out/f1.txt", Content: "hello world\n"}}) {
		t.Errorf("FileOps %+v", got)
	}
	if r.Turn() != 1 || len(r.ToolUses()) != 1 || r.ToolResults()[0].Text != "File created" || r.ToolResults()[0].ToolUseID != "t1" {
		t.Errorf("turn %d uses %+v results %+v", r.Turn(), r.ToolUses(), r.ToolResults())
	}
	if r.IsAgentTurn() {
		t.Errorf("no method, no tools: not an agent turn")
	}
}

func TestWriteTaskReadsExistingFilesFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conv := []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "<system-reminder>\nPrimary working directory: " + dir + "\n</system-reminder>"},
		map[string]any{"type": "text", "text": "WRITE old.txt new\nWRITE new.txt fresh"},
	}}}
	step := func() Response {
		r := &Request{Method: http.MethodPost, Path: "/v1/messages", Body: mustJSON(t, map[string]any{"messages": conv})}
		if err := r.decodeMessages(); err != nil {
			t.Fatal(err)
		}
		resp := WriteTask(r)
		var blocks []any
		for i, c := range resp.Content {
			if c.Type == "tool_use" {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.Name + string(rune('0'+i)), "name": c.Name, "input": c.Input})
			}
		}
		if len(blocks) > 0 {
			conv = append(conv, map[string]any{"role": "assistant", "content": blocks},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "x", "content": "ok"}}})
		}
		return resp
	}
	first := step()
	if len(first.Content) != 1 || first.Content[0].Name != "Read" || first.stopReason() != "tool_use" {
		t.Fatalf("turn 0: %+v", first)
	}
	second := step()
	if len(second.Content) != 2 || second.Content[0].Name != "Write" || second.Content[1].Name != "Write" {
		t.Fatalf("turn 1: %+v", second)
	}
	in := second.Content[0].Input.(map[string]string)
	if in["file_path"] != filepath.Join(dir, "old.txt") || in["content"] != "new\n" {
		t.Errorf("write %v", in)
	}
	if third := step(); third.Content[0].Text != "done" || third.stopReason() != "end_turn" {
		t.Errorf("turn 2: %+v", third)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
