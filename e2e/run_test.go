//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/fakeclaude"
	"github.com/implloop/implloop/internal/scripted"
)

// The plan of TestRunPlanClaude: three tasks, each asking for a file in a
// form the scripted server (fakeclaude.WriteTask) understands: a "WRITE
// path text" line, or a fenced block with path=... (as the builtin agent
// reads it). Task 3 rewrites the committed README, so Claude Code must Read
// it before it may Write it.
const e2ePlan = "# Plan: e2e\n\n" +
	"Three small files, written by Claude Code through its own Write tool.\n\n" +
	"### Task 1: First file\n\n" +
	"WRITE out/f1.txt hello\n\n" +
	"```verify\ntest \"$(cat out/f1.txt)\" = hello\n```\n\n" +
	"### Task 2: Second file\n\n" +
	"```text path=out/f2.txt\nsecond file\nline two\n```\n\n" +
	"```verify\ntest -s out/f2.txt\n```\n\n" +
	"### Task 3: Update the README\n\n" +
	"WRITE README.md # demo, updated by task 3\n\n" +
	"```verify\ngrep -q 'updated by task 3' README.md\n```\n"

// TestRunPlanClaude is the `make e2e` test of the run loop: a 3-task plan
// run with `implloop run plan.md --agent claude` through the built binary
// and the real Claude Code CLI. It asserts DONE, the files written by
// Claude Code's Write tool, and that the report's tokens and cost equal the
// sums of what the server reported per call.
func TestRunPlanClaude(t *testing.T) {
	implloop := buildImplloop(t)
	bin := fakeclaude.CLI(t)

	repo := newPlanRepo(t, e2ePlan)
	home := t.TempDir()

	rec, h := newRecorder(fakeclaude.WriteTask)
	srv := fakeclaude.New(t, h)

	// A healthy run takes seconds; a hung one must not eat the e2e budget.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := groupCommand(ctx, implloop, "run", "plan.md", "--agent", "claude", "--model", fakeclaude.Model)
	cmd.Dir, cmd.Env = repo, runEnv(srv.Environ(home), onPath(t, "claude", bin))
	stdout, stderr := runLogged(t, cmd, "", srv.Summary)
	if !strings.Contains(string(stdout)+string(stderr), "DONE") {
		t.Errorf("the output does not say DONE")
	}
	checkWrites(t, rec.all(), map[string]string{
		filepath.Join(repo, "out", "f1.txt"): "hello\n",
		filepath.Join(repo, "out", "f2.txt"): "second file\nline two\n",
		filepath.Join(repo, "README.md"):     "# demo, updated by task 3\n",
	})

	// One Claude Code session per task, in task order.
	sessions := sessionsInOrder(srv.Calls())
	if len(sessions) != 3 {
		t.Fatalf("Claude Code ran %d sessions, want 3 (one per task): %v", len(sessions), sessions)
	}
	bySession := srv.UsageBySession()
	var wantCost float64
	for _, s := range sessions {
		wantCost += bySession[s].CostUSD(fakeclaude.PriceSonnet45)
	}
	sum := srv.Usage()

	rep, raw := readReport(t, repo)
	if rep.Outcome.Verdict != "DONE" || rep.ExitCode != 0 {
		t.Errorf("report verdict %q exit %d, want DONE 0", rep.Outcome.Verdict, rep.ExitCode)
	}
	if rep.Totals.Live.Units != 3 || rep.Totals.Live.usage() != sum {
		t.Errorf("report totals %+v, want 3 live units and the server's sums %+v", rep.Totals.Live, sum)
	}
	if !scripted.CostEqual(rep.Totals.Live.CostUSD, wantCost) {
		t.Errorf("report cost %v, want %v (Claude Code's per-call cost of the server's usage, summed)", rep.Totals.Live.CostUSD, wantCost)
	}
	if rep.Totals.Saved != (reportFigures{}) {
		t.Errorf("a fresh run reports replayed figures %+v", rep.Totals.Saved)
	}
	if len(rep.Tasks) != 3 {
		t.Fatalf("report has %d tasks, want 3:\n%s", len(rep.Tasks), raw)
	}
	for i, task := range rep.Tasks {
		u := bySession[sessions[i]]
		if task.ID != fmt.Sprint(i+1) || task.Status != "done" || task.Source != "live" || task.Attempts != 1 {
			t.Errorf("task %d: %s %s %s after %d attempt(s), want done live after 1", i+1, task.ID, task.Status, task.Source, task.Attempts)
		}
		if task.Live.Units != 1 || task.Live.usage() != u {
			t.Errorf("task %d: live %+v, its Claude Code session reported %+v", i+1, task.Live, u)
		}
		if want := u.CostUSD(fakeclaude.PriceSonnet45); !scripted.CostEqual(task.Live.CostUSD, want) {
			t.Errorf("task %d: cost %v, want %v", i+1, task.Live.CostUSD, want)
		}
	}
	if t.Failed() {
		t.Logf("report.json: %s", raw)
	}
}

// runEnv is env with pathDir at the front of PATH and a git identity, for
// `implloop run`.
func runEnv(env []string, pathDir string) []string {
	env = append([]string(nil), env...)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + pathDir + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	return append(env,
		"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid")
}

// sessionsInOrder lists the Claude Code session ids of the Messages calls
// in the order of their first call.
func sessionsInOrder(calls []fakeclaude.Call) []string {
	first := map[string]int{}
	for _, c := range calls {
		if _, ok := first[c.SessionID]; c.Messages && !ok {
			first[c.SessionID] = c.Seq
		}
	}
	out := make([]string, 0, len(first))
	for s := range first {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return first[out[i]] < first[out[j]] })
	return out
}

// readReport reads the one .git/implloop/runs/*/report.json of repo.
func readReport(t *testing.T, repo string) (runReport, []byte) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(repo, ".git", "implloop", "runs", "*", "report.json"))
	if len(matches) != 1 {
		t.Fatalf("want one .git/implloop/runs/*/report.json, found %v", matches)
	}
	raw, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep runReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("report.json: %v\n%s", err, raw)
	}
	return rep, raw
}

// runReport is the part of .git/implloop/runs/<id>/report.json the test reads.
type runReport struct {
	Outcome struct {
		Verdict string `json:"verdict"`
	} `json:"outcome"`
	ExitCode int `json:"exit_code"`
	Tasks    []struct {
		ID       string        `json:"id"`
		Status   string        `json:"status"`
		Source   string        `json:"source"`
		Attempts int           `json:"attempts"`
		Live     reportFigures `json:"live"`
	} `json:"tasks"`
	Totals struct {
		Live  reportFigures `json:"live"`
		Saved reportFigures `json:"saved"`
	} `json:"totals"`
}

// reportFigures are a report's token and cost figures (live: spent by this
// run; saved: replayed from the journal).
type reportFigures struct {
	Units      int     `json:"units"`
	TokensIn   int64   `json:"tokens_in"`
	TokensOut  int64   `json:"tokens_out"`
	CacheRead  int64   `json:"cache_read"`
	CacheWrite int64   `json:"cache_write"`
	CostUSD    float64 `json:"cost_usd"`
}

func (f reportFigures) usage() fakeclaude.Usage {
	return fakeclaude.Usage{InputTokens: f.TokensIn, OutputTokens: f.TokensOut,
		CacheCreationInputTokens: f.CacheWrite, CacheReadInputTokens: f.CacheRead}
}
