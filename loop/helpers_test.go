package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/internal/procgroup"
)

// childEnv makes the test binary act as a minimal implloop: it runs
// loop.Run with the Options JSON in the variable's value, cancelling on
// SIGINT or SIGTERM, and prints the outcome's JSON. The kill -9, lock and
// interrupt tests need a run in another process.
const childEnv = "IMPLLOOP_LOOP_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childRun(spec))
	}
	os.Exit(m.Run())
}

// childSpec is what a child run gets: the serializable part of Options.
type childSpec struct {
	Settings Settings
	RepoRoot string
	Parent   string
	// Events, when set, is a file the child appends each event to (a
	// JSON line, written before the run goes on).
	Events string
}

func childRun(spec string) int {
	var c childSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := Options{Settings: c.Settings, RepoRoot: c.RepoRoot, Parent: c.Parent}
	if c.Events != "" {
		f, err := os.OpenFile(c.Events, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		defer f.Close()
		o.Observer = ObserverFunc(func(ev Event) {
			b, _ := json.Marshal(ev)
			_, _ = f.Write(append(b, '\n'))
		})
	}
	out, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if out.Interrupted {
		return 130
	}
	return 0
}

// startChild starts the test binary as a run of o in another process;
// events, when given, is the file it appends its events to.
func startChild(t *testing.T, o Options, events ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := json.Marshal(childSpec{Settings: o.Settings, RepoRoot: o.RepoRoot, Parent: o.Parent, Events: strings.Join(events, "")})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
	return cmd, &out
}

// startAgentChild starts a run of o in another process and waits until its
// agent, one that writes $LOG/agent.pid and then touches $LOG/marker, runs.
// The agent runs in its own process group, which dies with implloop (see
// orphan_test.go); the test kills it anyway, for a failing test.
func startAgentChild(t *testing.T, o Options, logDir string) (child *exec.Cmd, output *strings.Builder, agentPID int) {
	t.Helper()
	child, output = startChild(t, o)
	waitFile(t, filepath.Join(logDir, "marker"), 20*time.Second)
	agentPID = readPID(t, filepath.Join(logDir, "agent.pid"))
	t.Cleanup(func() { _ = syscall.Kill(-agentPID, syscall.SIGKILL) })
	return child, output, agentPID
}

// kill9 SIGKILLs the child started by startAgentChild, then its agent.
func kill9(t *testing.T, child *exec.Cmd, agentPID int) {
	t.Helper()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	_ = syscall.Kill(-agentPID, syscall.SIGKILL)
}

// git runs git in dir, isolated as gittest isolates it, and returns its
// output without the surrounding white space.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(gittest.At(t, dir).Git(args...))
}

// newRepo makes a git repository in a temp dir with files (path -> content)
// committed as the starting point.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	r := gittest.New(t)
	if files == nil {
		files = map[string]string{}
	}
	if _, ok := files["README"]; !ok {
		files["README"] = "test repo\n"
	}
	for p, c := range files {
		r.Write(p, c)
	}
	r.Git("add", "-A")
	r.Git("commit", "-q", "-m", "start")
	return r.Dir
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// plainPlan is a plan of n plain tasks (n <= 5).
func plainPlan(n int) string {
	var b strings.Builder
	b.WriteString("# Plan\n\nShared context for every task.\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "### Task %d: Step %d\n\nDo step %d.\n\n", i, i, i)
	}
	return b.String()
}

// fakeAgent writes an agent script (sh) outside the repository and returns
// its path. The body runs with LOG set to a log directory (also returned)
// where it may leave files for the test; it runs in the repo root with the
// IMPLLOOP_* environment. Every call first copies its context file to
// $LOG/ctx-TASK-ATTEMPT.json.
func fakeAgent(t testing.TB, body string) (path, logDir string) {
	t.Helper()
	dir := t.TempDir()
	logDir = filepath.Join(dir, "log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "agent.sh")
	script := "#!/bin/sh\nLOG=" + shellQuote(logDir) + "\n" +
		`cp "$IMPLLOOP_CONTEXT_FILE" "$LOG/ctx-$IMPLLOOP_TASK_ID-$IMPLLOOP_ATTEMPT.json"` + "\n" +
		"cat >/dev/null\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, logDir
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// settings for a run of plan.md with the exec agent at agentPath.
func settingsFor(agentPath string) Settings {
	s := DefaultSettings()
	s.Plan = "plan.md"
	s.Agent = "exec"
	s.AgentCmd = agentPath
	s.Timeout = Duration(30 * time.Second)
	return s
}

// runIn runs the loop in-process on repo and checks the journal after.
func runIn(t testing.TB, repo string, s Settings) *Outcome {
	t.Helper()
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkJournal(t, repo)
	return out
}

// checkJournal opens the repository's journal and fails the test on any
// broken invariant (cache.(*Journal).Check with the one identity digest).
// Every test that runs or resumes calls it after, like restic's
// testRunCheck.
func checkJournal(t testing.TB, repo string) {
	t.Helper()
	j, err := cache.Open(repo)
	if err != nil {
		t.Fatalf("check: open journal: %v", err)
	}
	defer j.Close()
	ps, err := j.Check(identity.DigestCanonical)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	for _, p := range ps {
		t.Errorf("journal invariant broken: %s", p)
	}
}

// openJournal opens the repository's journal for assertions.
func openJournal(t testing.TB, repo string) *cache.Journal {
	t.Helper()
	j, err := cache.Open(repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// taskRows maps task id to its row in run.
func taskRows(t testing.TB, j *cache.Journal, run string) map[string]cache.Task {
	t.Helper()
	ts, err := j.Tasks(run)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]cache.Task{}
	for _, x := range ts {
		m[x.TaskID] = x
	}
	return m
}

// waitFile waits up to d for path to exist.
func waitFile(t testing.TB, path string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within %s", path, d)
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool { return procgroup.Alive(pid) }

func readPID(t testing.TB, path string) int {
	t.Helper()
	var pid int
	if _, err := fmt.Sscan(readFile(t, path), &pid); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}
