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

// newClaudePreset builds the agent package's claude preset as implloop
// does for `--agent claude`: it finds `claude` on PATH.
func newClaudePreset(t *testing.T) agent.Agent {
	t.Helper()
	a, err := agent.New("claude", agent.Options{})
	if err != nil {
		t.Fatalf("agent.New(\"claude\"): %v", err)
	}
	return a
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

	a := newClaudePreset(t)
	if a.Name() != "claude" {
		t.Errorf("Name() = %q", a.Name())
	}
	if err := a.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	prompt := "Carry out the task in the attached context.\n\n" +
		"```json\n" + `{"task":{"id":"1","title":"First file","text":"### Task 1: First file\n\nWRITE out/f1.txt hello\n","index":1,"count":1},"attempt":1}` + "\n```\n"
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	res, err := a.Run(ctx, agent.Request{
		Prompt: []byte(prompt), Dir: repo, Env: srv.Env(home), Model: fakeclaude.Model,
		Timeout: 2 * time.Minute, Stdout: &stdout, Stderr: &stderr,
	})
	t.Logf("preset run took %v; result %+v\nstdout: %s\nstderr: %s", time.Since(began).Round(time.Millisecond), res, stdout.Bytes(), stderr.Bytes())
	t.Logf("server traffic:\n%s", srv.Summary())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
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
