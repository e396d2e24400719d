//go:build e2e

// Package e2e drives real agent CLIs against scripted model API servers on
// loopback: Claude Code against fakeclaude (the Messages API) and the
// OpenAI Codex CLI against fakeopenai (the Responses API), each directly,
// through the agent package's preset, and through `implloop run`. Run it
// with `make e2e` (which installs the pinned CLIs first) or
// `go test -tags e2e -count=1 ./e2e/...`.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/fakeclaude"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/internal/scripted"
)

// claudeResult is the part of `claude -p --output-format json` a test reads.
type claudeResult struct {
	Type         string  `json:"type"`
	Subtype      string  `json:"subtype"`
	IsError      bool    `json:"is_error"`
	Result       string  `json:"result"`
	SessionID    string  `json:"session_id"`
	NumTurns     int     `json:"num_turns"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	Usage        struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

func (r claudeResult) usage() fakeclaude.Usage {
	return fakeclaude.Usage{
		InputTokens:              r.Usage.InputTokens,
		OutputTokens:             r.Usage.OutputTokens,
		CacheCreationInputTokens: r.Usage.CacheCreationInputTokens,
		CacheReadInputTokens:     r.Usage.CacheReadInputTokens,
	}
}

// newRepo makes a git repository in a temp dir with one commit holding
// README.md, and returns its path with symlinks resolved (Claude Code
// reports the resolved path as its working directory).
func newRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := gittest.At(t, dir)
	r.Git("init", "-q", "-b", "main")
	r.Write("README.md", "# demo\n")
	r.Git("add", "README.md")
	r.Git("commit", "-q", "-m", "initial")
	return dir
}

// newPlanRepo is newRepo with plan committed as plan.md.
func newPlanRepo(t *testing.T, plan string) string {
	t.Helper()
	repo := newRepo(t)
	r := gittest.At(t, repo)
	r.Write("plan.md", plan)
	r.Git("add", "plan.md")
	r.Git("commit", "-q", "-m", "plan")
	return repo
}

// groupCommand is exec.CommandContext in a process group of its own, so
// that a timeout kills the command and everything it started, and Wait
// returns even when a grandchild still holds the output pipes.
func groupCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runLogged runs cmd (from groupCommand) with stdin, logs how long it took,
// its output and the server's traffic, and fails the test unless it exited
// 0. It returns what the command wrote.
func runLogged(t *testing.T, cmd *exec.Cmd, stdin string, traffic func() string) (stdout, stderr []byte) {
	t.Helper()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	began := time.Now()
	err := cmd.Run()
	what := strings.Join(append([]string{filepath.Base(cmd.Path)}, cmd.Args[1:min(2, len(cmd.Args))]...), " ")
	t.Logf("%s took %v\nstdout:\n%s\nstderr:\n%s", what, time.Since(began).Round(time.Millisecond), out.Bytes(), errb.Bytes())
	t.Logf("server traffic:\n%s", traffic())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return out.Bytes(), errb.Bytes()
}

// checkWrites asserts that every Write the server asked for came back as a
// successful tool_result of Claude Code's own Write tool, and that the
// files hold what was asked: the file on disk is Claude Code's doing.
func checkWrites(t *testing.T, reqs []*fakeclaude.Request, want map[string]string) {
	t.Helper()
	results := map[string]fakeclaude.Block{}
	for _, r := range reqs {
		for _, b := range r.ToolResults() {
			results[b.ToolUseID] = b
		}
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		for _, u := range r.ToolUses() {
			if u.Name != "Write" || seen[u.ID] {
				continue
			}
			seen[u.ID] = true
			var in struct {
				FilePath string `json:"file_path"`
			}
			if err := json.Unmarshal(u.Input, &in); err != nil {
				t.Fatalf("Write input %s: %v", u.Input, err)
			}
			res, ok := results[u.ID]
			switch {
			case !ok:
				t.Errorf("Write %s: no tool_result came back", in.FilePath)
			case res.IsError || !strings.Contains(res.Text, in.FilePath):
				t.Errorf("Write %s: tool_result is_error=%v %q", in.FilePath, res.IsError, res.Text)
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("Claude Code made %d Write calls, want %d", len(seen), len(want))
	}
	for path, content := range want {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
		} else if string(got) != content {
			t.Errorf("%s holds %q, want %q", path, got, content)
		}
	}
}

// recorder keeps every agent-turn request the server saw.
type recorder struct {
	ch chan *fakeclaude.Request
}

func newRecorder(h fakeclaude.Handler) (*recorder, fakeclaude.Handler) {
	rec := &recorder{ch: make(chan *fakeclaude.Request, 1000)}
	return rec, func(r *fakeclaude.Request) fakeclaude.Response {
		rec.ch <- r
		return h(r)
	}
}

func (rec *recorder) all() []*fakeclaude.Request {
	var out []*fakeclaude.Request
	for {
		select {
		case r := <-rec.ch:
			out = append(out, r)
		default:
			return out
		}
	}
}

// TestClaudeDirect runs `claude -p` itself against the scripted server: the
// server asks for a Write of a file inside the repository, Claude Code
// writes it with its own tool under acceptEdits, and the usage and cost it
// prints are the sums of what the server reported per call.
func TestClaudeDirect(t *testing.T) {
	bin := fakeclaude.CLI(t)
	repo := newRepo(t)
	home := t.TempDir()

	want := filepath.Join(repo, "out", "hello.txt")
	rec, h := newRecorder(fakeclaude.Turns(
		func(r *fakeclaude.Request) fakeclaude.Response {
			if r.WorkingDir() != repo {
				t.Errorf("working directory in the request = %q, want %q", r.WorkingDir(), repo)
			}
			if !strings.Contains(r.Prompt(), "Create out/hello.txt") {
				t.Errorf("prompt = %q", r.Prompt())
			}
			return fakeclaude.UseTools(fakeclaude.Write(filepath.Join(r.WorkingDir(), "out", "hello.txt"), "hello from claude\n"))
		},
		func(r *fakeclaude.Request) fakeclaude.Response { return fakeclaude.Reply("done") },
	))
	srv := fakeclaude.New(t, h)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := groupCommand(ctx, bin, "-p", "--output-format", "json",
		"--permission-mode", "acceptEdits", "--model", fakeclaude.Model)
	cmd.Dir, cmd.Env = repo, srv.Environ(home)
	stdout, _ := runLogged(t, cmd, "Create out/hello.txt holding one line: hello from claude\n", srv.Summary)

	var res claudeResult
	if err := json.Unmarshal(stdout, &res); err != nil {
		t.Fatalf("stdout is not one JSON result: %v", err)
	}
	if res.Type != "result" || res.Subtype != "success" || res.IsError || res.Result != "done" || res.NumTurns != 2 {
		t.Errorf("result = %+v, want a success with result \"done\" after 2 turns", res)
	}
	checkWrites(t, rec.all(), map[string]string{want: "hello from claude\n"})

	sum := srv.Usage()
	if got := res.usage(); got != sum {
		t.Errorf("printed usage %+v, server reported in sum %+v", got, sum)
	}
	if wantCost := sum.CostUSD(fakeclaude.PriceSonnet45); !scripted.CostEqual(res.TotalCostUSD, wantCost) {
		t.Errorf("total_cost_usd = %v, want %v (server usage at the Sonnet 4.5 price)", res.TotalCostUSD, wantCost)
	}
	if bySession := srv.UsageBySession(); len(bySession) != 1 || bySession[res.SessionID] != sum {
		t.Errorf("usage by session %+v, want all of it under session %s", bySession, res.SessionID)
	}
	for _, c := range srv.Calls() {
		if !c.Messages || !c.Stream || c.Query != "beta=true" {
			t.Errorf("call #%d %s %s?%s stream=%v: want only streaming POST /v1/messages?beta=true", c.Seq, c.Method, c.Path, c.Query, c.Stream)
		}
	}
}

// clearAgentEnv unsets the calling process's variables whose names start
// with one of prefixes (ANTHROPIC_, CLAUDE; OPENAI_, CODEX_) for the test,
// so that only the server's environment reaches the CLI.
func clearAgentEnv(t *testing.T, prefixes ...string) {
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				t.Setenv(name, val) // restores it when the test ends
				os.Unsetenv(name)
				break
			}
		}
	}
}

// onPath makes a temp dir holding a symlink named name to bin, for the
// front of PATH: how implloop's presets find the CLI under test.
func onPath(t *testing.T, name, bin string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestClaudeTasks runs the tasks of e2ePlan one `claude -p` each, with
// prompts shaped like implloop's (instructions, then a fenced JSON context
// holding the task), answered by fakeclaude.WriteTask: what
// TestRunPlanClaude does through implloop, minus implloop. Task 3 rewrites
// a committed file, so Claude Code must Read it first. Each process's
// printed usage and cost equal the sums over its own calls.
func TestClaudeTasks(t *testing.T) {
	bin := fakeclaude.CLI(t)
	repo := newRepo(t)
	home := t.TempDir()
	rec, h := newRecorder(fakeclaude.WriteTask)
	srv := fakeclaude.New(t, h)

	tasks := strings.Split(e2ePlan, "### Task ")[1:]
	var total fakeclaude.Usage
	var totalCost float64
	for i, text := range tasks {
		text = "### Task " + text
		ctxJSON, err := json.Marshal(map[string]any{
			"task":    map[string]any{"id": fmt.Sprint(i + 1), "title": "t", "text": text, "index": i + 1, "count": len(tasks)},
			"attempt": 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		prompt := "Carry out the task in the attached context.\n\n````json\n" + string(ctxJSON) + "\n````\n"
		before := len(srv.Calls())

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := groupCommand(ctx, bin, "-p", "--output-format", "json", "--permission-mode", "acceptEdits", "--model", fakeclaude.Model)
		cmd.Dir = repo
		cmd.Env = srv.Environ(home)
		cmd.Stdin = strings.NewReader(prompt)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		began := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("task %d: claude -p: %v\n%s\n%s\n%s", i+1, err, stdout.Bytes(), stderr.Bytes(), srv.Summary())
		}
		var res claudeResult
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("task %d: stdout: %v\n%s", i+1, err, stdout.Bytes())
		}
		calls := srv.Calls()[before:]
		mine := fakeclaude.SumUsage(calls)
		t.Logf("task %d: %d calls, %v, printed usage %+v cost %v", i+1, len(calls), time.Since(began).Round(time.Millisecond), res.usage(), res.TotalCostUSD)
		if res.IsError || res.Result != "done" {
			t.Errorf("task %d: result %+v", i+1, res)
		}
		if res.usage() != mine {
			t.Errorf("task %d: printed usage %+v, server reported in sum %+v", i+1, res.usage(), mine)
		}
		if want := mine.CostUSD(fakeclaude.PriceSonnet45); !scripted.CostEqual(res.TotalCostUSD, want) {
			t.Errorf("task %d: total_cost_usd %v, want %v", i+1, res.TotalCostUSD, want)
		}
		total = total.Add(res.usage())
		totalCost += res.TotalCostUSD
	}
	t.Logf("server traffic:\n%s", srv.Summary())
	checkWrites(t, rec.all(), map[string]string{
		filepath.Join(repo, "out", "f1.txt"): "hello\n",
		filepath.Join(repo, "out", "f2.txt"): "second file\nline two\n",
		filepath.Join(repo, "README.md"):     "# demo, updated by task 3\n",
	})
	if total != srv.Usage() {
		t.Errorf("printed usage summed over tasks %+v, server total %+v", total, srv.Usage())
	}
	if want := srv.Usage().CostUSD(fakeclaude.PriceSonnet45); !scripted.CostEqual(totalCost, want) {
		t.Errorf("printed cost summed over tasks %v, want %v", totalCost, want)
	}
	var reads int
	for _, c := range srv.Calls() {
		for _, x := range c.Content {
			if x == "tool_use:Read" {
				reads++
			}
		}
	}
	if reads != 1 {
		t.Errorf("%d Read calls, want 1 (task 3 reads README.md before rewriting it)", reads)
	}
}
