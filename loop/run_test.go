package loop

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/report"
)

// copyTree copies the directory src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDemo is `make demo` as a test: the bundled 5-task plan carried out
// by the builtin agent, gated by go test, ends DONE with every file the
// plan specifies and the report on disk.
func TestDemo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go test as the gate")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	repo := t.TempDir()
	copyTree(t, filepath.Join("..", "testdata", "demo"), repo)
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "demo")

	s := DefaultSettings()
	s.Plan, s.Agent, s.Verify = "plan.md", "builtin", "go test ./..."
	out := runIn(t, repo, s)

	if out.Verdict != "DONE" || out.Blocked || out.Interrupted {
		t.Fatalf("verdict %s blocked=%v interrupted=%v, want DONE", out.Verdict, out.Blocked, out.Interrupted)
	}
	for _, p := range []string{"textstats/words.go", "textstats/words_test.go", "textstats/lines.go",
		"textstats/lines_test.go", "cmd/wc/main.go", "README.md"} {
		if _, err := os.Stat(filepath.Join(repo, p)); err != nil {
			t.Errorf("the plan's file %s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, BlockedFile)); err == nil {
		t.Errorf("%s written on a DONE run", BlockedFile)
	}
	md, js := report.Paths(filepath.Join(repo, ".git", "implloop"), out.RunID)
	if out.ReportPath != md {
		t.Errorf("report path %s, want %s", out.ReportPath, md)
	}
	if !strings.Contains(readFile(t, md), "DONE 5/5") {
		t.Errorf("report.md lacks DONE 5/5:\n%s", readFile(t, md))
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(readFile(t, js)), &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if rep.Headline != "DONE 5/5" || rep.ExitCode != 0 || !rep.Finished || len(rep.Tasks) != 5 {
		t.Errorf("report.json: headline %q exit %d finished %v tasks %d", rep.Headline, rep.ExitCode, rep.Finished, len(rep.Tasks))
	}
	for _, task := range rep.Tasks {
		if task.Status != "done" || task.Source != "live" || task.Attempts != 1 {
			t.Errorf("task %s: %s %s %d attempt(s), want done live 1", task.ID, task.Status, task.Source, task.Attempts)
		}
	}
	// implloop observes git, never drives it: the work is uncommitted.
	if head := git(t, repo, "rev-list", "--count", "HEAD"); head != "1" {
		t.Errorf("HEAD has %s commits, want 1", head)
	}
}

// TestRetryWithFeedback: task 2 passes its gate only on attempt 3. The
// attempt number and the gate's feedback reach the agent, the report says
// 3 attempts, and the journal has three distinct identities for task 2.
func TestRetryWithFeedback(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
	agentPath, logDir := fakeAgent(t, `echo "task $IMPLLOOP_TASK_ID attempt $IMPLLOOP_ATTEMPT" > "out-$IMPLLOOP_TASK_ID.txt"`)
	s := settingsFor(agentPath)
	// The gate fails task 2 until its attempt 3, saying what it saw.
	s.Verify = `[ "$IMPLLOOP_TASK_ID" != 2 ] || grep -q 'attempt 3' out-2.txt || { echo "FEEDBACK: saw $(cat out-2.txt)"; exit 1; }`
	out := runIn(t, repo, s)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s, want DONE", out.Verdict)
	}

	type ctxDoc struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
		Attempt      int     `json:"attempt"`
		GateFeedback *string `json:"gate_feedback"`
	}
	readCtx := func(task string, attempt int) ctxDoc {
		var c ctxDoc
		b := readFile(t, filepath.Join(logDir, "ctx-"+task+"-"+itoa(attempt)+".json"))
		if err := json.Unmarshal([]byte(b), &c); err != nil {
			t.Fatalf("context of task %s attempt %d: %v", task, attempt, err)
		}
		return c
	}
	if c := readCtx("2", 1); c.Attempt != 1 || c.GateFeedback != nil {
		t.Errorf("task 2 attempt 1: context attempt %d, feedback %v; want 1 and none", c.Attempt, c.GateFeedback)
	}
	for a := 2; a <= 3; a++ {
		c := readCtx("2", a)
		want := "FEEDBACK: saw task 2 attempt " + itoa(a-1)
		if c.Attempt != a || c.GateFeedback == nil || !strings.Contains(*c.GateFeedback, want) {
			t.Errorf("task 2 attempt %d: context attempt %d, feedback %v; want %q", a, c.Attempt, c.GateFeedback, want)
		}
	}
	if _, err := os.Stat(filepath.Join(logDir, "ctx-2-4.json")); err == nil {
		t.Error("task 2 ran a 4th attempt")
	}
	for _, task := range []string{"1", "3"} {
		if c := readCtx(task, 1); c.GateFeedback != nil {
			t.Errorf("task %s: unexpected feedback %q", task, *c.GateFeedback)
		}
	}

	var task2 *report.Task
	for i := range out.Report.Tasks {
		if out.Report.Tasks[i].ID == "2" {
			task2 = &out.Report.Tasks[i]
		}
	}
	if task2 == nil || task2.Attempts != 3 || task2.Status != "done" {
		t.Fatalf("report task 2: %+v, want done with 3 attempts", task2)
	}
	// report.md's row: | task | title | status | source | attempts | ...
	if md := readFile(t, out.ReportPath); !regexp.MustCompile(`(?m)^\| 2 \| Step 2 \| done \| live \| 3 \|`).MatchString(md) {
		t.Errorf("report.md does not say task 2 took 3 attempts:\n%s", md)
	}

	j := openJournal(t, repo)
	units, err := j.Units(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, u := range units {
		if u.TaskID == "2" {
			ids[u.Identity] = u.Attempt
			if u.Status != cache.UnitCompleted {
				t.Errorf("unit %s: %s, want completed (the agent call completed; the gate failed)", u.UnitID, u.Status)
			}
		}
	}
	if len(ids) != 3 {
		t.Errorf("task 2 has %d distinct identities in the journal, want 3: %v", len(ids), ids)
	}
	gates, err := j.Gates(out.RunID, "2")
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 3 || gates[0].Passed || gates[1].Passed || !gates[2].Passed {
		t.Errorf("task 2 gates: %+v, want fail, fail, pass", gates)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestKill9DuringTask3: implloop is SIGKILLed while task 3's agent runs.
// The journal keeps tasks 1 and 2 completed, task 3's unit running (never
// completed, so never replayed), and passes the invariant check.
func TestKill9DuringTask3(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(4)})
	agentPath, logDir := fakeAgent(t, `
echo "$IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"
if [ "$IMPLLOOP_TASK_ID" = 3 ]; then
	echo $$ > "$LOG/agent.pid"
	touch "$LOG/marker"
	exec sleep 300
fi`)
	child, output, agentPID := startAgentChild(t, Options{Settings: settingsFor(agentPath), RepoRoot: repo}, logDir)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := child.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL\n%s", err, output)
	}
	_ = syscall.Kill(-agentPID, syscall.SIGKILL)

	checkJournal(t, repo)
	j := openJournal(t, repo)
	runs, err := j.ListRuns()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	run := runs[0]
	if run.Finished() {
		t.Errorf("run %s is finished after a kill -9", run.ID)
	}
	rows := taskRows(t, j, run.ID)
	for id, want := range map[string]cache.TaskStatus{"1": cache.TaskDone, "2": cache.TaskDone, "3": cache.TaskRunning, "4": cache.TaskPending} {
		if rows[id].Status != want {
			t.Errorf("task %s: %s, want %s", id, rows[id].Status, want)
		}
	}
	units, err := j.Units(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cache.UnitStatus{}
	for _, u := range units {
		got[u.TaskID] = u.Status
		if u.Status == cache.UnitCompleted && u.Result == "" {
			t.Errorf("unit %s completed without a result", u.UnitID)
		}
	}
	want := map[string]cache.UnitStatus{"1": cache.UnitCompleted, "2": cache.UnitCompleted, "3": cache.UnitRunning}
	if len(got) != len(want) {
		t.Errorf("units by task: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("task %s unit: %s, want %s", k, got[k], v)
		}
	}
	// The running unit is never found as a replay candidate.
	for _, u := range units {
		if u.TaskID == "3" {
			if _, ok, err := j.FindCompleted([]string{run.ID}, u.Identity); err != nil || ok {
				t.Errorf("task 3's running unit is replayable: ok=%v err=%v", ok, err)
			}
		}
	}
}

// TestSecondRunRefused: a run holds the repository lock; a second run in
// the same repository is refused at once, naming the run and pid.
func TestSecondRunRefused(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, logDir := fakeAgent(t, `
touch "$LOG/marker"
i=0
while [ ! -f "$LOG/release" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`)
	s := settingsFor(agentPath)
	child, output := startChild(t, Options{Settings: s, RepoRoot: repo})
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(logDir, "release"), nil, 0o644) })
	waitFile(t, filepath.Join(logDir, "marker"), 20*time.Second)

	start := time.Now()
	_, err := runNoCheck(repo, s)
	took := time.Since(start)
	var locked *LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("second run: %v, want LockedError", err)
	}
	if locked.Holder.PID != child.Process.Pid || !strings.HasPrefix(locked.Holder.RunID, "r-") {
		t.Errorf("holder %+v, want pid %d and a run id", locked.Holder, child.Process.Pid)
	}
	if msg := err.Error(); !strings.Contains(msg, locked.Holder.RunID) || !strings.Contains(msg, "pid "+itoa(child.Process.Pid)) {
		t.Errorf("error %q does not name the run and pid", msg)
	}
	if took > 5*time.Second {
		t.Errorf("refusal took %s; it must not wait for the lock", took)
	}

	writeFile(t, filepath.Join(logDir, "release"), "")
	if err := child.Wait(); err != nil {
		t.Fatalf("first run: %v\n%s", err, output)
	}
	checkJournal(t, repo)
	j := openJournal(t, repo)
	runs, _ := j.ListRuns()
	if len(runs) != 1 || runs[0].Verdict != "DONE" {
		t.Errorf("runs %+v: want only the first, DONE", runs)
	}
	// The lock is free again once the holder is gone.
	out := runIn(t, repo, s)
	if out.Verdict != "DONE" {
		t.Errorf("third run: %s", out.Verdict)
	}
}

// runNoCheck runs the loop in-process and returns its error.
func runNoCheck(repo string, s Settings) (*Outcome, error) {
	return Run(context.Background(), Options{Settings: s, RepoRoot: repo})
}

// TestGateBlocks: a gate that never passes blocks the task after
// --max-attempts; the run stops there (PARTIAL), BLOCKED.md explains, and
// a second run is refused until it is removed. With --on-blocked continue
// the later tasks run.
func TestGateBlocks(t *testing.T) {
	t.Parallel()
	gate := `[ "$IMPLLOOP_TASK_ID" != 2 ] || { echo "compile error in two.go: the gate output"; exit 1; }`
	t.Run("stop", func(t *testing.T) {
		repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
		agentPath, logDir := fakeAgent(t, `echo x > "out-$IMPLLOOP_TASK_ID.txt"`)
		s := settingsFor(agentPath)
		s.Verify, s.MaxAttempts = gate, 2
		out := runIn(t, repo, s)
		if out.Verdict != "PARTIAL" || !out.Blocked || out.Report.ExitCode != 3 || out.Report.Headline != "PARTIAL 1/3" {
			t.Fatalf("verdict %s blocked %v exit %d headline %q, want PARTIAL 1/3, exit 3", out.Verdict, out.Blocked, out.Report.ExitCode, out.Report.Headline)
		}
		rows := taskRows(t, openJournal(t, repo), out.RunID)
		if rows["1"].Status != cache.TaskDone || rows["2"].Status != cache.TaskBlocked || rows["3"].Status != cache.TaskPending {
			t.Errorf("statuses %s %s %s, want done blocked pending", rows["1"].Status, rows["2"].Status, rows["3"].Status)
		}
		if rows["2"].Attempts != 2 {
			t.Errorf("task 2: %d attempts, want 2", rows["2"].Attempts)
		}
		if _, err := os.Stat(filepath.Join(logDir, "ctx-3-1.json")); err == nil {
			t.Error("task 3 ran after a block with --on-blocked stop")
		}
		b := readFile(t, filepath.Join(repo, BlockedFile))
		for _, want := range []string{"# BLOCKED: task 2", out.RunID, "compile error in two.go", "rm BLOCKED.md", "implloop resume --run " + out.RunID} {
			if !strings.Contains(b, want) {
				t.Errorf("BLOCKED.md lacks %q:\n%s", want, b)
			}
		}
		if _, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo}); !errors.Is(err, ErrBlockedFile) {
			t.Errorf("run with BLOCKED.md present: %v, want ErrBlockedFile", err)
		}
	})
	t.Run("none done", func(t *testing.T) {
		repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
		agentPath, _ := fakeAgent(t, `exit 0`)
		s := settingsFor(agentPath)
		s.Verify, s.MaxAttempts = "echo never; exit 1", 1
		out := runIn(t, repo, s)
		if out.Verdict != "BLOCKED" || out.Report.ExitCode != 4 {
			t.Fatalf("verdict %s exit %d, want BLOCKED 4", out.Verdict, out.Report.ExitCode)
		}
	})
	t.Run("continue", func(t *testing.T) {
		repo := newRepo(t, map[string]string{"plan.md": plainPlan(4)})
		agentPath, logDir := fakeAgent(t, `echo x > "out-$IMPLLOOP_TASK_ID.txt"`)
		s := settingsFor(agentPath)
		// Tasks 2 and 4 fail their gates.
		s.Verify = `case "$IMPLLOOP_TASK_ID" in 2|4) echo "task $IMPLLOOP_TASK_ID: gate says no"; exit 1;; esac`
		s.MaxAttempts, s.OnBlocked = 1, "continue"
		out := runIn(t, repo, s)
		if out.Verdict != "PARTIAL" || out.Report.Headline != "PARTIAL 2/4" {
			t.Fatalf("verdict %s %q, want PARTIAL 2/4", out.Verdict, out.Report.Headline)
		}
		if _, err := os.Stat(filepath.Join(logDir, "ctx-3-1.json")); err != nil {
			t.Error("task 3 did not run with --on-blocked continue")
		}
		rows := taskRows(t, openJournal(t, repo), out.RunID)
		if rows["3"].Status != cache.TaskDone || rows["4"].Status != cache.TaskBlocked {
			t.Errorf("tasks 3, 4: %s %s, want done blocked", rows["3"].Status, rows["4"].Status)
		}
		// BLOCKED.md explains both blocks, not just the last one.
		b := readFile(t, filepath.Join(repo, BlockedFile))
		for _, want := range []string{"# BLOCKED: tasks 2, 4", "## Task 2 (Step 2)", "task 2: gate says no", "## Task 4 (Step 4)", "task 4: gate says no", "tasks 2, 4 run their gates first"} {
			if !strings.Contains(b, want) {
				t.Errorf("BLOCKED.md lacks %q:\n%s", want, b)
			}
		}
	})
}

// TestDiscardBlocks: task 2's agent deletes task 1's new, uncommitted
// file. The guard sees the content lost: task 2 is blocked with the path,
// and its content is in the boundary commits (the CLI's restore test brings it back).
func TestDiscardBlocks(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
	agentPath, _ := fakeAgent(t, `
case "$IMPLLOOP_TASK_ID" in
1) printf 'task one\nline two\n' > one.txt ;;
2) rm one.txt; echo two > two.txt ;;
3) echo three > three.txt ;;
esac`)
	out := runIn(t, repo, settingsFor(agentPath))
	if out.Verdict != "PARTIAL" || !out.Blocked {
		t.Fatalf("verdict %s blocked %v, want PARTIAL and blocked", out.Verdict, out.Blocked)
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	r2 := rows["2"]
	if r2.Status != cache.TaskBlocked || len(r2.LostPaths) != 1 || r2.LostPaths[0] != "one.txt" {
		t.Fatalf("task 2: %s lost %v, want blocked with one.txt", r2.Status, r2.LostPaths)
	}
	if !strings.Contains(r2.BlockReason, "one.txt") {
		t.Errorf("block reason %q does not name one.txt", r2.BlockReason)
	}
	b := readFile(t, filepath.Join(repo, BlockedFile))
	if !strings.Contains(b, "`one.txt`") || !strings.Contains(b, "implloop restore --run "+out.RunID+" --task 2") {
		t.Errorf("BLOCKED.md does not explain the restore:\n%s", b)
	}
	if rows["3"].Status != cache.TaskPending {
		t.Errorf("task 3: %s, want pending", rows["3"].Status)
	}
}

// TestCommitIsAConcern: task 2's agent commits task 1's work. HEAD moves
// but nothing is lost: the run is DONE with a concern, not blocked.
func TestCommitIsAConcern(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
	agentPath, _ := fakeAgent(t, `
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
case "$IMPLLOOP_TASK_ID" in
1) echo one > one.txt ;;
2) git add one.txt && git commit -q -m "task 1" && echo two > two.txt ;;
3) echo three > three.txt ;;
esac`)
	head0 := git(t, repo, "rev-parse", "HEAD")
	out := runIn(t, repo, settingsFor(agentPath))
	if out.Verdict != "DONE" || out.Blocked {
		t.Fatalf("verdict %s blocked %v, want DONE", out.Verdict, out.Blocked)
	}
	if git(t, repo, "rev-parse", "HEAD") == head0 {
		t.Fatal("the agent's commit did not happen")
	}
	if _, err := os.Stat(filepath.Join(repo, BlockedFile)); err == nil {
		t.Error("BLOCKED.md written for a commit")
	}
	var concerns []string
	for _, task := range out.Report.Tasks {
		if task.ID == "2" {
			concerns = task.Concerns
		}
		if len(task.LostPaths) > 0 {
			t.Errorf("task %s lost %v", task.ID, task.LostPaths)
		}
	}
	if len(concerns) == 0 || !strings.Contains(strings.ToLower(strings.Join(concerns, " ")), "head") {
		t.Errorf("task 2 concerns %q, want one about HEAD moving", concerns)
	}
}

// TestTimeoutKillsAgentGroup: an agent that hangs is killed at --timeout
// with its whole process group: the attempt fails, and the child it
// started is dead too.
func TestTimeoutKillsAgentGroup(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, logDir := fakeAgent(t, `
if [ "$IMPLLOOP_TASK_ID" = 1 ]; then
	sleep 300 &
	echo $! > "$LOG/child.pid"
	wait
fi`)
	s := settingsFor(agentPath)
	s.Timeout, s.MaxAttempts, s.Verify = Duration(time.Second), 1, "true"
	start := time.Now()
	out := runIn(t, repo, s)
	took := time.Since(start)
	if took > 15*time.Second {
		t.Errorf("the run took %s with a 1s timeout", took)
	}
	if out.Verdict != "BLOCKED" {
		t.Errorf("verdict %s, want BLOCKED", out.Verdict)
	}
	pid := readPID(t, filepath.Join(logDir, "child.pid"))
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the agent's child %d outlived the timeout", pid)
	}
	j := openJournal(t, repo)
	units, err := j.Units(out.RunID)
	if err != nil || len(units) != 1 {
		t.Fatalf("units %v %v, want one", units, err)
	}
	if u := units[0]; u.Status != cache.UnitFailed || !strings.Contains(u.Error, "timeout") {
		t.Errorf("unit %s: %s %q, want failed with the timeout", u.UnitID, u.Status, u.Error)
	}
	rows := taskRows(t, j, out.RunID)
	if !strings.Contains(rows["1"].BlockReason, "timeout") {
		t.Errorf("block reason %q does not say timeout", rows["1"].BlockReason)
	}
	// The agent failed, not the gate (which never ran): BLOCKED.md says so.
	b := readFile(t, filepath.Join(repo, BlockedFile))
	if strings.Contains(b, "The gate `true` failed") || !strings.Contains(b, "The agent call itself failed") {
		t.Errorf("BLOCKED.md blames the gate for the agent's timeout:\n%s", b)
	}
}

// TestEnvValueNeverStored: --env API_TOKEN puts the name in the identity;
// its value appears in no file under .git/implloop/ (journal, WAL, blobs,
// context files, reports).
func TestEnvValueNeverStored(t *testing.T) {
	const secret = "s3cr3t-value"
	t.Setenv("API_TOKEN", secret)
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	// The agent uses the value without echoing it.
	agentPath, _ := fakeAgent(t, `[ -n "$API_TOKEN" ] && echo "token present" > "out-$IMPLLOOP_TASK_ID.txt"; echo '{"result":"ok"}'`)
	s := settingsFor(agentPath)
	s.Env = []string{"API_TOKEN"}
	s.Verify = `test -f "out-$IMPLLOOP_TASK_ID.txt"`
	out := runIn(t, repo, s)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s, want DONE (the agent saw no API_TOKEN?)", out.Verdict)
	}
	files := 0
	sawName := false
	err := filepath.WalkDir(filepath.Join(repo, ".git", "implloop"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(b), secret) {
			t.Errorf("%s contains the value of API_TOKEN", p)
		}
		if strings.Contains(string(b), "API_TOKEN") {
			sawName = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 || !sawName {
		t.Errorf("walked %d files, name seen %v: expected the journal to record the name", files, sawName)
	}
}

// TestInterrupt: SIGINT to implloop while the agent runs stops the
// agent's process group, marks the unit and task interrupted and writes
// the report.
func TestInterrupt(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
	agentPath, logDir := fakeAgent(t, `
if [ "$IMPLLOOP_TASK_ID" = 2 ]; then
	sleep 300 &
	echo $! > "$LOG/child.pid"
	touch "$LOG/marker"
	wait
fi
echo x > "out-$IMPLLOOP_TASK_ID.txt"`)
	child, output := startChild(t, Options{Settings: settingsFor(agentPath), RepoRoot: repo})
	waitFile(t, filepath.Join(logDir, "marker"), 20*time.Second)
	if err := child.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := child.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("child: %v, want exit 130 (interrupted)\n%s", err, output)
	}
	if pid := readPID(t, filepath.Join(logDir, "child.pid")); alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the agent's child %d survived the interrupt", pid)
	}
	checkJournal(t, repo)
	var o Outcome
	if err := json.Unmarshal([]byte(strings.TrimSpace(output.String())), &o); err != nil {
		t.Fatalf("outcome: %v\n%s", err, output)
	}
	j := openJournal(t, repo)
	rows := taskRows(t, j, o.RunID)
	if rows["1"].Status != cache.TaskDone || rows["2"].Status != cache.TaskInterrupted || rows["3"].Status != cache.TaskPending {
		t.Errorf("statuses %s %s %s, want done interrupted pending", rows["1"].Status, rows["2"].Status, rows["3"].Status)
	}
	units, _ := j.Units(o.RunID)
	for _, u := range units {
		if u.TaskID == "2" && u.Status != cache.UnitInterrupted {
			t.Errorf("unit %s: %s, want interrupted", u.UnitID, u.Status)
		}
	}
	md, js := report.Paths(filepath.Join(repo, ".git", "implloop"), o.RunID)
	for _, p := range []string{md, js} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("report: %v", err)
		}
	}
	if run, err := j.GetRun(o.RunID); err != nil || !run.Finished() {
		t.Errorf("run %+v %v: want finished", run, err)
	}
}

// TestCheckedTasksSkipped: tasks checked in the plan are skipped unless
// IncludeChecked.
func TestCheckedTasksSkipped(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n- [x] First, done by hand\n- [ ] Second\n- [ ] Third\n"
	for _, include := range []bool{false, true} {
		repo := newRepo(t, map[string]string{"plan.md": plan})
		agentPath, logDir := fakeAgent(t, `echo x > "out-$IMPLLOOP_TASK_ID.txt"`)
		s := settingsFor(agentPath)
		s.IncludeChecked = include
		out := runIn(t, repo, s)
		rows := taskRows(t, openJournal(t, repo), out.RunID)
		_, ran := os.Stat(filepath.Join(logDir, "ctx-1-1.json"))
		switch {
		case !include && (rows["1"].Status != cache.TaskSkipped || ran == nil):
			t.Errorf("checked task: %s (ran: %v), want skipped", rows["1"].Status, ran == nil)
		case include && (rows["1"].Status != cache.TaskDone || ran != nil):
			t.Errorf("checked task with IncludeChecked: %s, want done", rows["1"].Status)
		}
		if rows["2"].Status != cache.TaskDone || rows["3"].Status != cache.TaskDone {
			t.Errorf("include=%v: tasks 2, 3: %s %s", include, rows["2"].Status, rows["3"].Status)
		}
		if out.Verdict != "DONE" {
			t.Errorf("include=%v: verdict %s, want DONE (a skipped task does not spoil it)", include, out.Verdict)
		}
	}
}

// TestAgentFailure: an agent call that exits non-zero fails the attempt
// (no gate runs); the next attempt gets the failure, with the agent's
// stderr, as its feedback. When the attempts run out BLOCKED.md shows the
// agent's failure, not a gate's.
func TestAgentFailure(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(1)})
	agentPath, logDir := fakeAgent(t, `echo "warming up" >&2; echo "cannot reach the model (attempt $IMPLLOOP_ATTEMPT)" >&2; exit 7`)
	s := settingsFor(agentPath)
	s.Verify, s.MaxAttempts = `echo gate ran >> "$IMPLLOOP_RUN_ID.gate"; true`, 2
	out := runIn(t, repo, s)
	if out.Verdict != "BLOCKED" {
		t.Fatalf("verdict %s, want BLOCKED", out.Verdict)
	}
	if m, _ := filepath.Glob(filepath.Join(repo, "*.gate")); len(m) > 0 {
		t.Errorf("the gate ran after a failed agent call")
	}
	var c struct {
		GateFeedback string `json:"gate_feedback"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(logDir, "ctx-1-2.json"))), &c); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.GateFeedback, "the agent exited with status 7: cannot reach the model (attempt 1)") ||
		!strings.Contains(c.GateFeedback, "warming up") {
		t.Errorf("attempt 2 feedback %q, want the exit status and the stderr", c.GateFeedback)
	}
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	if want := "the agent failed on 2 attempt(s): the agent exited with status 7: cannot reach the model (attempt 2)"; rows["1"].BlockReason != want {
		t.Errorf("block reason %q, want %q", rows["1"].BlockReason, want)
	}
	b := readFile(t, filepath.Join(repo, BlockedFile))
	if strings.Contains(b, "The gate `") || !strings.Contains(b, "The agent call itself failed") || !strings.Contains(b, "warming up") {
		t.Errorf("BLOCKED.md:\n%s", b)
	}
}
