package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/travel"
)

// Workers (implloop work) as they run in CI: real worker processes (the
// implloop binary), each in its own clone, sharing a real git server on
// loopback (git http-backend), signing their runs with an SSH key that
// the fan-in's clone allows.

// make test races 100 rounds; make fuzz, 200.
var claimRounds = flag.Int("claim.rounds", 100, "rounds of TestWorkClaimRace")

// fleet is a shared remote, a base commit with a plan, and the clones of
// the workers and the fan-in.
type fleet struct {
	t     testing.TB
	dir   string
	env   []string
	url   string
	calls string
	// stop stops the git server once its connections ended (at the
	// test's end, or sooner).
	stop func()
}

// workAgent logs each call's task id to $CALLS and writes
// out-<task>.txt, and reports a cost of $COST dollars when set; with $SLOW_TASK, the first call of that task records
// its pid and sleeps (it is killed with its worker).
const workAgent = `#!/bin/sh
echo "$IMPLLOOP_TASK_ID" >> "$CALLS"
if [ -n "$SLOW_TASK" ] && [ "$IMPLLOOP_TASK_ID" = "$SLOW_TASK" ] && mkdir "$SLOW_MARK" 2>/dev/null; then
  echo $$ > "$SLOW_MARK/pid"
  sleep 60
fi
if [ -n "$CHAIN" ] && [ "$IMPLLOOP_TASK_ID" -gt 1 ]; then
  prev=$((IMPLLOOP_TASK_ID - 1))
  test -f "out-$prev.txt" || echo "missing-$prev" >> "$CALLS"
  claim=$(git ls-remote "$REMOTE" "refs/implloop/claims/*/$prev" | cut -f1)
  git ls-remote "$REMOTE" 'refs/implloop/records/*' | cut -f1 | grep -qx "$claim" || echo "early-$IMPLLOOP_TASK_ID" >> "$CALLS"
fi
if [ -n "$BEHIND" ]; then
  i=0
  while [ $i -lt 200 ] && [ -z "$(git for-each-ref refs/implloop/records/)" ]; do sleep 0.05; i=$((i+1)); done
  git for-each-ref --format='%(refname)' refs/implloop/records/ >> "$BEHIND"
fi
[ -z "$AGENT_SLEEP" ] || sleep "$AGENT_SLEEP"
echo "task $IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"
[ -z "$EVIL" ] || echo BACKDOOR >> "out-$IMPLLOOP_TASK_ID.txt"
[ -z "$COST" ] || echo "{\"type\":\"result\",\"result\":\"ok\",\"total_cost_usd\":$COST}"
`

func newFleet(t testing.TB, plan string) *fleet { return newFleetOn(t, plan, serveGit) }

// newFleetOn is newFleet with its git server: serveGit (smart HTTP) or
// serveGitDaemon.
func newFleetOn(t testing.TB, plan string, serve func(dir, home string) (string, func(), error)) *fleet {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	f := &fleet{t: t, dir: dir, calls: filepath.Join(dir, "calls")}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "GIT_") && k != "HOME" && !strings.HasPrefix(k, "IMPLLOOP_") {
			f.env = append(f.env, kv)
		}
	}
	f.env = append(f.env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "CALLS="+f.calls)
	must(t, os.MkdirAll(home, 0o755))
	f.run(dir, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci", "-f", filepath.Join(dir, "key"))
	pub, err := os.ReadFile(filepath.Join(dir, "key.pub"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "allowed"), []byte("ci@example.com "+string(pub)), 0o644))
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(fmt.Sprintf(`[user]
	name = ci
	email = ci@example.com
	signingKey = %s
[init]
	defaultBranch = main
[gpg]
	format = ssh
[gpg "ssh"]
	allowedSignersFile = %s
[implloop]
	signRuns = true
`, filepath.Join(dir, "key.pub"), filepath.Join(dir, "allowed"))), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(workAgent), 0o755))
	f.run(dir, "git", "init", "-q", "--bare", filepath.Join(dir, "srv", "shared.git"))
	// As a hosting service does: no gc in the push's own time.
	f.run(dir, "git", "-C", filepath.Join(dir, "srv", "shared.git"), "config", "receive.autogc", "false")
	url, stop, err := serve(filepath.Join(dir, "srv"), home)
	must(t, err)
	f.stop = stop
	t.Cleanup(stop)
	f.url = url + "/shared.git"
	f.env = append(f.env, "REMOTE="+f.url)
	a := f.clone("a")
	must(t, os.WriteFile(filepath.Join(a, "plan.md"), []byte(plan), 0o644))
	f.run(a, "git", "add", "plan.md")
	f.run(a, "git", "commit", "-q", "-m", "plan")
	f.run(a, "git", "push", "-q", "origin", "HEAD:main")
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fleet) cmd(dir, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir, c.Env = dir, f.env
	return c
}

// run runs a command that must succeed, and returns its stdout.
func (f *fleet) run(dir, name string, args ...string) string {
	f.t.Helper()
	var out, errb bytes.Buffer
	c := f.cmd(dir, name, args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		f.t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// preReceive installs script as the shared repository's pre-receive
// hook (what a server refuses), and returns its path.
func (f *fleet) preReceive(script string) string {
	f.t.Helper()
	hook := filepath.Join(f.dir, "srv", "shared.git", "hooks", "pre-receive")
	must(f.t, os.WriteFile(hook, []byte(script), 0o755))
	return hook
}

func (f *fleet) clone(name string) string {
	f.run(f.dir, "git", "clone", "-q", f.url, name)
	return filepath.Join(f.dir, name)
}

// worker is a started `implloop work` and its output.
type runningWorker struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
}

var agentFlags = []string{"--agent-cmd", "", "--verify", "test -f out-$IMPLLOOP_TASK_ID.txt"}

func (f *fleet) agentFlags() []string {
	fl := slices.Clone(agentFlags)
	fl[1] = filepath.Join(f.dir, "agent.sh")
	return fl
}

// start starts a worker in a new clone, with env added.
func (f *fleet) start(name string, env []string, args ...string) *runningWorker {
	f.t.Helper()
	dir := f.clone(name)
	args = append(append([]string{"work", "plan.md", "--remote", "origin", "--id", name}, f.agentFlags()...), args...)
	w := &runningWorker{cmd: f.cmd(dir, "implloop", args...)}
	w.cmd.Env = append(slices.Clone(f.env), env...)
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.err
	must(f.t, w.cmd.Start())
	f.t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
		}
	})
	return w
}

func (f *fleet) wait(w *runningWorker) {
	f.t.Helper()
	if err := w.cmd.Wait(); err != nil {
		f.t.Fatalf("worker: %v\n%s%s", err, w.out.String(), w.err.String())
	}
}

func (f *fleet) callLines() []string {
	b, err := os.ReadFile(f.calls)
	if err != nil && !os.IsNotExist(err) {
		f.t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// fanIn pulls into a fresh clone and runs the plan there: its output,
// and its exit code.
func (f *fleet) fanIn(extra ...string) (string, int, string) {
	f.t.Helper()
	dir := f.clone("fanin")
	f.run(dir, "implloop", "pull", "origin")
	var out bytes.Buffer
	c := f.cmd(dir, "implloop", append(append([]string{"run", "plan.md"}, f.agentFlags()...), extra...)...)
	c.Stdout, c.Stderr = &out, &out
	code := 0
	if err := c.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			f.t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return out.String(), code, dir
}

// fanInReplays is fanIn that must end well replaying n tasks with no
// agent call: its output and its clone.
func (f *fleet) fanInReplays(n int, extra ...string) (string, string) {
	f.t.Helper()
	out, code, dir := f.fanIn(extra...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("units: 0 live, %d replayed", n)) {
		f.t.Fatalf("fan-in exited %d, want %d tasks replayed and none live:\n%s", code, n, out)
	}
	return out, dir
}

// rogue is a clone that signs with a key of its own, which only its own
// allowed signers hold (implloop work refuses a clone that does not
// trust its own runs): a pusher nobody else trusts.
func (f *fleet) rogue() string {
	f.t.Helper()
	rogue := f.clone("rogue")
	rk := filepath.Join(f.dir, "rogue-key")
	f.run(f.dir, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rogue", "-f", rk)
	pub, err := os.ReadFile(rk + ".pub")
	must(f.t, err)
	must(f.t, os.WriteFile(rk+".allowed", []byte("ci@example.com "+string(pub)), 0o644))
	f.run(rogue, "git", "config", "user.signingKey", rk+".pub")
	f.run(rogue, "git", "config", "gpg.ssh.allowedSignersFile", rk+".allowed")
	return rogue
}

// chainPlan is three tasks, each depending on the one before.
const chainPlan = "# Plan\n\n## Task 1: first\n\nWrite out-1.txt.\n\n## Task 2: second\n\nDepends on: 1\n\nWrite out-2.txt.\n\n" +
	"## Task 3: third\n\nDepends on: 2\n\nWrite out-3.txt.\n"

func independentPlan(n int) string {
	var b strings.Builder
	b.WriteString("# Plan\n\nIndependent tasks.\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] T%03d [P] write out-T%03d.txt\n", i, i)
	}
	return b.String()
}

// Four workers in four clones, eight independent tasks: each task is done
// once, and a fresh clone's fan-in replays all of them (no agent call),
// with every file, --jobs or not.
func TestWorkFourWorkersEightTasks(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(8))
	var ws []*runningWorker
	for i := 1; i <= 4; i++ {
		ws = append(ws, f.start(fmt.Sprintf("w%d", i), nil))
	}
	ran := 0
	base := strings.TrimSpace(f.run(f.dir, "git", "-C", "w1", "rev-parse", "--short=12", "HEAD"))
	for i, w := range ws {
		f.wait(w)
		ran += strings.Count(w.out.String(), "  pushed")
		// Each says first what it shares with the others: the plan at
		// the base commit, under one plan key.
		first, _, _ := strings.Cut(w.err.String(), "\n")
		if want := fmt.Sprintf("implloop work: worker w%d started: plan.md at %s, 8 task(s), plan key ", i+1, base); !strings.HasPrefix(first, want) {
			t.Errorf("worker w%d's first line: %q, want %q...", i+1, first, want)
		}
	}
	calls := f.callLines()
	slices.Sort(calls)
	want := []string{"T001", "T002", "T003", "T004", "T005", "T006", "T007", "T008"}
	if !slices.Equal(calls, want) || ran != 8 {
		t.Fatalf("calls %v (want each task once), %d pushed", calls, ran)
	}
	// With --jobs too: no task is called ahead that a worker did.
	out, code, dir := f.fanIn("--jobs", "4")
	if code != 0 || !strings.Contains(out, "DONE 8/8") || !strings.Contains(out, "units: 0 live, 8 replayed") {
		t.Fatalf("fan-in exited %d:\n%s", code, out)
	}
	if got := f.callLines(); len(got) != 8 {
		t.Fatalf("the fan-in called the agent: %v", got)
	}
	for _, id := range want {
		b, err := os.ReadFile(filepath.Join(dir, "out-"+id+".txt"))
		if err != nil || string(b) != "task "+id+"\n" {
			t.Fatalf("out-%s.txt: %q, %v", id, b, err)
		}
	}
	checkJournalsUnder(scriptT{t}, f.dir)
}

// A worker killed with kill -9 in the middle of a task: once its lease
// (3 s) runs out, one other worker takes the task over; the agent is
// called once more than there are tasks.
func TestWorkKilledWorkerTakenOver(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(3))
	mark := filepath.Join(f.dir, "slow")
	slow := []string{"SLOW_TASK=T001", "SLOW_MARK=" + mark}
	a := f.start("k", slow, "--lease", "3s")
	pidFile := filepath.Join(mark, "pid")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.TrimSpace(string(b)) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first worker never started task T001:\n%s", a.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The worker and its agent die at once, as a pod does.
	must(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.cmd.Wait()
	b, _ := os.ReadFile(pidFile)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// The live workers keep leases of their own twice as long: a
	// worker keeps a claim only while a renewal (or its result's push)
	// gets through within its lease, and on a loaded machine one push
	// has taken over a second (CI lost T001 to a second takeover with
	// 3 s). They take k's claim over after 6 s (they read k's lease only
	// once a claim stood still for their own), not 3.
	w1 := f.start("b", slow, "--lease", "6s")
	w2 := f.start("c", slow, "--lease", "6s")
	f.wait(w1)
	f.wait(w2)
	took := strings.Count(w1.err.String()+w2.err.String(), "task T001: taken over")
	calls := f.callLines()
	slices.Sort(calls)
	if want := []string{"T001", "T001", "T002", "T003"}; !slices.Equal(calls, want) || took != 1 {
		t.Fatalf("calls %v, want %v; taken over %d time(s)\n%s\n%s", calls, want, took, w1.err.String(), w2.err.String())
	}
	out, code, _ := f.fanIn()
	if code != 0 || !strings.Contains(out, "units: 0 live, 3 replayed") || len(f.callLines()) != 4 {
		t.Fatalf("fan-in exited %d:\n%s", code, out)
	}
}

// A worker that stalls (SIGSTOP) past its lease while its task runs: a
// second worker takes the task over and pushes it; when the first wakes,
// its renewal finds the claim taken, it stops the task and pushes
// nothing. One result on the remote: the two never both finish it.
func TestWorkStalledWorkerLosesLease(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(1))
	mark := filepath.Join(f.dir, "slow")
	slow := []string{"SLOW_TASK=T001", "SLOW_MARK=" + mark}
	a := f.start("s1", slow, "--lease", "3s")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(mark, "pid")); err == nil && strings.TrimSpace(string(b)) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first worker never started task T001:\n%s", a.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	b := f.start("s2", slow, "--lease", "3s")
	f.wait(b)
	must(t, a.cmd.Process.Signal(syscall.SIGCONT))
	f.wait(a)
	if e := a.err.String(); !strings.Contains(e, "task T001: its lease was taken over") {
		t.Fatalf("the stalled worker did not see its lease taken:\n%s", e)
	}
	if e := b.err.String(); !strings.Contains(e, "task T001: taken over") || !strings.Contains(e, "task T001: pushed run") {
		t.Fatalf("the second worker did not take the task over:\n%s", e)
	}
	if refs := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/records/*"); strings.Count(refs, "\n") != 1 {
		t.Fatalf("records on the remote: %q", refs)
	}
}

// A worker stopped with Ctrl-C (SIGINT) in the middle of a task gives its
// claim up (deleted by compare-and-swap on its lease): another worker
// takes the task at once, not after the lease. It exits 130.
func TestWorkInterruptReleasesClaim(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(1))
	mark := filepath.Join(f.dir, "slow")
	w := f.start("w", []string{"SLOW_TASK=T001", "SLOW_MARK=" + mark})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(mark, "pid")); err == nil && strings.TrimSpace(string(b)) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never started task T001:\n%s", w.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if refs := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*"); !strings.Contains(refs, "/T001") {
		t.Fatalf("no claim while the task runs: %q", refs)
	}
	must(t, w.cmd.Process.Signal(os.Interrupt))
	err := w.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("worker: %v, want exit %d\n%s", err, exitInterrupted, w.err.String())
	}
	if refs := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*"); refs != "" {
		t.Fatalf("the claim is still there: %q", refs)
	}
}

// Ctrl-C while the claim push is under way, the server having taken it
// (its post-receive hook still running, as a slow link's answer would
// be): the push is cut off and the worker does not know it holds the
// claim, but gives it up all the same (by compare-and-swap on its lease),
// rather than leaving the task to nobody for a whole lease. It exits 130.
func TestWorkInterruptDuringClaimPush(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(1))
	must(t, os.WriteFile(filepath.Join(f.dir, "srv", "shared.git", "hooks", "post-receive"), []byte("#!/bin/sh\ngrep -q 'claims/.*/T001$' && sleep 5\nexit 0\n"), 0o755))
	w := f.start("w", nil)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*"), "/T001") {
		if time.Now().After(deadline) {
			t.Fatalf("never claimed:\n%s", w.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, w.cmd.Process.Signal(os.Interrupt))
	err := w.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("worker: %v, want exit %d\n%s", err, exitInterrupted, w.err.String())
	}
	if refs := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*"); refs != "" {
		t.Fatalf("the claim is still there: %q\n%s", refs, w.err.String())
	}
	if n := len(f.callLines()); n != 0 {
		t.Fatalf("%d agent calls", n)
	}
}

// A chain of three (each depends on the one before) runs in order across
// three workers: no task starts before the result of the one it depends
// on is on the remote, and it starts from that result.
func TestWorkChainInOrder(t *testing.T) {
	t.Parallel()
	f := newFleet(t, chainPlan)
	var ws []*runningWorker
	for i := 1; i <= 3; i++ {
		ws = append(ws, f.start(fmt.Sprintf("w%d", i), []string{"CHAIN=1"}))
	}
	for _, w := range ws {
		f.wait(w)
	}
	if calls := f.callLines(); !slices.Equal(calls, []string{"1", "2", "3"}) {
		t.Fatalf("calls %v, want 1 2 3 in order (missing-N: a task started without N's work; early-N: before its dependency's result was pushed)", calls)
	}
	f.fanInReplays(3)
}

// A task whose gate keeps failing: its worker pushes the blocked
// attempts; the fan-in, with no agent call, blocks at it with BLOCKED.md,
// as a serial run does (PARTIAL: the other task is done). The tasks that
// wait for it, directly (T003) or through another (T004), are run by no
// worker, and the workers end instead of waiting for them.
func TestWorkBlockedTask(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n- [ ] T001 [P] write out-T001.txt\n- [ ] T002 [P] write out-T002.txt\n\n  ```verify\n  false\n  ```\n" +
		"- [ ] T003 write out-T003.txt\n- [ ] T004 write out-T004.txt\n"
	f := newFleet(t, plan)
	w1 := f.start("w1", nil, "--max-attempts", "2")
	w2 := f.start("w2", nil, "--max-attempts", "2")
	f.wait(w1)
	f.wait(w2)
	for _, w := range []*runningWorker{w1, w2} {
		if out := w.out.String(); !strings.Contains(out, "blocked: T002") || !strings.Contains(out, "not run by any worker: T003, T004") ||
			!strings.Contains(out, "task T004 waits for task T003, which waits for task T002, which ended blocked") {
			t.Fatalf("a worker does not say T002 blocked, and T003 and T004 not run:\n%s", out)
		}
	}
	calls := f.callLines()
	slices.Sort(calls)
	if !slices.Equal(calls, []string{"T001", "T002", "T002"}) {
		t.Fatalf("calls %v", calls)
	}
	out, code, dir := f.fanIn("--max-attempts", "2")
	if code != exitPartial || !strings.Contains(out, "BLOCKED: task T002: the gate failed on 2 attempt(s)") || !strings.Contains(out, "PARTIAL 1/4") {
		t.Fatalf("fan-in exited %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "BLOCKED.md")); err != nil {
		t.Fatalf("no BLOCKED.md: %v\n%s", err, out)
	}
	if len(f.callLines()) != 3 {
		t.Fatalf("the fan-in called the agent: %v\n%s", f.callLines(), out)
	}
	// A serial run of the plan blocks the same way.
	serial := f.clone("serial")
	c := f.cmd(serial, "implloop", append(append([]string{"run", "plan.md", "--fresh"}, f.agentFlags()...), "--max-attempts", "2")...)
	sout, _ := c.CombinedOutput()
	if c.ProcessState.ExitCode() != exitPartial || !strings.Contains(string(sout), "BLOCKED: task T002: the gate failed on 2 attempt(s)") {
		t.Fatalf("serial run:\n%s", sout)
	}
}

// The server refuses the first push of a result (a blip: here a
// pre-receive hook): the worker, whose claim still holds its lease, pushes
// it again, and the task is done once.
func TestWorkPushRetried(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(1))
	f.preReceive("#!/bin/sh\nif grep -q refs/implloop/records/ && mkdir \"$0.once\" 2>/dev/null; then echo 'the server is busy' >&2; exit 1; fi\n")
	w := f.start("w", nil)
	f.wait(w)
	if e := w.err.String(); !strings.Contains(e, "task T001: the push of run") || !strings.Contains(e, "trying again in 1s") || !strings.Contains(e, "task T001: pushed run") {
		t.Fatalf("the worker did not push again:\n%s", e)
	}
	if refs := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/records/*"); strings.Count(refs, "\n") != 1 {
		t.Fatalf("records on the remote: %q", refs)
	}
	if n := len(f.callLines()); n != 1 {
		t.Fatalf("%d calls", n)
	}
}

// A result is pushed while the worker goes on to its next task, but no
// agent is called while that push is refused: with every result refused,
// a worker with three tasks to take pays for one, gives up the claim it
// took meanwhile untouched, and stops with the push's error.
func TestWorkRefusedPushStopsBeforeNextCall(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(3))
	f.preReceive("#!/bin/sh\nif grep -q refs/implloop/records/; then echo 'read-only for results' >&2; exit 1; fi\n")
	w := f.start("w", nil)
	if err := w.cmd.Wait(); err == nil {
		t.Fatalf("the worker ended well:\n%s", w.err.String())
	}
	if calls := f.callLines(); len(calls) != 1 {
		t.Fatalf("calls %v, want one\n%s", calls, w.err.String())
	}
	if claims := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*"); claims != "" {
		t.Fatalf("claims left on the remote: %q\n%s", claims, w.err.String())
	}
}

// --max-cost caps what a worker spends over all its tasks, not per task
// (each task is a run of its own): at $0.40 a task and --max-cost 1, it
// stops after the third, and leaves the fourth to the others.
func TestWorkMaxCost(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(4))
	w := f.start("w", []string{"COST=0.4"}, "--max-cost", "1")
	f.wait(w)
	if n := len(f.callLines()); n != 3 {
		t.Fatalf("%d calls, want 3\n%s", n, w.err.String())
	}
	if out := w.out.String(); !strings.Contains(out, "stopped: the worker's live calls spent $1.20, and --max-cost is $1.00") {
		t.Fatalf("the worker does not say it stopped at its cap:\n%s", out)
	}
}

// What arrives through the remote is hostile until signed by an allowed
// signer: a worker whose runs are signed by a key nobody else allows does
// the plan first, writing a backdoor. An honest
// worker does not take its results: it does each task again (a claim
// moved from the untrusted records by compare-and-swap), and the fan-in
// replays only the honest work, no agent call. No backdoor reaches the
// fan-in's tree.
func TestWorkUntrustedResultDoneAgain(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n## Task 1: first\n\nWrite out-1.txt.\n\n## Task 2: second\n\nDepends on: 1\n\nWrite out-2.txt.\n"
	f := newFleet(t, plan)
	rogue := f.rogue()
	c := f.cmd(rogue, "implloop", append([]string{"work", "plan.md", "--remote", "origin", "--id", "rogue"}, f.agentFlags()...)...)
	c.Env = append(c.Env, "EVIL=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("rogue worker: %v\n%s", err, out)
	}
	h := f.start("honest", nil)
	f.wait(h)
	if !strings.Contains(h.err.String(), "task 1: taken over (its result (run ") || !strings.Contains(h.err.String(), "is not trusted here") {
		t.Fatalf("the honest worker did not do task 1 again:\n%s", h.err.String())
	}
	out, code, dir := f.fanIn()
	if code != 0 || !strings.Contains(out, "units: 0 live, 2 replayed") || strings.Contains(out, "run "+"rogue") {
		t.Fatalf("fan-in exited %d:\n%s", code, out)
	}
	for _, id := range []string{"1", "2"} {
		if b, err := os.ReadFile(filepath.Join(dir, "out-"+id+".txt")); err != nil || strings.Contains(string(b), "BACKDOOR") {
			t.Fatalf("out-%s.txt: %q, %v", id, b, err)
		}
	}
	calls := f.callLines()
	slices.Sort(calls)
	if !slices.Equal(calls, []string{"1", "1", "2", "2"}) {
		t.Fatalf("calls %v", calls)
	}
}

// Two workers race for the same claim, round after round: exactly one
// compare-and-swap push wins each, and the claim holds the winner's lease.
// On git daemon: the smart HTTP server's CGI process per request made a
// round cost twice as much.
func TestWorkClaimRace(t *testing.T) {
	t.Parallel()
	f := newFleetOn(t, independentPlan(1), serveGitDaemon)
	dirs := []string{f.clone("r1"), f.clone("r2")}
	// The pushes are made from this process, as a worker makes them.
	ctx := context.Background()
	var sd [2]cache.Dirs
	for i, d := range dirs {
		var err error
		sd[i], err = cache.StateDir(d)
		must(t, err)
	}
	empty, err := travel.EmptyTree(ctx, sd[0])
	must(t, err)
	for round := 0; round < *claimRounds; round++ {
		ref := travel.ClaimRef("race", strconv.Itoa(round))
		var wg sync.WaitGroup
		wins := make([]bool, 2)
		leases := make([]string, 2)
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range 2 {
			lease, err := travel.NewLease(ctx, sd[i], empty, "race", strconv.Itoa(round), fmt.Sprintf("w%d", i), round, time.Now(), time.Minute)
			must(t, err)
			leases[i] = lease
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := travel.CASPush(ctx, dirs[i], "origin", travel.RefUpdate{Ref: ref, New: lease})
				wins[i] = err == nil
				if err != nil && !strings.Contains(err.Error(), travel.ErrCASFailed.Error()) {
					errs[i] = err
				}
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			must(t, err)
		}
		if wins[0] == wins[1] {
			t.Fatalf("round %d: wins %v", round, wins)
		}
		winner := leases[0]
		if wins[1] {
			winner = leases[1]
		}
		refs, err := travel.RemoteRefs(ctx, dirs[0], "origin", ref)
		must(t, err)
		if refs[ref] != winner {
			t.Fatalf("round %d: the claim holds %s, the winner pushed %s", round, refs[ref], winner)
		}
	}
}

// childrenCPU is the CPU of this process's children that ended and were
// waited for, with their own children's (getrusage RUSAGE_CHILDREN): the
// workers, and the git daemon serving each connection (serveGitDaemon)
// with the processes it ran.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gitProcessCost is what one git process costs the machine now: the
// median wall time of 21 `git --version`. BenchmarkWorkers reports it
// beside x_ideal, which follows it: a virtual machine's host may slow it
// by half for a while, and the fleet, bound by CPU on two cores, with it
// (docs/scale-out.md has figures).
func gitProcessCost(t testing.TB) time.Duration {
	t.Helper()
	var d []time.Duration
	for range 21 {
		t0 := time.Now()
		must(t, exec.Command("git", "--version").Run())
		d = append(d, time.Since(t0))
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// scriptT is a *testing.T as testscript.T (checkJournalsUnder).
type scriptT struct{ *testing.T }

func (t scriptT) Run(name string, f func(testscript.T)) {
	t.T.Run(name, func(t *testing.T) { f(scriptT{t}) })
}
func (t scriptT) Verbose() bool { return testing.Verbose() }

// BenchmarkWorkers: 8 workers, 32 independent tasks whose agent takes
// 2 s each. The reference is the ideal: 32 tasks / 8 workers x 2 s = 8 s,
// no protocol at all. Reported: the wall time as a multiple of the ideal
// (x_ideal, at most 1.3 wanted), what each round of tasks cost over 2 s
// (ms_overhead/task: on one machine the 8 workers share its cores), and
// the CPU of the workers and what they started (ms_cpu/task) and of the
// server (ms_server_cpu/task: each connection's git daemon and what it
// ran, serveGitDaemon), which all share the machine's cores, and the
// protocol's own cost per task for one worker alone (ms_protocol/task:
// look, claim, input, the run's boundaries and journal; the records,
// signing and push of each result overlap the next task's claim and the
// start of its run, the last one's counts whole, as does the worker's
// start) on a loopback remote (git daemon: the tests' smart HTTP server
// starts a CGI process per request, which a hosting service does not);
// and, as the machine's speed at the time, what a git process costs it
// (ms_git_process, gitProcessCost).
func BenchmarkWorkers(b *testing.B) {
	const workers, tasks, agent = 8, 32, 2 * time.Second
	ideal := time.Duration(tasks/workers) * agent
	for b.Loop() {
		b.StopTimer()
		f := newFleetOn(b, independentPlan(tasks), serveGitDaemon)
		var dirs []string
		for i := 1; i <= workers; i++ {
			dirs = append(dirs, f.clone(fmt.Sprintf("w%d", i)))
		}
		b.ReportMetric(float64(gitProcessCost(b).Microseconds())/1000, "ms_git_process")
		b.StartTimer()
		t0, cpu0 := time.Now(), childrenCPU()
		var ws []*exec.Cmd
		errs := make([]bytes.Buffer, len(dirs))
		for i, dir := range dirs {
			args := append([]string{"work", "plan.md", "--remote", "origin", "--id", fmt.Sprintf("w%d", i+1)}, f.agentFlags()...)
			c := f.cmd(dir, "implloop", args...)
			c.Env = append(c.Env, "AGENT_SLEEP=2")
			c.Stderr = &errs[i]
			must(b, c.Start())
			ws = append(ws, c)
		}
		var cpu time.Duration // the workers' and what they waited for (git, the agents): not the server's
		for i, c := range ws {
			if err := c.Wait(); err != nil {
				b.Fatalf("worker w%d: %v\n%s", i+1, err, errs[i].String())
			}
			cpu += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		}
		wall := time.Since(t0)
		b.StopTimer()
		f.stop() // the server's last connections end, and are counted
		srv := childrenCPU() - cpu0 - cpu
		if n := len(f.callLines()); n != tasks {
			b.Fatalf("%d calls for %d tasks", n, tasks)
		}
		b.ReportMetric(wall.Seconds()/ideal.Seconds(), "x_ideal")
		b.ReportMetric(float64((wall-ideal).Milliseconds())/float64(tasks/workers), "ms_overhead/task")
		b.ReportMetric(float64(cpu.Milliseconds())/tasks, "ms_cpu/task")
		b.ReportMetric(float64(srv.Milliseconds())/tasks, "ms_server_cpu/task")

		// The protocol alone: one worker, 8 tasks whose agent returns at
		// once (its process and the gate's stay in): per task, the look,
		// the claim, the run's boundaries and records, signing, the push;
		// and what each task past the eighth adds (16 tasks), the worker's
		// start and its last push left out.
		solo := func(n int) time.Duration {
			g := newFleetOn(b, independentPlan(n), serveGitDaemon)
			dir := g.clone("solo")
			t1 := time.Now()
			g.run(dir, "implloop", append([]string{"work", "plan.md", "--remote", "origin", "--id", "solo"}, g.agentFlags()...)...)
			return time.Since(t1)
		}
		eight, sixteen := solo(8), solo(16)
		b.ReportMetric(float64(eight.Milliseconds())/8, "ms_protocol/task")
		b.ReportMetric(float64((sixteen-eight).Milliseconds())/8, "ms_protocol_next/task")
		b.StartTimer()
	}
}
