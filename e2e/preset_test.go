//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/internal/fakeclaude"
	"github.com/implloop/implloop/internal/scripted"
)

// presetPrompt is shaped like implloop's prompt for task 1 of a one-task
// plan (instructions, then a fenced JSON context) whose task text asks for
// out/f1.txt holding "hello".
const presetPrompt = "Carry out the task in the attached context.\n\n" +
	"```json\n" + `{"task":{"id":"1","title":"First file","text":"### Task 1: First file\n\nWRITE out/f1.txt hello\n","index":1,"count":1},"attempt":1}` + "\n```\n"

// runPreset makes the agent package's preset name as implloop does for
// `--agent name` (it finds the CLI on PATH), runs it once on presetPrompt
// in repo with env added to the environment, logs the result, its output
// and the server's traffic, and fails the test unless the call returned.
func runPreset(t *testing.T, name, repo string, env map[string]string, model string, traffic func() string) agent.Result {
	t.Helper()
	a, err := agent.New(name, agent.Options{})
	if err != nil {
		t.Fatalf("agent.New(%q): %v", name, err)
	}
	if a.Name() != name {
		t.Errorf("Name() = %q", a.Name())
	}
	if err := a.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	res, err := a.Run(ctx, agent.Request{
		Prompt: []byte(presetPrompt), Dir: repo, Env: env, Model: model,
		Timeout: 2 * time.Minute, Stdout: &stdout, Stderr: &stderr,
	})
	t.Logf("%s preset run took %v; result %+v\nstdout: %s\nstderr: %s", name, time.Since(began).Round(time.Millisecond), res, stdout.Bytes(), stderr.Bytes())
	t.Logf("server traffic:\n%s", traffic())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// TestClaudePreset runs one call through the agent package's claude preset
// against the real CLI: the prompt is shaped like implloop's (instructions,
// then a fenced JSON context whose task text asks for a file), Claude Code
// writes the file with its Write tool, and the Result's figures are the
// sums of what the server reported per call.
func TestClaudePreset(t *testing.T) {
	bin := fakeclaude.CLI(t)
	t.Setenv("PATH", onPath(t, "claude", bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	clearAgentEnv(t, "ANTHROPIC_", "CLAUDE")

	repo := newRepo(t)
	home := t.TempDir()
	rec, h := newRecorder(fakeclaude.WriteTask)
	srv := fakeclaude.New(t, h)

	res := runPreset(t, "claude", repo, srv.Env(home), fakeclaude.Model, srv.Summary)
	if res.ExitCode != 0 || res.IsError || res.Text != "done" {
		t.Errorf("result = %+v, want exit 0, no error, text \"done\"", res)
	}
	checkWrites(t, rec.all(), map[string]string{filepath.Join(repo, "out", "f1.txt"): "hello\n"})

	sum := srv.Usage()
	got := fakeclaude.Usage{InputTokens: res.InputTokens, OutputTokens: res.OutputTokens,
		CacheCreationInputTokens: res.CacheWrite, CacheReadInputTokens: res.CacheRead}
	if got != sum {
		t.Errorf("Result usage %+v, server reported in sum %+v", got, sum)
	}
	if want := sum.CostUSD(fakeclaude.PriceSonnet45); !scripted.CostEqual(res.CostUSD, want) {
		t.Errorf("Result.CostUSD = %v, want %v", res.CostUSD, want)
	}
	if _, ok := srv.UsageBySession()[res.SessionID]; !ok || res.SessionID == "" {
		t.Errorf("Result.SessionID %q is not the session the server saw (%v)", res.SessionID, srv.UsageBySession())
	}
}
