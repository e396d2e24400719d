package fakeopenai

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/scripted"
)

// post sends body to the server as codex would, in thread-1.
func post(t *testing.T, s *Server, path string, body any) *http.Response {
	return scripted.PostJSON(t, s.URL()+path, body, map[string]string{"Session-Id": "thread-1"})
}

func events(t *testing.T, resp *http.Response) []scripted.Event {
	t.Helper()
	evs, err := scripted.ReadSSE(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Data["type"] != e.Name || e.Data["sequence_number"] != float64(i) {
			t.Errorf("event %d %s: type %v sequence_number %v", i, e.Name, e.Data["type"], e.Data["sequence_number"])
		}
	}
	return evs
}

// codexBody is a Responses request shaped like codex 0.169's first call.
func codexBody(stream bool, input ...obj) obj {
	msg := func(role, text string) obj {
		return obj{"type": "message", "role": role, "content": []obj{{"type": "input_text", "text": text}}}
	}
	in := []obj{
		msg("developer", "You are Codex."),
		msg("user", "<environment_context>\n  <cwd>/repo/x</cwd>\n  <shell>bash</shell>\n</environment_context>"),
		msg("user", "Carry out the task.\n\n```json\n{\"task\":{\"id\":\"1\",\"text\":\"WRITE out/a.txt hi\"}}\n```\n"),
	}
	return obj{"model": Model, "stream": stream, "input": append(in, input...),
		"tools": []obj{{"type": "function", "name": "exec_command"}, {"type": "custom", "name": "apply_patch"}, {"type": "web_search"}}}
}

func TestStreamingToolCalls(t *testing.T) {
	var seen *Request
	s := New(t, func(r *Request) Response {
		seen = r
		return UseTools(ShellWrite("out/a.txt", "hi\n"), ApplyPatch("*** Begin Patch\n*** End Patch\n"))
	})
	resp := post(t, s, "/v1/responses", codexBody(true))
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	evs := events(t, resp)
	var names []string
	var args, input strings.Builder
	for _, e := range evs {
		names = append(names, e.Name)
		switch e.Name {
		case "response.function_call_arguments.delta":
			args.WriteString(e.Data["delta"].(string))
		case "response.custom_tool_call_input.delta":
			input.WriteString(e.Data["delta"].(string))
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.custom_tool_call_input.delta", "response.custom_tool_call_input.delta",
		"response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "response.output_item.done",
		"response.completed"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("events %v,\nwant %v", names, want)
	}
	var a struct{ Cmd string }
	if err := json.Unmarshal([]byte(args.String()), &a); err != nil || a.Cmd != "mkdir -p 'out' && printf '%s' 'hi\n' > 'out/a.txt'" {
		t.Errorf("joined arguments %q: %v", args.String(), err)
	}
	if input.String() != "*** Begin Patch\n*** End Patch\n" {
		t.Errorf("joined input %q", input.String())
	}
	fc := evs[7].Data["item"].(map[string]any)
	if fc["type"] != "function_call" || fc["name"] != ShellTool || fc["arguments"] != args.String() || fc["call_id"] == "" {
		t.Errorf("function_call item %v", fc)
	}

	calls := s.Calls()
	if len(calls) != 1 || !calls[0].Agent || !calls[0].Stream || calls[0].SessionID != "thread-1" || calls[0].Tools != 3 ||
		!reflect.DeepEqual(calls[0].Output, []string{"function_call:exec_command", "custom_tool_call:apply_patch"}) {
		t.Fatalf("calls %+v", calls)
	}
	u := evs[len(evs)-1].Data["response"].(map[string]any)["usage"].(map[string]any)
	num := func(m any, k string) int64 { return int64(m.(map[string]any)[k].(float64)) }
	got := Usage{InputTokens: num(u, "input_tokens"), CachedTokens: num(u["input_tokens_details"], "cached_tokens"),
		CacheWriteTokens: num(u["input_tokens_details"], "cache_write_tokens"), OutputTokens: num(u, "output_tokens"),
		ReasoningTokens: num(u["output_tokens_details"], "reasoning_tokens")}
	if got != calls[0].Usage || got != s.Usage() || s.UsageBySession()["thread-1"] != got {
		t.Errorf("served %+v, recorded %+v, sum %+v", got, calls[0].Usage, s.Usage())
	}
	if got.CachedTokens == 0 || got.CacheWriteTokens == 0 || got.ReasoningTokens == 0 ||
		got.CachedTokens+got.CacheWriteTokens > got.InputTokens || got.ReasoningTokens > got.OutputTokens {
		t.Errorf("default usage %+v: want every part non-zero and within its whole", got)
	}
	if seen.WorkingDir() != "/repo/x" || seen.Turn() != 0 || !strings.HasPrefix(seen.Prompt(), "Carry out") ||
		seen.TaskText() != "WRITE out/a.txt hi" || !seen.HasTool("web_search") {
		t.Errorf("request: dir %q turn %d prompt %q task %q tools %v", seen.WorkingDir(), seen.Turn(), seen.Prompt(), seen.TaskText(), seen.Tools)
	}
}

func TestTextNonStreamingAndFixedUsage(t *testing.T) {
	fixed := Usage{InputTokens: 100, CachedTokens: 40, CacheWriteTokens: 10, OutputTokens: 20, ReasoningTokens: 5}
	s := New(t, func(r *Request) Response { return Response{Output: []Output{Text("all done")}, Usage: fixed} })
	var text strings.Builder
	evs := events(t, post(t, s, "/v1/responses", codexBody(true)))
	for _, e := range evs {
		if e.Name == "response.output_text.delta" {
			text.WriteString(e.Data["delta"].(string))
		}
	}
	if text.String() != "all done" || evs[len(evs)-2].Name != "response.output_item.done" {
		t.Errorf("text %q, events %v", text.String(), evs)
	}

	resp := post(t, s, "/v1/responses", codexBody(false))
	var whole struct {
		Status string
		Output []struct {
			Type    string
			Content []struct{ Text string }
		}
		Usage struct {
			InputTokens int64 `json:"input_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&whole); err != nil {
		t.Fatal(err)
	}
	if whole.Status != "completed" || len(whole.Output) != 1 || whole.Output[0].Content[0].Text != "all done" || whole.Usage.InputTokens != 100 {
		t.Errorf("non-streaming answer %+v", whole)
	}
	if s.Usage() != fixed.Add(fixed) {
		t.Errorf("sum %+v", s.Usage())
	}
}

func TestErrorsAndOtherRequests(t *testing.T) {
	s := New(t, func(r *Request) Response { return Response{Status: 500, ErrorMsg: "boom"} })
	resp := post(t, s, "/v1/responses", codexBody(true))
	var e struct {
		Error struct{ Message, Type string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 500 || e.Error.Message != "boom" || e.Error.Type != "server_error" {
		t.Errorf("%d %+v", resp.StatusCode, e)
	}
	if r := post(t, s, "/v1/models", obj{}); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown endpoint: %d", r.StatusCode)
	}
	if r := post(t, s, "/v1/responses", "not an object"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad body: %d", r.StatusCode)
	}
	if !s.Usage().IsZero() || len(s.Calls()) != 3 {
		t.Errorf("usage %+v over %d calls:\n%s", s.Usage(), len(s.Calls()), s.Summary())
	}
}

func TestTurnsAndWriteTask(t *testing.T) {
	call := func(id string) obj {
		return obj{"type": "function_call", "name": ShellTool, "call_id": id, "arguments": `{"cmd":"x"}`}
	}
	out := func(id, text string) obj { return obj{"type": "function_call_output", "call_id": id, "output": text} }
	reasoning := obj{"type": "reasoning", "summary": []obj{}}
	decode := func(items ...obj) *Request {
		b, _ := json.Marshal(codexBody(true, items...))
		r := &Request{Method: http.MethodPost, Path: "/v1/responses", Body: b}
		if err := r.decodeResponses(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		items []obj
		turn  int
		reply string
	}{
		{nil, 0, ""},
		// Two calls of one answer (and its reasoning) are one turn.
		{[]obj{reasoning, call("a"), call("b"), out("a", "Process exited with code 0\n"), out("b", "Process exited with code 0\n")}, 1, "done"},
		{[]obj{call("a"), out("a", "Process exited with code 1\n")}, 1, "failed: "},
		{[]obj{call("a"), out("a", "Process exited with code 0\n"), call("b"), out("b", "exited with code 0")}, 2, "done"},
	} {
		r := decode(tc.items...)
		if r.Turn() != tc.turn {
			t.Errorf("%d items: Turn() = %d, want %d", len(tc.items), r.Turn(), tc.turn)
		}
		resp := WriteTask(r)
		if tc.reply == "" {
			if len(resp.Output) != 1 || resp.Output[0].Name != ShellTool {
				t.Errorf("first turn: %+v, want one shell call", resp)
			}
		} else if len(resp.Output) != 1 || !strings.HasPrefix(resp.Output[0].Text, tc.reply) {
			t.Errorf("turn %d: %+v, want a reply starting %q", tc.turn, resp, tc.reply)
		}
	}
	if got := Turns(func(*Request) Response { return Reply("first") })(decode(call("a"), out("a", ""))); got.Output[0].Text != "done" {
		t.Errorf("past the script: %+v", got)
	}
}

// TestShellWriteRunsInBash runs the command ShellWrite gives codex with
// bash, for contents a naive quoting would break.
func TestShellWriteRunsInBash(t *testing.T) {
	dir := t.TempDir()
	for i, content := range []string{"hi\n", "it's 100% \\n $HOME `x`\n\"q\"", "", "no newline"} {
		rel := filepath.ToSlash(filepath.Join("d", "sub dir", "f"+string(rune('0'+i))+".txt"))
		var a struct{ Cmd string }
		b, _ := json.Marshal(ShellWrite(rel, content).Arguments)
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "-c", a.Cmd)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", a.Cmd, err, out)
		}
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || string(got) != content {
			t.Errorf("%s wrote %q (%v), want %q", a.Cmd, got, err, content)
		}
	}
}

func TestEnvIsolatesCodex(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-real")
	t.Setenv("CODEX_HOME", "/home/someone/.codex")
	s := New(t, WriteTask)
	home := t.TempDir()
	env := s.Environ(home)
	var codexHome string
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "OPENAI_"):
			t.Errorf("the caller's %s reaches codex", name)
		case name == "CODEX_HOME":
			codexHome = val
		}
	}
	if codexHome != filepath.Join(home, ".codex") {
		t.Fatalf("CODEX_HOME %q", codexHome)
	}
	cfg, err := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`base_url = "` + s.URL() + `/v1"`, `wire_api = "responses"`, `env_key = "` + APIKeyEnv + `"`, `model = "` + Model + `"`} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config.toml lacks %s:\n%s", want, cfg)
		}
	}
}
