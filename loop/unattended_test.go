package loop

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/report"
)

// fakeClock is a run's clock and its sleep: a wait for a limit moves the
// clock instead of taking real minutes.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond) // time passes between two looks
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept = append(c.slept, d)
	return ctx.Err()
}

func (c *fakeClock) sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// runClocked runs the loop on repo with clock c, collecting its events.
func runClocked(t *testing.T, repo string, s Settings, parent string, c *fakeClock) (*Outcome, []Event) {
	t.Helper()
	var mu sync.Mutex
	var evs []Event
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: parent, Now: c.now, Sleep: c.sleep,
		Observer: ObserverFunc(func(e Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() })})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkJournal(t, repo)
	return out, evs
}

func eventsOf(evs []Event, typ string) []Event {
	var out []Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// limitedAgent is an exec agent whose first `limited` calls exit 75 with
// stderr (say, "retry-after: 90"), and which then writes the task's file
// and reports cost, as a result line.
func limitedAgent(t *testing.T, limited int, stderr, result string) (string, string) {
	return fakeAgent(t, `n=$(cat "$LOG/calls" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$LOG/calls"
if [ "$n" -le `+itoa(limited)+` ]; then printf '%s\n' `+shellQuote(stderr)+` >&2; exit 75; fi
echo "task $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"
printf '%s\n' `+shellQuote(result)+``)
}

// A usage limit is not a failure: an exec agent's exit 75 with a
// retry-after is waited out, then the same unit is called again; no
// attempt, no gate, no second unit row, nothing in the identity.
func TestLimitWaitedOut(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, logDir := limitedAgent(t, 1, "retry-after: 90", `{"type":"result","result":"ok","total_cost_usd":0.25}`)
	s := settingsFor(agentPath)
	s.Verify = `test -s "out-$IMPLLOOP_TASK_ID.txt"`
	c := newFakeClock()
	out, evs := runClocked(t, repo, s, "", c)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s, want DONE", out.Verdict)
	}
	if got := c.sleeps(); len(got) != 1 || got[0] != 90*time.Second {
		t.Errorf("slept %v, want one wait of 90s", got)
	}
	if readFile(t, filepath.Join(logDir, "calls")) != "3\n" {
		t.Errorf("agent calls: %s, want 3 (task 1 twice, task 2 once)", readFile(t, filepath.Join(logDir, "calls")))
	}
	lim, wait := eventsOf(evs, EvLimit), eventsOf(evs, EvWait)
	if len(lim) != 1 || lim[0].Task != "1" || lim[0].Status != "tempfail" || len(wait) != 1 || wait[0].Millis != 90000 {
		t.Errorf("limit events %+v, wait events %+v", lim, wait)
	}
	j := openJournal(t, repo)
	units, err := j.Units(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 2 || units[0].Attempt != 1 || units[0].Status != cache.UnitCompleted {
		t.Fatalf("units %+v, want one completed attempt-1 unit per task", units)
	}
	// The limited call's figures (none reported) and the call's own.
	if units[0].CostUSD != 0.25 {
		t.Errorf("task 1's unit cost %v, want 0.25", units[0].CostUSD)
	}
	if rows := taskRows(t, j, out.RunID); rows["1"].Attempts != 1 {
		t.Errorf("task 1: %d attempts, want 1", rows["1"].Attempts)
	}
	gates, _ := j.Gates(out.RunID, "1")
	if len(gates) != 1 || !gates[0].Passed {
		t.Errorf("task 1's gates %+v, want one that passed", gates)
	}
	// The identity is the one a run without the limit has.
	pre, err := identity.Parse(units[0].Preimage)
	if err != nil || pre.Agent != "exec" || pre.Attempt != 1 {
		t.Errorf("preimage %+v (%v)", pre, err)
	}
}

// Without a retry-after the wait backs off from a minute, doubling.
func TestLimitBackoff(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, _ := limitedAgent(t, 3, "busy", `{"type":"result","result":"ok"}`)
	c := newFakeClock()
	out, _ := runClocked(t, repo, settingsFor(agentPath), "", c)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}
	if got := c.sleeps(); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("slept %v, want %v", got, want)
	}
	if got := limitWaitOf(t, 12); got != time.Hour {
		t.Errorf("the 13th backoff is %v, want the 1h cap", got)
	}
}

func limitWaitOf(t *testing.T, n int) time.Duration {
	d, known := limitWait(&agent.Limit{Kind: "tempfail"}, time.Now(), n)
	if known {
		t.Fatal("known")
	}
	return d
}

// --max-wait: a limit that would outlast it stops the run, PARTIAL, with
// BLOCKED.md saying when it lifts; the resume (after it) finishes the
// task, live, its stopped call done again.
func TestLimitPastMaxWait(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, logDir := limitedAgent(t, 1, "retry-after: 7200", `{"type":"result","result":"ok"}`)
	s := settingsFor(agentPath)
	s.MaxWait = Duration(time.Hour)
	c := newFakeClock()
	out, evs := runClocked(t, repo, s, "", c)
	if out.Verdict != "PARTIAL" || !out.Blocked || out.Stopped == "" {
		t.Fatalf("verdict %s blocked %v stopped %q, want PARTIAL with BLOCKED.md", out.Verdict, out.Blocked, out.Stopped)
	}
	if len(c.sleeps()) != 0 {
		t.Errorf("slept %v, want no wait", c.sleeps())
	}
	doc := readFile(t, filepath.Join(repo, BlockedFile))
	for _, want := range []string{"STOPPED", "--max-wait", "After 2026-12-01 22:00:", "implloop resume --run " + out.RunID, "no attempt was counted"} {
		if !strings.Contains(doc, want) {
			t.Errorf("BLOCKED.md lacks %q:\n%s", want, doc)
		}
	}
	if st := eventsOf(evs, EvStopped); len(st) != 1 || st[0].Status != "max_wait" || st[0].Until.IsZero() {
		t.Errorf("stopped events %+v", st)
	}
	j := openJournal(t, repo)
	rows := taskRows(t, j, out.RunID)
	if rows["1"].Status != cache.TaskPending || rows["1"].Attempts != 0 || rows["2"].Status != cache.TaskPending {
		t.Errorf("rows %+v, want both pending, no attempt", rows)
	}
	units, _ := j.Units(out.RunID)
	if len(units) != 1 || units[0].Status != cache.UnitInterrupted || !strings.HasPrefix(units[0].Error, "stopped: ") {
		t.Errorf("units %+v, want the stopped call", units)
	}
	rep, err := report.Build(j, out.RunID)
	if err != nil || rep.Outcome.Verdict != report.Partial {
		t.Errorf("report verdict %v (%v), want PARTIAL", rep.Outcome.Verdict, err)
	}

	// After the reset: the resume runs task 1 live, says why.
	os.Remove(filepath.Join(repo, BlockedFile))
	out2, evs2 := runClocked(t, repo, s, out.RunID, c)
	if out2.Verdict != "DONE" {
		t.Fatalf("resume: %s", out2.Verdict)
	}
	started := eventsOf(evs2, EvUnitStarted)
	if len(started) != 2 || started[0].Task != "1" || !strings.Contains(strings.Join(started[0].Reasons, ";"), "stopped before it completed") {
		t.Errorf("resume's live units %+v", started)
	}
	if readFile(t, filepath.Join(logDir, "calls")) != "3\n" {
		t.Errorf("calls %s", readFile(t, filepath.Join(logDir, "calls")))
	}
}

// --max-wait 0: the run never waits.
func TestLimitNoWait(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, _ := limitedAgent(t, 1, "retry-after: 1", `{"type":"result","result":"ok"}`)
	s := settingsFor(agentPath)
	s.MaxWait = 0
	c := newFakeClock()
	out, _ := runClocked(t, repo, s, "", c)
	if out.Verdict != "PARTIAL" || !strings.Contains(out.Stopped, "--max-wait 0") {
		t.Fatalf("verdict %s stopped %q", out.Verdict, out.Stopped)
	}
}

// A fallback takes the call at once: no wait; its identity is its own
// (agent builtin), and the tasks after go to it too while the limit
// lasts. A resume replays the fallback's work.
func TestFallbackTakesTheCall(t *testing.T) {
	plan := "# Plan\n\n### Task 1: One\n\n```text path=one.txt\none\n```\n\n### Task 2: Two\n\n```text path=two.txt\ntwo\n```\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, logDir := limitedAgent(t, 99, "retry-after: 3600", `{"type":"result","result":"ok"}`)
	s := settingsFor(agentPath)
	s.Fallbacks = []string{"builtin"}
	c := newFakeClock()
	out, evs := runClocked(t, repo, s, "", c)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	if len(c.sleeps()) != 0 {
		t.Errorf("slept %v, want none", c.sleeps())
	}
	if readFile(t, filepath.Join(logDir, "calls")) != "1\n" {
		t.Errorf("the limited agent was called %s times, want 1 (its limit lasts an hour)", readFile(t, filepath.Join(logDir, "calls")))
	}
	if readFile(t, filepath.Join(repo, "one.txt")) != "one\n" || readFile(t, filepath.Join(repo, "two.txt")) != "two\n" {
		t.Errorf("the fallback's work is not in the tree")
	}
	if fb := eventsOf(evs, EvFallback); len(fb) != 1 || fb[0].Agent != "builtin" || fb[0].Task != "1" {
		t.Errorf("fallback events %+v", fb)
	}
	j := openJournal(t, repo)
	units, _ := j.Units(out.RunID)
	for _, u := range units {
		pre, err := identity.Parse(u.Preimage)
		if err != nil || pre.Agent != "builtin" || len(pre.AgentCmd) != 0 || u.Status != cache.UnitCompleted {
			t.Errorf("unit %s: agent %q cmd %q status %s (%v), want builtin's completed call", u.UnitID, pre.Agent, pre.AgentCmd, u.Status, err)
		}
	}
	rep, err := report.Build(j, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tasks[0].Agent != "builtin" {
		t.Errorf("report: task 1's agent %q, want builtin", rep.Tasks[0].Agent)
	}

	// A resume replays the fallback's calls: they stand for the units.
	out2, evs2 := runResumeFull(t, repo, s, out.RunID, c)
	if out2.Verdict != "DONE" || len(eventsOf(evs2, EvUnitStarted)) != 0 || len(eventsOf(evs2, EvUnitReplayed)) != 2 {
		t.Errorf("resume: %s, live %v", out2.Verdict, eventsOf(evs2, EvUnitStarted))
	}
}

func runResumeFull(t *testing.T, repo string, s Settings, parent string, c *fakeClock) (*Outcome, []Event) {
	t.Helper()
	var evs []Event
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: parent, Now: c.now, Sleep: c.sleep, Full: true,
		Observer: ObserverFunc(func(e Event) { evs = append(evs, e) })})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	checkJournal(t, repo)
	return out, evs
}

// costAgent is an exec agent that writes the task's file and reports
// what result says, every call.
func costAgent(t *testing.T, result string) (string, string) {
	return fakeAgent(t, `echo "task $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"
n=$(cat "$LOG/calls" 2>/dev/null || echo 0); echo $((n+1)) > "$LOG/calls"
printf '%s\n' `+shellQuote(result))
}

// --max-cost: the run stops at the task boundary where its live calls
// reached the cap, PARTIAL; BLOCKED.md names cap, spend and the command;
// the resume with a higher cap replays the paid tasks (which do not
// count) and runs the rest.
func TestMaxCost(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(4)})
	agentPath, logDir := costAgent(t, `{"type":"result","result":"ok","total_cost_usd":0.6}`)
	s := settingsFor(agentPath)
	s.MaxCost = 1
	c := newFakeClock()
	out, evs := runClocked(t, repo, s, "", c)
	if out.Verdict != "PARTIAL" || !out.Blocked {
		t.Fatalf("verdict %s blocked %v", out.Verdict, out.Blocked)
	}
	doc := readFile(t, filepath.Join(repo, BlockedFile))
	for _, want := range []string{"--max-cost", "$1.2000", "$1.0000", "implloop resume --run " + out.RunID + " --max-cost 2", "2 of 4 task(s) done"} {
		if !strings.Contains(doc, want) {
			t.Errorf("BLOCKED.md lacks %q:\n%s", want, doc)
		}
	}
	if st := eventsOf(evs, EvStopped); len(st) != 1 || st[0].Status != "max_cost" || st[0].Task != "2" {
		t.Errorf("stopped %+v", st)
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	if rows["2"].Status != cache.TaskDone || rows["3"].Status != cache.TaskPending || rows["4"].Status != cache.TaskPending {
		t.Errorf("rows %+v", rows)
	}

	os.Remove(filepath.Join(repo, BlockedFile))
	s.MaxCost = 2
	out2, evs2 := runClocked(t, repo, s, out.RunID, c)
	if out2.Verdict != "DONE" {
		t.Fatalf("resume %s (%s)", out2.Verdict, out2.Stopped)
	}
	if n := len(eventsOf(evs2, EvUnitReplayed)); n != 2 {
		t.Errorf("%d replayed, want 2", n)
	}
	if got := readFile(t, filepath.Join(logDir, "calls")); got != "4\n" {
		t.Errorf("agent calls %s, want 4", got)
	}
}

// --max-tokens, for agents that report no cost (subscriptions).
func TestMaxTokens(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
	agentPath, _ := costAgent(t, `{"type":"result","result":"ok","usage":{"input_tokens":600,"output_tokens":100}}`)
	s := settingsFor(agentPath)
	s.MaxTokens = 700
	out, _ := runClocked(t, repo, s, "", newFakeClock())
	if out.Verdict != "PARTIAL" || !strings.Contains(out.Stopped, "--max-tokens is 700") {
		t.Fatalf("verdict %s stopped %q", out.Verdict, out.Stopped)
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	if rows["1"].Status != cache.TaskDone || rows["2"].Status != cache.TaskPending {
		t.Errorf("rows %+v", rows)
	}
	if !strings.Contains(readFile(t, filepath.Join(repo, BlockedFile)), "--max-tokens 1400") {
		t.Errorf("BLOCKED.md: %s", readFile(t, filepath.Join(repo, BlockedFile)))
	}
}

// --max-task-cost: a task that reached its cap starts no further attempt;
// left undone it stops the run there; done, it only gets a concern.
func TestMaxTaskCost(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, _ := costAgent(t, `{"type":"result","result":"ok","total_cost_usd":0.6}`)
	s := settingsFor(agentPath)
	s.MaxTaskCost = 1
	s.MaxAttempts = 5
	s.Verify = `[ "$IMPLLOOP_TASK_ID" != 1 ] && exit 0; echo "not yet"; exit 1`
	out, _ := runClocked(t, repo, s, "", newFakeClock())
	if out.Verdict != "PARTIAL" || !strings.Contains(out.Stopped, "--max-task-cost") {
		t.Fatalf("verdict %s stopped %q", out.Verdict, out.Stopped)
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	if rows["1"].Attempts != 2 || rows["1"].Status != cache.TaskPending || rows["2"].Status != cache.TaskPending {
		t.Errorf("rows %+v, want task 1 stopped after 2 attempts", rows)
	}
	if !strings.Contains(readFile(t, filepath.Join(repo, BlockedFile)), "STOPPED: task 1 reached --max-task-cost") {
		t.Errorf("BLOCKED.md: %s", readFile(t, filepath.Join(repo, BlockedFile)))
	}
}

// Hostile figures: a cost of 1e308 twice, NaN, 1e999, negative tokens.
// Each is refused with a concern; totals stay finite and non-negative,
// and the report's JSON is written.
func TestHostileFigures(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(5)})
	agentPath, _ := fakeAgent(t, `echo "task $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"
case $IMPLLOOP_TASK_ID in
1|2) echo '{"type":"result","result":"ok","total_cost_usd":1e308}' ;;
3) echo '{"type":"result","result":"ok","total_cost_usd":"NaN"}' ;;
4) echo '{"type":"result","result":"ok","total_cost_usd":1e999,"usage":{"input_tokens":-50,"output_tokens":9223372036854775807}}' ;;
5) echo '{"type":"result","result":"ok","total_cost_usd":-3,"usage":{"input_tokens":10,"output_tokens":1e40}}' ;;
esac`)
	s := settingsFor(agentPath)
	s.MaxCost = 100
	out, evs := runClocked(t, repo, s, "", newFakeClock())
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s (%s)", out.Verdict, out.Stopped)
	}
	if n := len(eventsOf(evs, EvConcern)); n < 7 {
		t.Errorf("%d concerns, want one per refused figure (7)", n)
	}
	j := openJournal(t, repo)
	rep, err := report.Build(j, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	l := rep.Totals.Live
	if l.CostUSD != 0 || l.TokensIn != 10 || l.TokensOut != 0 || math.IsNaN(l.CostUSD) {
		t.Errorf("totals %+v, want only the sane figure (10 tokens in)", l)
	}
	if !json.Valid(report.JSON(rep)) {
		t.Errorf("report JSON invalid")
	}
	if len(rep.Tasks[0].Concerns) == 0 || !strings.Contains(rep.Tasks[0].Concerns[0], "refused") {
		t.Errorf("task 1 concerns %q", rep.Tasks[0].Concerns)
	}
}

// --notify gets the documented JSON on stdin: at a block and at the end.
func TestNotify(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, _ := costAgent(t, `{"type":"result","result":"ok"}`)
	s := settingsFor(agentPath)
	s.Verify = `[ "$IMPLLOOP_TASK_ID" != 2 ]`
	s.MaxAttempts = 1
	got := filepath.Join(t.TempDir(), "notified")
	s.Notify = `cat >> '` + got + `'; echo "$IMPLLOOP_EVENT" >> '` + got + `.types'`
	out, _ := runClocked(t, repo, s, "", newFakeClock())
	if out.Verdict != "PARTIAL" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, got)), "\n")
	if len(lines) != 2 {
		t.Fatalf("notified %d times, want 2: %q", len(lines), lines)
	}
	var blocked, finished Event
	if json.Unmarshal([]byte(lines[0]), &blocked) != nil || json.Unmarshal([]byte(lines[1]), &finished) != nil {
		t.Fatalf("not JSON: %q", lines)
	}
	if blocked.Type != EvBlocked || blocked.Task != "2" || blocked.RunID != out.RunID ||
		finished.Type != EvRunFinished || finished.Verdict != "PARTIAL" || finished.Message == "" {
		t.Errorf("notified %+v then %+v", blocked, finished)
	}
	if readFile(t, got+".types") != "blocked\nrun_finished\n" {
		t.Errorf("IMPLLOOP_EVENT: %q", readFile(t, got+".types"))
	}
}

// A notification that fails is a warning, never the run's failure.
func TestNotifyFails(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, _ := costAgent(t, `{"type":"result","result":"ok"}`)
	s := settingsFor(agentPath)
	s.Notify = "echo no network >&2; exit 7"
	out, evs := runClocked(t, repo, s, "", newFakeClock())
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	w := eventsOf(evs, EvWarning)
	if len(w) != 1 || !strings.Contains(w[0].Message, "exit status 7: no network") {
		t.Errorf("warnings %+v", w)
	}
}

// The heartbeat: while a call lasts, events with the task and the time
// it has taken so far.
func TestHeartbeat(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, _ := fakeAgent(t, `sleep 1; echo '{"type":"result","result":"ok"}'`)
	var mu sync.Mutex
	var beats []Event
	out, err := Run(context.Background(), Options{Settings: settingsFor(agentPath), RepoRoot: repo, Heartbeat: 50 * time.Millisecond,
		Observer: ObserverFunc(func(e Event) {
			if e.Type == EvHeartbeat {
				mu.Lock()
				beats = append(beats, e)
				mu.Unlock()
			}
		})})
	if err != nil || out.Verdict != "DONE" {
		t.Fatalf("run: %v %v", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(beats) == 0 || beats[0].Task != "1" || beats[0].Message != "agent call" || beats[len(beats)-1].Millis <= beats[0].Millis {
		t.Fatalf("heartbeats %+v", beats)
	}
	j := openJournal(t, repo)
	evs, _ := j.Events(out.RunID)
	for _, e := range evs {
		if e.Type == EvHeartbeat {
			t.Fatalf("a heartbeat was journaled")
		}
	}
}

// --jobs: a call made ahead with its wave that hits a limit is made again
// at its task's turn, in the main tree, after the wait; its worktree's
// (empty) work is not merged. No attempt is counted.
func TestLimitCalledAhead(t *testing.T) {
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), parPlan("1[P]", "2[P]"))
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "plan")
	agentPath, _ := fakeAgent(t, `if [ "$IMPLLOOP_TASK_ID" = 2 ] && [ ! -e "$LOG/limited" ]; then touch "$LOG/limited"; echo 'retry-after: 30' >&2; exit 75; fi
echo "task $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"`)
	s := settingsFor(agentPath)
	s.Jobs = 2
	s.Verify = `test -s "out-$IMPLLOOP_TASK_ID.txt"`
	c := newFakeClock()
	out, evs := runClocked(t, repo, s, "", c)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	if got := c.sleeps(); len(got) != 1 || got[0] != 30*time.Second {
		t.Errorf("slept %v", got)
	}
	if lim := eventsOf(evs, EvLimit); len(lim) != 1 || lim[0].Task != "2" {
		t.Errorf("limits %+v", lim)
	}
	if ahead := eventsOf(evs, EvAhead); len(ahead) < 2 {
		t.Errorf("no call was made ahead: %+v", ahead)
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	if rows["2"].Attempts != 1 || rows["2"].Status != cache.TaskDone {
		t.Errorf("task 2: %+v", rows["2"])
	}
	if readFile(t, filepath.Join(repo, "out-2.txt")) != "task 2\n" {
		t.Errorf("out-2.txt")
	}
}

// Ctrl-C during a wait for a limit: the run is interrupted, resumable,
// the call that hit the limit journaled as stopped.
func TestLimitWaitInterrupted(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, _ := limitedAgent(t, 1, "retry-after: 600", `{"type":"result","result":"ok"}`)
	ctx, cancel := context.WithCancel(context.Background())
	c := newFakeClock()
	out, err := Run(ctx, Options{Settings: settingsFor(agentPath), RepoRoot: repo, Now: c.now,
		Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return context.Canceled }})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	if !out.Interrupted || out.Verdict != "INTERRUPTED" {
		t.Fatalf("outcome %+v", out)
	}
	units, _ := openJournal(t, repo).Units(out.RunID)
	if len(units) != 1 || units[0].Status != cache.UnitInterrupted {
		t.Errorf("units %+v", units)
	}
}
