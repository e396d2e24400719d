//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/fakeclaude"
	"github.com/implloop/implloop/internal/fakeopenai"
)

// Usage limits through the real CLIs: the scripted servers answer an agent
// turn with the provider's own usage-limit response until a reset a few
// seconds away, and implloop waits it out (one attempt, one unit, after a
// wait of at least as long), or, with a fallback preset, hands the call to
// the other CLI at once.

// limitPlan is one task in a form both scripted servers carry out.
const limitPlan = "# Plan: limits\n\n### Task 1: First file\n\nWRITE out/f1.txt hello\n\n" +
	"```verify\ntest \"$(cat out/f1.txt)\" = hello\n```\n"

// turnTimes records when the agent turns came (both servers call their
// handlers from several goroutines).
type turnTimes struct {
	mu    sync.Mutex
	times []time.Time
}

func (tt *turnTimes) add() {
	tt.mu.Lock()
	tt.times = append(tt.times, time.Now())
	tt.mu.Unlock()
}

func (tt *turnTimes) all() []time.Time {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]time.Time(nil), tt.times...)
}

// claudeUsageLimit is Anthropic's answer to a subscriber over their
// 5-hour limit: 429 with the unified rate-limit headers saying rejected,
// and when it resets.
func claudeUsageLimit(reset time.Time) fakeclaude.Response {
	return fakeclaude.Response{Status: 429, ErrorType: "rate_limit_error", ErrorMsg: "usage limit reached",
		Header: map[string]string{
			"anthropic-ratelimit-unified-status":               "rejected",
			"anthropic-ratelimit-unified-reset":                fmt.Sprint(reset.Unix()),
			"anthropic-ratelimit-unified-representative-claim": "five_hour",
		}}
}

// codexUsageLimit is the ChatGPT backend's answer to a plan over its
// usage limit: 429 usage_limit_reached with resets_at.
func codexUsageLimit(reset time.Time) fakeopenai.Response {
	return fakeopenai.Response{Status: 429, Error: map[string]any{"type": "usage_limit_reached",
		"message": "The usage limit has been reached", "plan_type": "plus",
		"resets_at": reset.Unix(), "resets_in_seconds": int(time.Until(reset).Seconds())}}
}

// oauthEnv is env (a server's Environ) as a Claude subscriber has it: an
// OAuth token instead of an API key. Claude Code reports usage limits
// (api_error usage_limit_reached, and in stream-json the reset to the
// second) only to subscribers; with an API key the same 429 is a rate
// limit it retries for minutes.
func oauthEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") {
			out = append(out, kv)
		}
	}
	return append(out, "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-e2e")
}

// runImplloop runs implloop (the binary) with args in repo and env, logs the output and
// the servers' traffic, and returns stdout and stderr; it fails the test
// unless implloop exited 0.
func runImplloop(t *testing.T, implloop, repo string, env []string, timeout time.Duration, traffic func() string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := groupCommand(ctx, implloop, args...)
	cmd.Dir, cmd.Env = repo, env
	stdout, stderr := runLogged(t, cmd, "", traffic)
	return string(stdout), string(stderr)
}

// checkOneAttempt asserts the run's report: DONE, task 1 done after one
// attempt, one live unit, made by agent.
func checkOneAttempt(t *testing.T, repo, agent string) {
	t.Helper()
	rep, raw := readReport(t, repo)
	if rep.Outcome.Verdict != "DONE" || len(rep.Tasks) != 1 || rep.Tasks[0].Attempts != 1 || rep.Totals.Live.Units != 1 {
		t.Errorf("report: want DONE, task 1 in one attempt, one live unit:\n%s", raw)
	}
	var byAgent struct {
		Tasks []struct {
			Agent string `json:"agent"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &byAgent); err != nil || len(byAgent.Tasks) != 1 || byAgent.Tasks[0].Agent != agent {
		t.Errorf("report: task 1's work by %+v, want %s", byAgent.Tasks, agent)
	}
	checkFiles(t, map[string]string{filepath.Join(repo, "out", "f1.txt"): "hello\n"})
}

// checkWaited asserts that the agent turn after the limited one came at
// least min after it.
func checkWaited(t *testing.T, times []time.Time, min time.Duration) {
	t.Helper()
	if len(times) < 2 {
		t.Fatalf("%d agent turns, want the limited one and more", len(times))
	}
	if gap := times[1].Sub(times[0]); gap < min {
		t.Errorf("the call after the limit came %v after it, want at least %v", gap, min)
	} else {
		t.Logf("waited %v for a reset %v away", gap.Round(time.Millisecond), min)
	}
}

// TestClaudeUsageLimitWaited: Claude Code's usage limit, resetting 3 s
// after the call (and a fraction, to the whole second), is waited out: the task is
// done in one attempt, the call after the limit at least 3 s later.
func TestClaudeUsageLimitWaited(t *testing.T) {
	implloop, bin := buildImplloop(t), fakeclaude.CLI(t)
	repo := newPlanRepo(t, limitPlan)
	home := t.TempDir()
	// The reset is 3 s (to the next whole second) after the first call:
	// Claude Code takes seconds to start on a loaded machine.
	var reset time.Time
	var once sync.Once
	turns := &turnTimes{}
	srv := fakeclaude.New(t, func(r *fakeclaude.Request) fakeclaude.Response {
		if r.Turn() == 0 {
			turns.add()
		}
		once.Do(func() { reset = time.Unix(time.Now().Add(3*time.Second).Unix()+1, 0) })
		if time.Now().Before(reset) {
			return claudeUsageLimit(reset)
		}
		return fakeclaude.WriteTask(r)
	})
	_, stderr := runImplloop(t, implloop, repo, runEnv(oauthEnv(srv.Environ(home)), onPath(t, "claude", bin)), 2*time.Minute, srv.Summary,
		"run", "plan.md", "--agent", "claude", "--model", fakeclaude.Model)
	if !strings.Contains(stderr, "claude (claude-sonnet-4-5) hit its usage limit") || !strings.Contains(stderr, "You've hit your") {
		t.Errorf("stderr does not say Claude Code hit its usage limit")
	}
	checkOneAttempt(t, repo, "claude")
	checkWaited(t, turns.all(), 3*time.Second)
}

// TestCodexUsageLimitWaited: codex says when its usage limit lifts only to
// the minute ("try again at 3:47 PM"), so the reset here is on a minute, 3
// to 63 s after the first call; implloop waits for that minute, and the task is done in
// one attempt.
func TestCodexUsageLimitWaited(t *testing.T) {
	implloop, bin := buildImplloop(t), fakeopenai.CLI(t)
	repo := newPlanRepo(t, limitPlan)
	home := t.TempDir()
	var reset time.Time
	var once sync.Once
	turns := &turnTimes{}
	srv := fakeopenai.New(t, func(r *fakeopenai.Request) fakeopenai.Response {
		if r.Turn() == 0 {
			turns.add()
		}
		once.Do(func() {
			now := time.Now()
			if reset = now.Truncate(time.Minute).Add(time.Minute); reset.Sub(now) < 3*time.Second {
				reset = reset.Add(time.Minute)
			}
		})
		if time.Now().Before(reset) {
			return codexUsageLimit(reset)
		}
		return fakeopenai.WriteTask(r)
	})
	_, stderr := runImplloop(t, implloop, repo, runEnv(srv.Environ(home), onPath(t, "codex", bin)), 3*time.Minute, srv.Summary,
		"run", "plan.md", "--agent", "codex", "--model", fakeopenai.Model)
	if !strings.Contains(stderr, "hit its usage limit") || !strings.Contains(stderr, "try again at") {
		t.Errorf("stderr does not say codex hit its usage limit")
	}
	checkOneAttempt(t, repo, "codex")
	if times := turns.all(); len(times) > 0 {
		checkWaited(t, times, reset.Sub(times[0]))
	}
}

// TestUsageLimitFallback: with a fallback preset, a usage limit an hour
// away is not waited for: the other CLI takes the call at once and does
// the work, its own identity journaled; both directions.
func TestUsageLimitFallback(t *testing.T) {
	implloop, claudeBin, codexBin := buildImplloop(t), fakeclaude.CLI(t), fakeopenai.CLI(t)
	for _, tc := range []struct{ primary, fallback string }{{"claude", "codex"}, {"codex", "claude"}} {
		t.Run(tc.primary, func(t *testing.T) {
			repo := newPlanRepo(t, limitPlan)
			home := t.TempDir()
			reset := time.Now().Add(time.Hour)
			claudeSrv := fakeclaude.New(t, func(r *fakeclaude.Request) fakeclaude.Response {
				if tc.primary == "claude" {
					return claudeUsageLimit(reset)
				}
				return fakeclaude.WriteTask(r)
			})
			codexSrv := fakeopenai.New(t, func(r *fakeopenai.Request) fakeopenai.Response {
				if tc.primary == "codex" {
					return codexUsageLimit(reset)
				}
				return fakeopenai.WriteTask(r)
			})
			pathDir := onPath(t, "claude", claudeBin)
			if err := os.Symlink(codexBin, filepath.Join(pathDir, "codex")); err != nil {
				t.Fatal(err)
			}
			// Both CLIs' environments: each server's own variables.
			env := runEnv(oauthEnv(claudeSrv.Environ(home)), pathDir)
			for k, v := range codexSrv.Env(home) {
				if !strings.HasSuffix(strings.ToLower(k), "proxy") {
					env = append(env, k+"="+v)
				}
			}
			model := map[string]string{"claude": fakeclaude.Model, "codex": fakeopenai.Model}
			traffic := func() string { return "claude:\n" + claudeSrv.Summary() + "codex:\n" + codexSrv.Summary() }
			began := time.Now()
			_, stderr := runImplloop(t, implloop, repo, env, 2*time.Minute, traffic,
				"run", "plan.md", "--agent", tc.primary, "--model", model[tc.primary],
				"--fallback-agent", tc.fallback+":"+model[tc.fallback])
			if took := time.Since(began); took > 50*time.Second {
				t.Logf("the run took %v", took)
			}
			if strings.Contains(stderr, "waiting:") || !strings.Contains(stderr, tc.fallback+" ("+model[tc.fallback]+") takes the call") {
				t.Errorf("want the fallback to take the call, no wait")
			}
			checkOneAttempt(t, repo, tc.fallback)
		})
	}
}
