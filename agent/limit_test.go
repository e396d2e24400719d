package agent

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The limits each backend recognises, from what the real CLIs printed
// against a scripted API server (the shared agent-limits notes, Claude
// Code 2.1.328, codex-cli 0.169.0, Gemini CLI 0.61.0, opencode 1.18.33).
func TestLimitOf(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 46, 51, 0, time.UTC)
	at := func(h, m, s int) time.Time { return time.Date(2026, 12, 1, h, m, s, 0, time.UTC) }
	for _, tc := range []struct {
		name    string
		backend string
		res     Result
		sig     signals
		stderr  string
		want    *Limit // nil: not a limit
	}{
		{name: "exec 75, no retry-after", backend: "exec", res: Result{ExitCode: 75},
			want: &Limit{Kind: "tempfail"}},
		{name: "exec 75, seconds", backend: "exec", res: Result{ExitCode: 75}, stderr: "working\nRetry-After: 3\n",
			want: &Limit{Kind: "tempfail", After: 3 * time.Second}},
		{name: "exec 75, the last line counts", backend: "exec", res: Result{ExitCode: 75}, stderr: "retry-after: 9\nretry-after: 0.5\n",
			want: &Limit{Kind: "tempfail", After: 500 * time.Millisecond}},
		{name: "exec 75, a time", backend: "exec", res: Result{ExitCode: 75}, stderr: "retry-after: 2026-12-01T17:00:00+01:00\n",
			want: &Limit{Kind: "tempfail", Reset: at(16, 0, 0)}},
		{name: "exec 75, nonsense", backend: "exec", res: Result{ExitCode: 75}, stderr: "retry-after: soon\n",
			want: &Limit{Kind: "tempfail"}},
		{name: "exec 1 with retry-after is a failure", backend: "exec", res: Result{ExitCode: 1}, stderr: "retry-after: 3\n"},
		{name: "exec 0", backend: "exec", res: Result{}},

		{name: "claude usage limit, stream-json reset", backend: "claude",
			res:  Result{ExitCode: 1, IsError: true, Text: "You've hit your 5-hour limit · resets 3:46pm (UTC)"},
			sig:  signals{apiStatus: 429, apiType: "rate_limit_error", apiErr: "usage_limit_reached", resetsAt: 1796140014},
			want: &Limit{Kind: "usage", Reset: time.Unix(1796140014, 0), Resolution: time.Second}},
		{name: "claude usage limit, text only", backend: "claude",
			res:  Result{ExitCode: 1, IsError: true, Text: "You've hit your 5-hour limit · resets 3:46pm (UTC)"},
			sig:  signals{apiStatus: 429, apiErr: "usage_limit_reached"},
			want: &Limit{Kind: "usage", Reset: at(15, 46, 0), Resolution: time.Minute}},
		{name: "claude usage limit, tomorrow", backend: "claude",
			res:  Result{ExitCode: 1, IsError: true, Text: "You've hit your 5-hour limit · resets 2am (UTC)"},
			want: &Limit{Kind: "usage", Reset: time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC), Resolution: time.Minute}},
		{name: "claude weekly limit", backend: "claude",
			res:  Result{ExitCode: 1, IsError: true, Text: "You've hit your weekly limit · resets Dec 4, 8:54pm (UTC)"},
			want: &Limit{Kind: "usage", Reset: time.Date(2026, 12, 4, 20, 54, 0, 0, time.UTC), Resolution: time.Minute}},
		{name: "claude spend limit", backend: "claude",
			res:  Result{ExitCode: 1, IsError: true, Text: "API Error: 400 You have reached your specified API usage limits. You will regain access on 2026-12-01 at 16:07 UTC."},
			sig:  signals{apiStatus: 400, apiType: "invalid_request_error"},
			want: &Limit{Kind: "usage", Reset: at(16, 7, 0), Resolution: time.Minute}},
		{name: "claude 429", backend: "claude",
			res:  Result{ExitCode: 1, IsError: true, Text: "API Error: Request rejected (429) · Rate limited"},
			sig:  signals{apiStatus: 429, apiType: "rate_limit_error"},
			want: &Limit{Kind: "rate"}},
		{name: "claude 529", backend: "claude",
			res:  Result{ExitCode: 1, IsError: true, Text: "API Error: 529 Overloaded. This is a server-side issue"},
			sig:  signals{apiStatus: 529, apiType: "overloaded_error"},
			want: &Limit{Kind: "overload"}},
		{name: "claude credit balance", backend: "claude",
			res: Result{ExitCode: 1, IsError: true, Text: "Credit balance is too low"}, sig: signals{apiStatus: 400}},
		{name: "claude billing", backend: "claude",
			res: Result{ExitCode: 1, IsError: true, Text: "API Error: 402 pay up"}, sig: signals{apiStatus: 402, apiType: "billing_error"}},
		{name: "claude plain failure", backend: "claude", res: Result{ExitCode: 1, IsError: true, Text: "Error: max turns"}},

		{name: "codex usage limit", backend: "codex",
			res:  Result{ExitCode: 1, IsError: true, Error: "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 3:47 PM."},
			want: &Limit{Kind: "usage", Reset: at(15, 47, 0), Resolution: time.Minute}},
		{name: "codex usage limit, another day", backend: "codex",
			res:  Result{ExitCode: 1, IsError: true, Error: "You’ve hit your usage limit. ... or try again at Dec 3rd, 2026 10:44 PM."},
			want: &Limit{Kind: "usage", Reset: time.Date(2026, 12, 3, 22, 44, 0, 0, time.UTC), Resolution: time.Minute}},
		{name: "codex 429", backend: "codex",
			res:  Result{ExitCode: 1, IsError: true, Error: "exceeded retry limit, last status: 429 Too Many Requests, request id: req_1"},
			want: &Limit{Kind: "rate"}},
		{name: "codex stream rate limit", backend: "codex",
			res:  Result{ExitCode: 1, IsError: true, Error: "rate limit exceeded: Rate limit reached for gpt-5.5. Please try again in 2s."},
			want: &Limit{Kind: "rate", After: 2 * time.Second}},
		{name: "codex at capacity", backend: "codex",
			res:  Result{ExitCode: 1, IsError: true, Error: "Selected model is at capacity. Please try a different model."},
			want: &Limit{Kind: "overload"}},
		{name: "codex 529", backend: "codex",
			res:  Result{ExitCode: 1, IsError: true, Error: "unexpected status 529 <unknown status code>: The server is overloaded"},
			want: &Limit{Kind: "overload"}},
		{name: "codex quota", backend: "codex",
			res: Result{ExitCode: 1, IsError: true, Error: "Quota exceeded. Check your plan and billing details."}},

		{name: "gemini daily quota", backend: "gemini",
			res:  Result{ExitCode: 173, IsError: true, Error: "[API Error: You have exhausted your daily quota on this model.]\nPlease wait and try again later."},
			want: &Limit{Kind: "usage"}},
		{name: "gemini per-minute quota", backend: "gemini",
			res:  Result{ExitCode: 173, IsError: true, Error: "[API Error: You exceeded your current quota ...\nPlease retry in 2s.\nSuggested retry after 2s.]"},
			want: &Limit{Kind: "rate", After: 2 * time.Second}},
		{name: "gemini 503", backend: "gemini",
			res:  Result{ExitCode: 247, IsError: true, Error: "[API Error: The model is overloaded. Please try again later.]"},
			want: &Limit{Kind: "overload"}},
		{name: "gemini 400", backend: "gemini", res: Result{ExitCode: 1, IsError: true, Error: "[API Error: bad request]"}},

		{name: "opencode 429 retry-after", backend: "opencode",
			res:  Result{ExitCode: 1, IsError: true, Error: "Rate limit reached"},
			sig:  signals{ocStatus: 429, ocHeaders: map[string]string{"retry-after": "2", "x-ratelimit-reset-requests": "30s"}, ocBody: `{"error":{"code":"rate_limit_exceeded"}}`},
			want: &Limit{Kind: "rate", After: 2 * time.Second}},
		{name: "opencode 429 reset header", backend: "opencode",
			res:  Result{ExitCode: 1, IsError: true, Error: "Rate limit reached"},
			sig:  signals{ocStatus: 429, ocHeaders: map[string]string{"x-ratelimit-reset-requests": "30s", "x-ratelimit-reset-tokens": "1m0s"}},
			want: &Limit{Kind: "rate", After: time.Minute}},
		{name: "opencode 529", backend: "opencode",
			res: Result{ExitCode: 1, IsError: true, Error: "Overloaded"}, sig: signals{ocStatus: 529},
			want: &Limit{Kind: "overload"}},
		{name: "opencode insufficient quota", backend: "opencode",
			res: Result{ExitCode: 1, IsError: true, Error: "You exceeded your current quota"},
			sig: signals{ocStatus: 429, ocBody: `{"error":{"code":"insufficient_quota"}}`}},
		{name: "opencode hosted usage limit", backend: "opencode",
			res:  Result{ExitCode: 1, IsError: true, Error: "Usage limit reached. It will reset in 2 hours 5 minutes"},
			want: &Limit{Kind: "usage", After: 2*time.Hour + 5*time.Minute}},
		{name: "opencode anthropic usage limit", backend: "opencode",
			res:  Result{ExitCode: 1, IsError: true, Error: "usage limit"},
			sig:  signals{ocStatus: 429, ocHeaders: map[string]string{"anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": "1796140014"}},
			want: &Limit{Kind: "usage", Reset: time.Unix(1796140014, 0), Resolution: time.Second}},

		{name: "builtin never", backend: "builtin", res: Result{ExitCode: 1, IsError: true, Text: "You've hit your limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := limitOf(tc.backend, tc.res, tc.sig, []byte(tc.stderr), now)
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("a limit: %+v", got)
			case tc.want == nil:
				return
			case got == nil:
				t.Fatalf("not a limit, want %+v", tc.want)
			}
			if got.Kind != tc.want.Kind || !got.Reset.Equal(tc.want.Reset) || got.Resolution != tc.want.Resolution || got.After != tc.want.After {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if got.Message == "" {
				t.Errorf("no message")
			}
		})
	}
}

// The real Claude Code's stream-json output on a usage limit (2.1.328,
// OAuth, 429 with anthropic-ratelimit-unified-status: rejected): the reset
// comes from its rate_limit_event, to the second.
func TestClaudeUsageLimitOutput(t *testing.T) {
	out := readFixture(t, "claude-usage-limit.jsonl")
	p := newParser()
	p.Write(out)
	res := p.result()
	res.ExitCode = 1
	l := limitOf("claude", res, p.sig, nil, time.Date(2026, 12, 1, 15, 46, 52, 0, time.UTC))
	if l == nil || l.Kind != "usage" || l.Reset.Unix() != 1796140014 || !strings.HasPrefix(l.Message, "You've hit your 5-hour limit") {
		t.Fatalf("limit = %+v (result %+v)", l, res)
	}
}

// An exec agent that exits 75 with a retry-after line: Run reports the
// limit, its stderr still streamed.
func TestExecTempFail(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'retry-after: 7' >&2\nexit 75\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := New("exec", Options{Command: script})
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	res, err := a.Run(context.Background(), Request{Dir: dir, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 75 || res.Limit == nil || res.Limit.After != 7*time.Second || stderr.String() != "retry-after: 7\n" {
		t.Fatalf("res = %+v, limit %+v, stderr %q", res, res.Limit, stderr.String())
	}
}

// Hostile figures never cost the record they are in: they are read as
// they are (or saturated) for the loop to refuse.
func TestHostileFigures(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want func(Result) bool
	}{
		{`{"type":"result","result":"ok","total_cost_usd":1e999,"usage":{"input_tokens":-5}}`,
			func(r Result) bool { return r.Text == "ok" && math.IsInf(r.CostUSD, 1) && r.InputTokens == -5 }},
		{`{"type":"result","result":"ok","total_cost_usd":"NaN","usage":{"output_tokens":1e30}}`,
			func(r Result) bool { return r.Text == "ok" && math.IsNaN(r.CostUSD) && r.OutputTokens == math.MaxInt64 }},
		{`{"type":"result","result":"ok","total_cost_usd":{"x":1},"usage":{"output_tokens":"many"}}`,
			func(r Result) bool { return r.Text == "ok" && math.IsNaN(r.CostUSD) && r.OutputTokens == -1 }},
		{`{"type":"turn.completed","usage":{"input_tokens":9223372036854775807,"output_tokens":1}}` + "\n" +
			`{"type":"turn.completed","usage":{"input_tokens":9223372036854775807,"output_tokens":1}}` + "\n",
			func(r Result) bool { return r.InputTokens == math.MaxInt64 && r.OutputTokens == 2 }},
	} {
		if got := ParseOutput([]byte(tc.out)); !tc.want(got) {
			t.Errorf("%s:\n got %+v", tc.out, got)
		}
	}
}

// Claude Code's stream-json tokens so far: a message's usage counts
// once however many content-block lines repeat it.
func TestTokensSoFar(t *testing.T) {
	var in, out int64
	p := newParser()
	p.onTokens = func(i, o int64) { in, out = i, o }
	p.Write([]byte(`{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":5}}}` + "\n" +
		`{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":7}}}` + "\n"))
	if in != 110 || out != 7 {
		t.Fatalf("after m1: %d in, %d out", in, out)
	}
	p.Write([]byte(`{"type":"assistant","message":{"id":"m2","usage":{"input_tokens":20,"output_tokens":3}}}` + "\n"))
	if in != 130 || out != 10 {
		t.Fatalf("after m2: %d in, %d out", in, out)
	}
}

func TestTail(t *testing.T) {
	tl := &tail{max: 8}
	tl.Write([]byte("abc"))
	tl.Write([]byte("defgh"))
	tl.Write([]byte("ij"))
	if string(tl.buf) != "cdefghij" {
		t.Fatalf("%q", tl.buf)
	}
	tl.Write([]byte("0123456789"))
	if string(tl.buf) != "23456789" {
		t.Fatalf("%q", tl.buf)
	}
}
