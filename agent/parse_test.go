package agent

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixtureResults are the figures each output fixture must parse to. The
// fixtures follow each CLI's documented (and, where possible, source-read)
// output shape; the preset tests print them from fake executables.
var fixtureResults = map[string]Result{
	"claude.json": {
		Text: "Wrote textstats/words.go.", InputTokens: 12, OutputTokens: 356, CacheRead: 13920, CacheWrite: 4821,
		CostUSD: 0.0421875, SessionID: "3f6b1c2e-8d7a-4e55-9a0e-2b1f0c9d8e7a",
	},
	// An empty result with output tokens is not an error.
	"claude-stream.jsonl": {
		InputTokens: 6, OutputTokens: 77, CacheRead: 2000, CacheWrite: 100, CostUSD: 0.0105,
		SessionID: "7a7a7a7a-1111-4222-8333-444455556666",
	},
	"claude-array.json": {
		Text: "Done.", InputTokens: 10, OutputTokens: 40, CacheRead: 30, CacheWrite: 20, CostUSD: 0.5, SessionID: "arr-1",
	},
	// Two turns summed; input_tokens include the cached ones.
	"codex.jsonl": {
		Text: "Tests pass.", InputTokens: 415, OutputTokens: 130, CacheRead: 25348,
		SessionID: "0199a213-81c0-7800-8aa1-bbab2a035a53",
	},
	// Two models summed; output = candidates + thoughts; no cost reported.
	"gemini.json": {
		Text: "I created textstats/words.go.", InputTokens: 3776, OutputTokens: 384, CacheRead: 21263,
		SessionID: "c0ffee00-1234-4abc-8def-0123456789ab",
	},
	"gemini-stream.jsonl": {Text: "Done.", InputTokens: 200, OutputTokens: 100, CacheRead: 1000, SessionID: "gem-stream-1"},
	// codex-cli 0.169.0's five usage fields: input_tokens include the
	// cached reads and the cache writes, output_tokens the reasoning.
	"codex-cache-write.jsonl": {
		Text: "Added textstats/words.go.", InputTokens: 13982, CacheRead: 6912, CacheWrite: 400, OutputTokens: 130,
		SessionID: "019a7c2e-5b1d-7f30-9c4e-2f8a6d1b3e70",
	},
	// What the real gemini 0.61.0 printed (stream-json) when its second
	// API call failed (HTTP 400 from a scripted server): the first call's
	// tokens are in the error result's stats (prompt 1000 of which 600
	// cached, candidates 20, thoughts 30, in total_tokens only).
	"gemini-stream-error.jsonl": {
		Text: "Listing first.", IsError: true, InputTokens: 400, CacheRead: 600, OutputTokens: 50,
		Error:     `[API Error: {"error":{"code":400,"message":"scripted failure after one paid call","status":"INVALID_ARGUMENT"}}]`,
		SessionID: "d4e50cc9-d7d6-4c24-98a5-de07010db1c0",
	},
	// Two steps summed; output = output + reasoning.
	"opencode.jsonl": {
		Text: "Wrote textstats/words.go.", InputTokens: 1250, OutputTokens: 136, CacheRead: 19200, CacheWrite: 300,
		CostUSD: 0.0168, SessionID: "ses_494719016ffe85dkDMj0FPRbHK",
	},
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "output", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameResult compares with a tolerance on cost (sums of decimal fractions).
func sameResult(got, want Result) bool {
	if math.Abs(got.CostUSD-want.CostUSD) > 1e-9 {
		return false
	}
	got.CostUSD = want.CostUSD
	return got == want
}

func TestParseOutputShapes(t *testing.T) {
	for name, want := range fixtureResults {
		out := readFixture(t, name)
		if got := ParseOutput(out); !sameResult(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
		// Fed in small pieces, as a pipe delivers it: the same figures.
		p := newParser()
		for b := out; len(b) > 0; {
			n := min(7, len(b))
			p.Write(b[:n])
			b = b[n:]
		}
		if got := p.result(); !sameResult(got, want) {
			t.Errorf("%s in pieces:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

func TestParseOutputEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      Result
	}{
		{"plain text", "All done!\nbye\n", Result{}},
		{"empty", "", Result{}},
		{"error result", `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","usage":{"output_tokens":5}}`,
			Result{IsError: true, OutputTokens: 5}},
		{"no trailing newline", "noise\n" + `{"type":"result","result":"ok","usage":{"input_tokens":1,"output_tokens":2}}`,
			Result{Text: "ok", InputTokens: 1, OutputTokens: 2}},
		{"last result wins", `{"type":"result","result":"a","usage":{"output_tokens":1}}` + "\n" + `{"type":"result","result":"b","usage":{"output_tokens":2}}` + "\n",
			Result{Text: "b", OutputTokens: 2}},
		{"older cost_usd", `{"type":"result","result":"x","cost_usd":0.25}`, Result{Text: "x", CostUSD: 0.25}},
		{"result amid log lines", "starting...\n{\"type\":\"result\",\"result\":\"r\",\"total_cost_usd\":1}\nwarning: foo\n",
			Result{Text: "r", CostUSD: 1}},
		{"codex failure", `{"type":"thread.started","thread_id":"t"}` + "\n" + `{"type":"turn.failed","error":{"message":"rate limited"}}` + "\n",
			Result{IsError: true, Error: "rate limited", SessionID: "t"}},
		{"codex survives reconnects", `{"type":"thread.started","thread_id":"t"}` + "\n" +
			`{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}` + "\n" +
			`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":3}}` + "\n",
			Result{SessionID: "t", InputTokens: 6, CacheRead: 4, OutputTokens: 3}},
		{"opencode session error", `{"type":"step_finish","sessionID":"s","part":{"cost":0.5,"tokens":{"input":1}}}` + "\n" +
			`{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"overloaded"}}}` + "\n",
			Result{IsError: true, Error: "overloaded", SessionID: "s", InputTokens: 1, CostUSD: 0.5}},
		{"gemini error object", `{"session_id":"s","error":{"type":"FatalAuthenticationError","message":"no key","code":41}}`,
			Result{IsError: true, Error: "no key", SessionID: "s"}},
		{"array without result", `[{"type":"system"}]`, Result{}},
		{"broken json", `{"type":"result","result":`, Result{}},
	} {
		if got := ParseOutput([]byte(tc.out)); !sameResult(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// A huge line is skipped without being kept; the result after it parses.
func TestParserBounded(t *testing.T) {
	p := newParser()
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < 20; i++ {
		p.Write(chunk)
	}
	p.Write([]byte("\n"))
	if cap(p.line) > maxLine+(64<<10) || p.whole != nil || !p.wholeOver {
		t.Fatalf("parser kept %d line bytes, %d whole bytes", cap(p.line), cap(p.whole))
	}
	p.Write([]byte(`{"type":"result","result":"fine","usage":{"output_tokens":3}}` + "\n"))
	if got := p.result(); got.Text != "fine" || got.OutputTokens != 3 {
		t.Fatalf("got %+v", got)
	}
}

func FuzzParseOutput(f *testing.F) {
	for name := range fixtureResults {
		f.Add(readFixture(f, name), uint16(3))
	}
	f.Add([]byte(`[{"type":"result","usage":{"input_tokens":1}}]`), uint16(1))
	f.Add([]byte(`{"type":"step_finish","part":{"cost":1e308,"tokens":{"input":9223372036854775807}}}`), uint16(0))
	f.Fuzz(func(t *testing.T, out []byte, split uint16) {
		whole := ParseOutput(out)
		// Any split of the stream gives the same result.
		p := newParser()
		i := int(split) % (len(out) + 1)
		p.Write(out[:i])
		p.Write(out[i:])
		if got := p.result(); !reflect.DeepEqual(got, whole) && !(math.IsNaN(got.CostUSD) && math.IsNaN(whole.CostUSD)) {
			t.Fatalf("split at %d: %+v, whole: %+v", i, got, whole)
		}
		if whole.ExitCode != 0 || whole.TimedOut {
			t.Fatalf("parser set process fields: %+v", whole)
		}
		if !strings.Contains(string(out), "{") && whole != (Result{}) {
			t.Fatalf("figures from output with no JSON: %+v", whole)
		}
	})
}

// What the real gemini 0.61.0 wrote to stderr with --output-format json
// when its second call failed: log lines, then the error object.
func TestStderrError(t *testing.T) {
	want := `{"error":{"code":400,"message":"scripted failure after one paid call","status":"INVALID_ARGUMENT"}}`
	if got := StderrError(readFixture(t, "gemini-error-stderr.txt")); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, s := range []string{"", "plain\nlines\n", "{broken\n", "{\"error\":null}\n", "x {\"error\":\"inline\"}\n"} {
		if got := StderrError([]byte(s)); got != "" {
			t.Errorf("%q: got %q", s, got)
		}
	}
	if got := StderrError([]byte("log\n{\"error\":\"plain string\"}\n")); got != "plain string" {
		t.Errorf("got %q", got)
	}
}
