//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/fakeopenai"
	"github.com/implloop/implloop/internal/scripted"
)

// codexReported is what implloop's report and the codex preset's Result
// must say for usage u that the server served to codex, under the
// accounting rule docs/agents.md states for codex: codex's input_tokens
// count the cached reads and the cache writes too (OpenAI style), so input
// is input_tokens less both; cache read and cache write are
// cached_input_tokens and cache_write_input_tokens; output is
// output_tokens (reasoning is a part of it, not added); cost is what the
// agent reports, and codex reports none. codex itself prints the
// Responses API's figures under those names (codexPrinted).
//
// This is the one place that states the rule for the codex e2e tests.
func codexReported(u fakeopenai.Usage) reportFigures {
	return reportFigures{
		TokensIn:   u.InputTokens - u.CachedTokens - u.CacheWriteTokens,
		CacheRead:  u.CachedTokens,
		CacheWrite: u.CacheWriteTokens,
		TokensOut:  u.OutputTokens,
		CostUSD:    0,
	}
}

// sameFigures compares token and cost figures, not unit counts.
func sameFigures(got, want reportFigures) bool {
	got.Units, want.Units = 0, 0
	costOK := scripted.CostEqual(got.CostUSD, want.CostUSD)
	got.CostUSD, want.CostUSD = 0, 0
	return got == want && costOK
}

// codexUsage is the usage of a `codex exec --json` turn.completed event.
type codexUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

// codexPrinted is what codex 0.169 prints for usage the server served: the
// Responses API's fields summed over the turn's calls, under its own names
// (input_tokens_details.cache_write_tokens becomes cache_write_input_tokens).
func codexPrinted(u fakeopenai.Usage) codexUsage {
	return codexUsage{InputTokens: u.InputTokens, CachedInputTokens: u.CachedTokens,
		CacheWriteInputTokens: u.CacheWriteTokens, OutputTokens: u.OutputTokens, ReasoningOutputTokens: u.ReasoningTokens}
}

// codexEvent is the part of a `codex exec --json` line a test reads.
type codexEvent struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Usage    *codexUsage `json:"usage"`
	Item     *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Command  string `json:"command"`
		ExitCode *int   `json:"exit_code"`
		Status   string `json:"status"`
		Changes  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
}

func parseCodexEvents(t *testing.T, out []byte) []codexEvent {
	t.Helper()
	var evs []codexEvent
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev codexEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("codex printed a line that is not JSON: %q", sc.Text())
		}
		evs = append(evs, ev)
	}
	return evs
}

// checkCodexCalls asserts that the server saw only streaming agent turns
// of codex (POST /v1/responses offering the shell tool): nothing else was
// fetched, and nothing tried to leave the machine through the proxy.
func checkCodexCalls(t *testing.T, srv *fakeopenai.Server, want int) {
	t.Helper()
	calls := srv.Calls()
	for _, c := range calls {
		if !c.Responses || !c.Agent || !c.Stream || c.Status != 200 || c.Model != fakeopenai.Model {
			t.Errorf("call #%d %s %s stream=%v agent=%v model=%s -> %d: want only streaming agent turns of %s",
				c.Seq, c.Method, c.Path, c.Stream, c.Agent, c.Model, c.Status, fakeopenai.Model)
		}
	}
	if len(calls) != want {
		t.Errorf("%d calls, want %d", len(calls), want)
	}
}

// checkFiles asserts what the files hold.
func checkFiles(t *testing.T, want map[string]string) {
	t.Helper()
	for path, content := range want {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
		} else if string(got) != content {
			t.Errorf("%s holds %q, want %q", path, got, content)
		}
	}
}

// TestCodexDirect runs `codex exec --json` itself against the scripted
// server: the first answer calls codex's shell tool (exec_command) to write
// one file and its apply_patch tool to add another, codex runs both in the
// repository under its workspace-write sandbox, and the usage its
// turn.completed event prints is the sum of what the server served.
func TestCodexDirect(t *testing.T) {
	bin := fakeopenai.CLI(t)
	repo := newRepo(t)
	home := t.TempDir()

	patch := "*** Begin Patch\n*** Add File: patched.txt\n+patched by codex\n*** End Patch\n"
	srv := fakeopenai.New(t, fakeopenai.Turns(
		func(r *fakeopenai.Request) fakeopenai.Response {
			if r.WorkingDir() != repo {
				t.Errorf("working directory in the request = %q, want %q", r.WorkingDir(), repo)
			}
			if !strings.Contains(r.Prompt(), "Create out/hello.txt") {
				t.Errorf("prompt = %q", r.Prompt())
			}
			return fakeopenai.UseTools(fakeopenai.ShellWrite("out/hello.txt", "hello from codex\n"), fakeopenai.ApplyPatch(patch))
		},
		func(r *fakeopenai.Request) fakeopenai.Response {
			outs := r.ToolOutputs()
			calls := r.ToolCalls()
			if len(calls) != 2 || !fakeopenai.ShellSucceeded(outs[calls[0].CallID]) || outs[calls[1].CallID] == "" {
				t.Errorf("tool calls %+v, outputs %q", calls, outs)
			}
			return fakeopenai.Reply("done")
		},
	))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := groupCommand(ctx, bin, "exec", "--json", "--sandbox", "workspace-write", "-m", fakeopenai.Model, "-")
	cmd.Dir, cmd.Env = repo, srv.Environ(home)
	stdout, _ := runLogged(t, cmd, "Create out/hello.txt holding one line: hello from codex, and patched.txt\n", srv.Summary)

	var thread, text string
	var printed codexUsage
	var commands, patches, turns int
	for _, ev := range parseCodexEvents(t, stdout) {
		switch {
		case ev.Type == "thread.started":
			thread = ev.ThreadID
		case ev.Type == "turn.completed" && ev.Usage != nil:
			turns++
			printed = *ev.Usage
		case ev.Type == "turn.failed" || ev.Type == "error":
			t.Errorf("codex printed %s", ev.Type)
		case ev.Type == "item.completed" && ev.Item != nil:
			switch ev.Item.Type {
			case "command_execution":
				commands++
				if ev.Item.ExitCode == nil || *ev.Item.ExitCode != 0 || !strings.Contains(ev.Item.Command, "out/hello.txt") {
					t.Errorf("command_execution %+v, want the ShellWrite exiting 0", *ev.Item)
				}
			case "file_change":
				patches++
				if ev.Item.Status != "completed" || len(ev.Item.Changes) != 1 || ev.Item.Changes[0].Kind != "add" {
					t.Errorf("file_change %+v, want patched.txt added", *ev.Item)
				}
			case "agent_message":
				text = ev.Item.Text
			case "error":
				t.Errorf("codex printed an error item: %q", ev.Item.Text)
			}
		}
	}
	if commands != 1 || patches != 1 || turns != 1 || text != "done" {
		t.Errorf("%d command(s), %d patch(es), %d turn(s), last message %q; want 1, 1, 1, \"done\"", commands, patches, turns, text)
	}
	checkFiles(t, map[string]string{
		filepath.Join(repo, "out", "hello.txt"): "hello from codex\n",
		filepath.Join(repo, "patched.txt"):      "patched by codex\n",
	})
	checkCodexCalls(t, srv, 2)
	sum := srv.Usage()
	if want := codexPrinted(sum); printed != want {
		t.Errorf("turn.completed usage %+v, server served in sum %+v (want %+v)", printed, sum, want)
	}
	if s := srv.Sessions(); len(s) != 1 || s[0] != thread {
		t.Errorf("server saw sessions %v, codex printed thread %q", s, thread)
	}
}

// TestCodexPreset runs one call through the agent package's codex preset
// against the real CLI: the prompt is shaped like implloop's, codex writes
// the file with its shell tool, and the Result's figures are what the
// server served, under the codex accounting rule (codexReported).
func TestCodexPreset(t *testing.T) {
	bin := fakeopenai.CLI(t)
	t.Setenv("PATH", onPath(t, "codex", bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	clearAgentEnv(t, "OPENAI_", "CODEX_")

	repo := newRepo(t)
	home := t.TempDir()
	srv := fakeopenai.New(t, fakeopenai.WriteTask)

	res := runPreset(t, "codex", repo, srv.Env(home), fakeopenai.Model, srv.Summary)
	if res.ExitCode != 0 || res.IsError || res.Text != "done" {
		t.Errorf("result = %+v, want exit 0, no error, text \"done\"", res)
	}
	checkFiles(t, map[string]string{filepath.Join(repo, "out", "f1.txt"): "hello\n"})
	checkCodexCalls(t, srv, 2)

	got := reportFigures{TokensIn: res.InputTokens, TokensOut: res.OutputTokens,
		CacheRead: res.CacheRead, CacheWrite: res.CacheWrite, CostUSD: res.CostUSD}
	if want := codexReported(srv.Usage()); !sameFigures(got, want) {
		t.Errorf("Result figures %+v, want %+v (served %+v)", got, want, srv.Usage())
	}
	if s := srv.Sessions(); len(s) != 1 || res.SessionID != s[0] {
		t.Errorf("Result.SessionID %q, server saw sessions %v", res.SessionID, s)
	}
}

// codexPlan is the plan of TestRunPlanCodex: two tasks, each asking for a
// file in a form fakeopenai.WriteTask understands.
const codexPlan = "# Plan: e2e codex\n\n" +
	"Two small files, written by codex through its own shell tool.\n\n" +
	"### Task 1: First file\n\n" +
	"WRITE out/f1.txt hello\n\n" +
	"```verify\ntest \"$(cat out/f1.txt)\" = hello\n```\n\n" +
	"### Task 2: Second file\n\n" +
	"```text path=out/f2.txt\nsecond file\nit's quoted\n```\n\n" +
	"```verify\ngrep -q \"it's quoted\" out/f2.txt\n```\n"

// TestRunPlanCodex is the `make e2e` test of the run loop with codex: a
// 2-task plan run with `implloop run plan.md --agent codex` through the
// built binary and the real codex CLI. It asserts DONE, the files written
// by codex's shell tool, and that report.json and `implloop show --json`
// give, per task and in total, what the server served to that task's codex
// session under the codex accounting rule (codexReported).
func TestRunPlanCodex(t *testing.T) {
	implloop := buildImplloop(t)
	bin := fakeopenai.CLI(t)
	repo := newPlanRepo(t, codexPlan)
	home := t.TempDir()
	srv := fakeopenai.New(t, fakeopenai.WriteTask)
	env := runEnv(srv.Environ(home), onPath(t, "codex", bin))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := groupCommand(ctx, implloop, "run", "plan.md", "--agent", "codex", "--model", fakeopenai.Model)
	cmd.Dir, cmd.Env = repo, env
	runLogged(t, cmd, "", srv.Summary)
	checkFiles(t, map[string]string{
		filepath.Join(repo, "out", "f1.txt"): "hello\n",
		filepath.Join(repo, "out", "f2.txt"): "second file\nit's quoted\n",
	})
	checkCodexCalls(t, srv, 4)

	// One codex session per task, in task order.
	sessions := srv.Sessions()
	if len(sessions) != 2 {
		t.Fatalf("codex ran %d sessions, want 2 (one per task): %v", len(sessions), sessions)
	}
	bySession := srv.UsageBySession()
	served := srv.Usage()
	want := codexReported(served)
	t.Logf("served %+v; the report must say %+v", served, want)

	show := exec.Command(implloop, "show", "--json")
	show.Dir, show.Env = repo, env
	shown, err := show.Output()
	if err != nil {
		t.Fatalf("implloop show --json: %v", err)
	}
	var fromShow runReport
	if err := json.Unmarshal(shown, &fromShow); err != nil {
		t.Fatalf("implloop show --json: %v\n%s", err, shown)
	}
	rep, raw := readReport(t, repo)
	for name, rep := range map[string]runReport{"report.json": rep, "show --json": fromShow} {
		if rep.Outcome.Verdict != "DONE" || rep.ExitCode != 0 {
			t.Errorf("%s: verdict %q exit %d, want DONE 0", name, rep.Outcome.Verdict, rep.ExitCode)
		}
		if rep.Totals.Live.Units != 2 || !sameFigures(rep.Totals.Live, want) {
			t.Errorf("%s: totals %+v, want 2 live units and %+v", name, rep.Totals.Live, want)
		}
		if rep.Totals.Saved != (reportFigures{}) {
			t.Errorf("%s: a fresh run reports replayed figures %+v", name, rep.Totals.Saved)
		}
		if len(rep.Tasks) != 2 {
			t.Fatalf("%s has %d tasks, want 2:\n%s", name, len(rep.Tasks), raw)
		}
		for i, task := range rep.Tasks {
			if task.ID != fmt.Sprint(i+1) || task.Status != "done" || task.Source != "live" || task.Attempts != 1 {
				t.Errorf("%s: task %d: %s %s %s after %d attempt(s), want done live after 1", name, i+1, task.ID, task.Status, task.Source, task.Attempts)
			}
			if w := codexReported(bySession[sessions[i]]); task.Live.Units != 1 || !sameFigures(task.Live, w) {
				t.Errorf("%s: task %d: live %+v, want 1 unit and %+v (its codex session was served %+v)", name, i+1, task.Live, w, bySession[sessions[i]])
			}
		}
	}
	if t.Failed() {
		t.Logf("report.json: %s", raw)
	}
}
