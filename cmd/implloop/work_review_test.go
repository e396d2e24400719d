package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/runid"
	"github.com/implloop/implloop/travel"
	"github.com/implloop/implloop/worker"
)

// Adversarial review of implloop work (issue 32): each test tries to
// break one of the protocol's guarantees with real worker processes in
// clones of a real git server on loopback (the fleet of work_test.go).

// planKeyOf is the key the workers of f name the plan's claims with: the
// plan as committed at the remote's main.
func (f *fleet) planKeyOf(dir string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "plan.md"))
	must(f.t, err)
	sum := sha256.Sum256(b)
	base := strings.TrimSpace(f.run(dir, "git", "rev-parse", "HEAD"))
	return worker.PlanKey("plan.md", hex.EncodeToString(sum[:]), base)
}

// forge writes obj (a blob of size n random bytes when obj is "") in dir
// and pushes it to refs, as anyone with push access to the remote can.
func (f *fleet) forge(dir, obj string, n int, refs ...string) string {
	f.t.Helper()
	if obj == "" {
		p := filepath.Join(f.dir, "garbage-"+randName())
		b := make([]byte, n)
		_, _ = rand.Read(b)
		must(f.t, os.WriteFile(p, b, 0o644))
		obj = strings.TrimSpace(f.run(dir, "git", "hash-object", "-w", p))
	} else {
		f.run(dir, "git", "fetch", "-q", "origin", "+refs/implloop/*:refs/review/*")
	}
	args := []string{"push", "-q", "--force", "origin"}
	for _, r := range refs {
		args = append(args, obj+":"+r)
	}
	// A forced push still expects the value the server advertised: a
	// live worker's renewal landing in between makes the server refuse
	// it ("cannot lock ref"), which on a loaded machine happens. Pushed
	// again, as whoever forges would.
	for try := 1; ; try++ {
		out, err := f.cmd(dir, "git", args...).CombinedOutput()
		if err == nil {
			return obj
		}
		if try == 10 || !strings.Contains(string(out), "cannot lock ref") {
			f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func randName() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sortedCalls are the agent's calls, sorted.
func (f *fleet) sortedCalls() []string {
	c := f.callLines()
	slices.Sort(c)
	return c
}

// waitClaim waits until the remote holds a claim of task.
func (f *fleet) waitClaim(t *testing.T, task string, w *runningWorker) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*"), "/"+task+"\n") {
		if time.Now().After(deadline) {
			t.Fatalf("task %s was never claimed:\n%s", task, w.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A gate slower than several leases: the worker running it keeps renewing
// its lease (every third of it) while the gate runs, so the other live
// worker never takes the task over; the task is run once.
func TestReviewWorkSlowGateKeepsLease(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n- [ ] T001 write out-T001.txt\n\n  ```verify\n  sleep 5\n  test -f out-T001.txt\n  ```\n"
	f := newFleet(t, plan)
	w1 := f.start("w1", nil, "--lease", "2s")
	w2 := f.start("w2", nil, "--lease", "2s")
	f.wait(w1)
	f.wait(w2)
	logs := w1.err.String() + w2.err.String()
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001"}) || strings.Contains(logs, "taken over") {
		t.Fatalf("calls %v (want T001 once, never taken over)\n%s", calls, logs)
	}
}

// Workers started with different --lease values: the lease period is
// each worker's own flag, not written in the claim, so a worker with a
// short lease takes over the live task of a worker with a long one (whose
// renewals come every third of its own, longer, lease): the task is run,
// and paid for, twice, by two live workers.
func TestReviewWorkMixedLeasesRunTwice(t *testing.T) {
	// Found in review; fixed: the claim's lease names its period, and watchers go by it.
	t.Parallel()
	f := newFleet(t, independentPlan(1))
	slow := f.start("slow", []string{"AGENT_SLEEP=4"}, "--lease", "1m")
	f.waitClaim(t, "T001", slow)
	quick := f.start("quick", nil, "--lease", "1s")
	f.wait(quick)
	f.wait(slow)
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001"}) {
		t.Fatalf("calls %v: two live workers ran T001\n%s\n%s", calls, slow.err.String(), quick.err.String())
	}
}

// A claim that points at garbage (a 3 MB blob pushed by anyone with push
// access): never fetched, it reads as a claim whose worker stopped, and
// is taken over by compare-and-swap once unchanged for a lease. The task
// is done once, and the fan-in replays everything.
func TestReviewWorkGarbageClaimTakenOver(t *testing.T) {
	t.Parallel()
	// On git daemon: the tests' smart HTTP server (net/http/cgi) takes
	// no chunked request body, which a push of 3 MB is.
	f := newFleetOn(t, independentPlan(2), serveGitDaemon)
	a := filepath.Join(f.dir, "a")
	key := f.planKeyOf(a)
	blob := f.forge(a, "", 3<<20, travel.ClaimRef(key, "T001"))
	// 3 s: the worker runs both tasks, and keeps each claim only while
	// a renewal's push gets through within its lease (on a loaded
	// machine a push can take over a second).
	w := f.start("w", nil, "--lease", "3s")
	f.wait(w)
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001", "T002"}) || !strings.Contains(w.err.String(), "task T001: taken over") {
		t.Fatalf("calls %v, want each task once, T001 taken over\n%s", calls, w.err.String())
	}
	refs := f.run(f.dir, "git", "ls-remote", f.url, travel.ClaimRef(key, "T001"))
	if strings.Contains(refs, blob) {
		t.Fatalf("the claim still holds the garbage: %s", refs)
	}
	f.fanInReplays(2)
}

// One garbage records ref on the remote (a blob under a valid run id,
// named by no claim), pushed by anyone with push access: a worker that
// needs a dependency's result pulls, and the pull refused all records,
// so the worker stopped with an error instead of building on the trusted
// result of task 1 (every worker of the fleet did the same: the plan
// stalled; the fan-in's pull failed the same way).
func TestReviewWorkGarbageRecordsRefStallsWorkers(t *testing.T) {
	// Found in review; fixed: a worker's pull leaves out (and names) the
	// records it refuses; and now pulls only the runs claims name, so it
	// never fetches this one (TestWorkRefusedResultDoneAgain: one a claim
	// names).
	t.Parallel()
	plan := "# Plan\n\n## Task 1: first\n\nWrite out-1.txt.\n\n## Task 2: second\n\nDepends on: 1\n\nWrite out-2.txt.\n"
	f := newFleet(t, plan)
	a := filepath.Join(f.dir, "a")
	f.forge(a, "", 1024, travel.RecordsRefPrefix+runid.New(time.Now().Add(-time.Hour)))
	w1 := f.start("w1", nil)
	w2 := f.start("w2", nil)
	f.wait(w1)
	f.wait(w2)
	if calls := f.callLines(); !slices.Equal(calls, []string{"1", "2"}) {
		t.Fatalf("calls %v\n%s\n%s", calls, w1.err.String(), w2.err.String())
	}
	if logs := w1.err.String() + w2.err.String(); strings.Contains(logs, "refused "+travel.RecordsRefPrefix) {
		t.Fatalf("a worker pulled records no claim names:\n%s", logs)
	}
}

// A claim forged by someone with push access but no allowed key: an
// unsigned run of the plan (with a backdoor) pushed, and the claims of
// both tasks moved to its records. The honest worker trusts neither
// result: it does both tasks again, task 2 from its own task 1, and the
// fan-in replays only its work (no agent call, no backdoor).
func TestReviewWorkUnsignedForgedClaims(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n## Task 1: first\n\nWrite out-1.txt.\n\n## Task 2: second\n\nDepends on: 1\n\nWrite out-2.txt.\n"
	f := newFleet(t, plan)
	rogue := f.clone("rogue")
	f.run(rogue, "git", "config", "implloop.signRuns", "false")
	f.run(rogue, "git", "config", "user.signingKey", "/nonexistent")
	c := f.cmd(rogue, "implloop", append([]string{"run", "plan.md"}, f.agentFlags()...)...)
	c.Env = append(c.Env, "EVIL=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("rogue run: %v\n%s", err, out)
	}
	f.run(rogue, "implloop", "push", "origin")
	recs := strings.Fields(f.run(rogue, "git", "ls-remote", "origin", travel.RecordsRefPrefix+"*"))
	if len(recs) != 2 {
		t.Fatalf("the rogue's records on the remote: %v", recs)
	}
	key := f.planKeyOf(rogue)
	f.forge(rogue, recs[0], 0, travel.ClaimRef(key, "1"), travel.ClaimRef(key, "2"))
	h := f.start("honest", nil)
	f.wait(h)
	if calls := f.callLines(); !slices.Equal(calls, []string{"1", "2", "1", "2"}) {
		t.Fatalf("calls %v: the honest worker did not do both tasks again\n%s", calls, h.err.String())
	}
	_, dir := f.fanInReplays(2)
	for _, id := range []string{"1", "2"} {
		if b, err := os.ReadFile(filepath.Join(dir, "out-"+id+".txt")); err != nil || strings.Contains(string(b), "BACKDOOR") {
			t.Fatalf("out-%s.txt: %q, %v", id, b, err)
		}
	}
}

// A claim moved to the records of a trusted run that did another task
// (T002's claim to T001's run): that run has no result of T002, so T002
// is not done. A worker should do it (or at least say it is left); it
// must not count it as settled and end silently.
func TestReviewWorkClaimOnOtherTasksRun(t *testing.T) {
	// Found in review; fixed: a claim's result is pulled before it counts as settled, and done again once when it is not a trusted result of the task.
	t.Parallel()
	f := newFleet(t, independentPlan(2))
	first := f.start("first", []string{"COST=1"}, "--max-cost", "1")
	f.wait(first)
	calls := f.callLines()
	if len(calls) != 1 {
		t.Fatalf("calls %v", calls)
	}
	// (Which task the first worker takes is its spread: worker.pick.)
	done, other := calls[0], map[string]string{"T001": "T002", "T002": "T001"}[calls[0]]
	a := filepath.Join(f.dir, "a")
	key := f.planKeyOf(a)
	claims := f.run(a, "git", "ls-remote", "origin", travel.ClaimRef(key, done))
	rec, _, _ := strings.Cut(claims, "\t")
	f.forge(a, rec, 0, travel.ClaimRef(key, other))
	w := f.start("w", nil)
	f.wait(w)
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001", "T002"}) {
		t.Fatalf("calls %v: no worker did %s\n%s%s", calls, other, w.out.String(), w.err.String())
	}
	// The summary says which task was done again, and why.
	if out := w.out.String(); !strings.Contains(out, "task "+other) || !strings.Contains(out, "done again: its result (run ") || !strings.Contains(out, "is not a result of task "+other) {
		t.Fatalf("the summary does not say %s was done again, and why:\n%s", other, out)
	}
}

// The remote takes claims but refuses every result (a pre-receive hook on
// records): the worker tries the push 4 times, then stops with a user
// error (no panic), having pushed nothing; it gives its claim up.
func TestReviewWorkPushRejectedForever(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(1))
	f.preReceive("#!/bin/sh\nif grep -q refs/implloop/records/; then echo 'read-only for results' >&2; exit 1; fi\n")
	w := f.start("w", nil)
	err := w.cmd.Wait()
	var ee *exec.ExitError
	stderr := w.err.String()
	if ee, _ = err.(*exec.ExitError); ee == nil || ee.ExitCode() == 0 {
		t.Fatalf("worker: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "implloop: error:") || strings.Contains(stderr, "panic") || strings.Count(stderr, "trying again") != 3 {
		t.Fatalf("stderr:\n%s", stderr)
	}
	if refs := f.run(f.dir, "git", "ls-remote", f.url, travel.RecordsRefPrefix+"*"); refs != "" {
		t.Fatalf("records on the remote: %q", refs)
	}
	// The claim is given up (another worker takes the task at once), and
	// the lines carry none of git's sideband padding.
	if claims := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*"); claims != "" || !strings.Contains(stderr, "its claim was given up") {
		t.Fatalf("claims on the remote: %q\n%s", claims, stderr)
	}
	if strings.Contains(stderr, "results  ") || strings.Contains(stderr, "\x1b[K") {
		t.Fatalf("sideband padding in:\n%s", stderr)
	}
	t.Logf("stderr:\n%s", stderr)
}

// Two tasks each pass their own gate from the base, but the second's gate
// fails once the first's work is merged in: the fan-in runs that gate on
// the merged tree and does not call the plan done.
func TestReviewFanInGateOnMergedTree(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n- [ ] T001 [P] write out-T001.txt\n- [ ] T002 [P] write out-T002.txt\n\n  ```verify\n  test -f out-T002.txt\n  test ! -f out-T001.txt\n  ```\n"
	f := newFleet(t, plan)
	w1 := f.start("w1", nil)
	w2 := f.start("w2", nil)
	f.wait(w1)
	f.wait(w2)
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001", "T002"}) {
		t.Fatalf("calls %v\n%s%s", calls, w1.err.String(), w2.err.String())
	}
	out, code, _ := f.fanIn("--max-attempts", "2")
	if code == 0 || strings.Contains(out, "DONE 2/2") {
		t.Fatalf("the fan-in did not run T002's gate on the merged tree (exit %d):\n%s", code, out)
	}
}

// A worker killed with kill -9 mid-task while three others wait: exactly
// one of them takes the task over (compare-and-swap on the stale lease).
func TestReviewWorkKilledTakenOverByOneOfThree(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(1))
	mark := filepath.Join(f.dir, "slow")
	slow := []string{"SLOW_TASK=T001", "SLOW_MARK=" + mark}
	k := f.start("k", slow, "--lease", "1s")
	pidFile := filepath.Join(mark, "pid")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.TrimSpace(string(b)) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never started:\n%s", k.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, k.cmd.Process.Kill())
	_ = k.cmd.Wait()
	killAgent(pidFile)
	var ws []*runningWorker
	// k's claim names its 1 s lease, which they go by once it stood
	// still for their own; their own, renewed while the one that took
	// over runs and pushes, leave room for a slow push on a loaded
	// machine (CI lost a task to a second takeover with 3 s).
	for _, name := range []string{"b", "c", "d"} {
		ws = append(ws, f.start(name, slow, "--lease", "6s"))
	}
	logs := ""
	for _, w := range ws {
		f.wait(w)
		logs += w.err.String()
	}
	if n := strings.Count(logs, "task T001: taken over"); n != 1 || !slices.Equal(f.sortedCalls(), []string{"T001", "T001"}) {
		t.Fatalf("taken over %d time(s), calls %v\n%s", n, f.callLines(), logs)
	}
}

func killAgent(pidFile string) {
	b, _ := os.ReadFile(pidFile)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// startIn starts a worker in the existing clone dir.
func (f *fleet) startIn(dir, name string, env []string, args ...string) *runningWorker {
	f.t.Helper()
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

// A worker whose result the remote refused (it stops with an error) is
// started again in the same clone once the remote takes pushes: its
// journal has the run it paid for, so the task replays from it (no second
// agent call) and the result is pushed.
func TestReviewWorkRestartAfterFailedPushPaysOnce(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(1))
	hook := f.preReceive("#!/bin/sh\nif grep -q refs/implloop/records/; then echo 'read-only for results' >&2; exit 1; fi\n")
	w := f.start("w", nil, "--lease", "3s")
	if err := w.cmd.Wait(); err == nil {
		t.Fatalf("the worker pushed through the hook:\n%s", w.err.String())
	}
	must(t, os.Remove(hook))
	again := f.startIn(filepath.Join(f.dir, "w"), "w", nil, "--lease", "3s")
	f.wait(again)
	if calls := f.callLines(); len(calls) != 1 || !strings.Contains(again.err.String(), "task T001: pushed run") {
		t.Fatalf("calls %v (want 1: the restart replays what it paid for)\n%s", calls, again.err.String())
	}
}

// A ref lock the server holds for a moment (a concurrent update, a
// pack-refs on the server) makes one renewal fail with "cannot lock ref":
// nobody took the claim over, and the lease has not run out, so the task
// goes on and is run once.
func TestReviewWorkRenewalLockBlip(t *testing.T) {
	// Found in review; fixed on workers by bf6956e (renew asks the remote).
	t.Parallel()
	f := newFleetOn(t, independentPlan(1), serveGitDaemon)
	w := f.start("w", []string{"AGENT_SLEEP=4"}, "--lease", "3s")
	f.waitClaim(t, "T001", w)
	key := f.planKeyOf(filepath.Join(f.dir, "a"))
	lock := filepath.Join(f.dir, "srv", "shared.git", travel.ClaimRef(key, "T001")+".lock")
	must(t, os.WriteFile(lock, nil, 0o644))
	time.Sleep(1500 * time.Millisecond) // one renewal (every 1 s) meets the lock; less than a lease
	must(t, os.Remove(lock))
	f.wait(w)
	if calls := f.callLines(); len(calls) != 1 {
		t.Fatalf("calls %v: the task was stopped for a lock and done again\n%s", calls, w.err.String())
	}
}

// The server refuses a result's push twice (a blip): the worker waits
// 1 s, then 2 s, before pushing again; its lease is not renewed while it
// waits, so with a lease shorter than that wait another live worker
// takes the task over and runs it again, though the first worker was
// alive and held the result.
func TestReviewWorkPushRetryOutlivesLease(t *testing.T) {
	// Found in review; fixed: the lease is renewed until the push landed.
	t.Parallel()
	f := newFleetOn(t, independentPlan(1), serveGitDaemon)
	f.preReceive("#!/bin/sh\ngrep -q refs/implloop/records/ || exit 0\nn=$(cat \"$0.n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0.n\"\n[ $n -gt 2 ] || { echo busy >&2; exit 1; }\n")
	w1 := f.start("w1", nil, "--lease", "2s")
	f.waitClaim(t, "T001", w1)
	w2 := f.start("w2", nil, "--lease", "2s")
	f.wait(w1)
	f.wait(w2)
	if calls := f.callLines(); len(calls) != 1 {
		t.Fatalf("calls %v: two live workers ran T001\n%s\n%s", calls, w1.err.String(), w2.err.String())
	}
}

// rogueWorker runs `implloop work` to the end in a clone that signs with
// a key of its own (which only its own allowed signers hold), writing a
// backdoor into every task's file.
func (f *fleet) rogueWorker() {
	f.t.Helper()
	rogue := f.rogue()
	c := f.cmd(rogue, "implloop", append([]string{"work", "plan.md", "--remote", "origin", "--id", "rogue"}, f.agentFlags()...)...)
	c.Env = append(c.Env, "EVIL=1")
	if out, err := c.CombinedOutput(); err != nil {
		f.t.Fatalf("rogue worker: %v\n%s", err, out)
	}
}

// A rogue worker (signing with a key nobody allows) does an independent
// plan first. No task waits for another, so the honest worker never pulls
// the rogue's records: it cannot tell they are not trusted, counts every
// task as done, and ends having done nothing; the fan-in then runs the
// whole plan live (it trusts nothing of the rogue's), with no worker's
// help and no word from the worker about it.
func TestReviewWorkUntrustedIndependentResultsSkipped(t *testing.T) {
	// Found in review; fixed: a claim's result is pulled before it counts as settled, and done again once when it is not a trusted result of the task.
	t.Parallel()
	f := newFleet(t, independentPlan(2))
	f.rogueWorker()
	h := f.start("honest", nil)
	f.wait(h)
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001", "T001", "T002", "T002"}) {
		t.Fatalf("calls %v: the honest worker did not do the rogue's tasks again\n%s%s", calls, h.out.String(), h.err.String())
	}
	if out := h.out.String(); strings.Count(out, "done again: its result (run ") != 2 || !strings.Contains(out, "is not trusted here") {
		t.Fatalf("the summary does not say which tasks were done again, and why:\n%s", out)
	}
}

// What holds when the workers skip a rogue's results: the fan-in trusts
// none of them: it runs every task live, and no backdoor reaches its tree.
func TestReviewFanInIgnoresRogueResults(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(2))
	f.rogueWorker()
	out, code, dir := f.fanIn()
	if code != 0 || !strings.Contains(out, "DONE 2/2") || strings.Contains(out, "replayed") && !strings.Contains(out, "0 replayed") {
		t.Fatalf("fan-in exited %d:\n%s", code, out)
	}
	for _, id := range []string{"T001", "T002"} {
		if b, err := os.ReadFile(filepath.Join(dir, "out-"+id+".txt")); err != nil || strings.Contains(string(b), "BACKDOOR") {
			t.Fatalf("out-%s.txt: %q, %v", id, b, err)
		}
	}
	if n := len(f.callLines()); n != 4 {
		t.Fatalf("%d calls, want the rogue's 2 and the fan-in's 2 live", n)
	}
}

// Two workers in one clone (one runner starting two): they share the
// clone's journal; each task is still done once, and the fan-in replays
// them all.
func TestReviewWorkTwoWorkersOneClone(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(4))
	w1 := f.start("w1", nil)
	w2 := f.startIn(filepath.Join(f.dir, "w1"), "w2", nil)
	err1, err2 := w1.cmd.Wait(), w2.cmd.Wait()
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001", "T002", "T003", "T004"}) {
		t.Fatalf("calls %v (%v, %v)\n%s\n%s", calls, err1, err2, w1.err.String(), w2.err.String())
	}
	if err1 != nil || err2 != nil {
		t.Logf("w1: %v, w2: %v\n%s\n%s", err1, err2, w1.err.String(), w2.err.String())
	}
	f.fanInReplays(4)
}

// A remote that takes no claim (read-only for implloop's refs): the
// worker stops at once with a user error, having called no agent.
func TestReviewWorkRemoteRejectsClaims(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(2))
	f.preReceive("#!/bin/sh\nif grep -q refs/implloop/; then echo 'no implloop refs here' >&2; exit 1; fi\n")
	w := f.start("w", nil)
	err := w.cmd.Wait()
	stderr := w.err.String()
	if ee, _ := err.(*exec.ExitError); ee == nil || ee.ExitCode() == 0 {
		t.Fatalf("worker: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "implloop: error:") || strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	if n := len(f.callLines()); n != 0 {
		t.Fatalf("%d agent calls without a claim", n)
	}
}

// Two independent tasks whose workers both write shared.txt: at the
// fan-in the second one's work conflicts with the first's, merged before
// it; that attempt runs again live on the merged tree (one agent call),
// as a call made ahead under --jobs does, and the plan is done.
func TestReviewFanInConflictRunsLive(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(2))
	must(t, os.WriteFile(filepath.Join(f.dir, "agent.sh"), []byte(workAgent+"echo \"$IMPLLOOP_TASK_ID\" > shared.txt\ncat \"$IMPLLOOP_PROMPT_FILE\" >> \"$CALLS.prompts\"\n"), 0o755))
	w1 := f.start("w1", nil)
	w2 := f.start("w2", nil)
	f.wait(w1)
	f.wait(w2)
	out, code, dir := f.fanIn()
	if code != 0 || !strings.Contains(out, "DONE 2/2") || len(f.callLines()) != 3 {
		t.Fatalf("fan-in exited %d, calls %v:\n%s", code, f.callLines(), out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "shared.txt")); err != nil || string(b) != "T002\n" {
		t.Fatalf("shared.txt: %q, %v", b, err)
	}
	// The live retry says it follows a conflict, not a failed agent.
	if !strings.Contains(out, "conflicted with the tasks merged before it") || strings.Contains(out, "after the agent failed") {
		t.Fatalf("the fan-in's retry is not labelled a conflict:\n%s", out)
	}
	// The live attempt was told why: the conflicting path.
	prompts, err := os.ReadFile(f.calls + ".prompts")
	must(t, err)
	if p := string(prompts); !strings.Contains(p, "conflicts with the tasks merged before it in shared.txt") {
		t.Fatalf("the live attempt's prompt does not name the conflict:\n%s", p)
	}
}

// Work laundered through a trusted worker: a worker whose allowed
// signers also hold the rogue's key builds task 2 on the rogue's task 1
// (a backdoor in out-1.txt) and signs its result with the fleet's key.
// The fan-in, which allows only the fleet's key, runs task 1 live, and
// takes nothing of the rogue's: no backdoor in its tree.
func TestReviewFanInLaunderedThroughTrustedWorker(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n## Task 1: first\n\nWrite out-1.txt.\n\n## Task 2: second\n\nDepends on: 1\n\nWrite out-2.txt.\n"
	f := newFleet(t, plan)
	rogue := f.rogue()
	c := f.cmd(rogue, "implloop", append([]string{"work", "plan.md", "--remote", "origin", "--id", "rogue", "--max-cost", "1"}, f.agentFlags()...)...)
	c.Env = append(c.Env, "EVIL=1", "COST=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("rogue worker: %v\n%s", err, out)
	}
	// The lax worker allows both keys.
	ci, err := os.ReadFile(filepath.Join(f.dir, "allowed"))
	must(t, err)
	rk, err := os.ReadFile(filepath.Join(f.dir, "rogue-key.allowed"))
	must(t, err)
	lax := filepath.Join(f.dir, "lax.allowed")
	must(t, os.WriteFile(lax, append(ci, rk...), 0o644))
	laxDir := f.clone("lax")
	f.run(laxDir, "git", "config", "gpg.ssh.allowedSignersFile", lax)
	w := f.startIn(laxDir, "lax", nil)
	f.wait(w)
	if calls := f.callLines(); !slices.Equal(calls, []string{"1", "2"}) {
		t.Fatalf("calls %v (the lax worker should build on the rogue's task 1)\n%s", calls, w.err.String())
	}
	out, code, dir := f.fanIn()
	if code != 0 || !strings.Contains(out, "DONE 2/2") {
		t.Fatalf("fan-in exited %d:\n%s", code, out)
	}
	if bad := f.run(dir, "sh", "-c", "grep -rl BACKDOOR --exclude-dir=.git . || true"); bad != "" {
		t.Fatalf("the rogue's work reached the fan-in: %s\n%s", bad, out)
	}
	if n := len(f.callLines()); n != 4 {
		t.Fatalf("calls %v: the fan-in should run both tasks live\n%s", f.callLines(), out)
	}
}

// A user pushes again from a worker's clone once it is done (implloop
// push, as after any run): the records refs on the remote must keep the
// commits the claims name, else every claim reads as a live one, and a
// worker still running would take the tasks over after a lease and do
// them again.
func TestReviewWorkLaterPushKeepsClaimsDone(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(2))
	w := f.start("w", nil)
	f.wait(w)
	before := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/*")
	f.run(filepath.Join(f.dir, "w"), "implloop", "push", "origin")
	after := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/*")
	recs := map[string]bool{}
	var claims []string
	for _, line := range strings.Split(after, "\n") {
		oid, ref, ok := strings.Cut(line, "\t")
		switch {
		case !ok:
		case strings.HasPrefix(ref, travel.RecordsRefPrefix):
			recs[oid] = true
		case strings.HasPrefix(ref, travel.ClaimsRefPrefix):
			claims = append(claims, oid)
		}
	}
	for _, c := range claims {
		if !recs[c] {
			t.Fatalf("a claim names records no records ref has any more\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}
	if len(claims) != 2 {
		t.Fatalf("claims: %v\n%s", claims, after)
	}
}

// Workers naming the plan differently (./plan.md; ../plan.md from a
// subdirectory) share its claims: each task is done once.
func TestReviewWorkPlanNamedDifferently(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(4))
	d1, d2 := f.clone("w1"), f.clone("w2")
	must(t, os.MkdirAll(filepath.Join(d2, "sub"), 0o755))
	c1 := f.cmd(d1, "implloop", append([]string{"work", "./plan.md", "--remote", "origin", "--id", "w1"}, f.agentFlags()...)...)
	c2 := f.cmd(filepath.Join(d2, "sub"), "implloop", append([]string{"work", "../plan.md", "--remote", "origin", "--id", "w2"}, f.agentFlags()...)...)
	var o1, o2 strings.Builder
	c1.Stderr, c2.Stderr = &o1, &o2
	must(t, c1.Start())
	must(t, c2.Start())
	e1, e2 := c1.Wait(), c2.Wait()
	if calls := f.sortedCalls(); e1 != nil || e2 != nil || !slices.Equal(calls, []string{"T001", "T002", "T003", "T004"}) {
		t.Fatalf("calls %v (%v, %v)\n%s\n%s", calls, e1, e2, o1.String(), o2.String())
	}
}

// A worker whose lease is taken over in the middle of a task has paid for
// the attempts that ran before: --max-cost (over all its tasks) and its
// summary's cost_usd must count them, as they count a run whose push was
// lost.
func TestReviewWorkLostLeaseCostCounted(t *testing.T) {
	// Found in review; fixed: the run's live cost is counted before the lost lease returns.
	t.Parallel()
	plan := "# Plan\n\n- [ ] T001 write ok.txt\n\n  ```verify\n  test -f ok.txt\n  ```\n"
	f := newFleetOn(t, plan, serveGitDaemon)
	agent := `#!/bin/sh
echo "$IMPLLOOP_TASK_ID" >> "$CALLS"
if [ "$IMPLLOOP_ATTEMPT" = 2 ]; then
  mkdir "$CALLS.a2" 2>/dev/null && sleep 30
  touch ok.txt
fi
echo x >> "out-$IMPLLOOP_TASK_ID.txt"
echo '{"type":"result","result":"ok","total_cost_usd":1}'
`
	must(t, os.WriteFile(filepath.Join(f.dir, "agent.sh"), []byte(agent), 0o755))
	w := f.start("w", nil, "--lease", "3s", "--json", "--max-attempts", "3")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(f.calls + ".a2"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt 2 never started:\n%s", w.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Another worker takes the claim over (as one that saw it unchanged
	// for a lease would).
	a := filepath.Join(f.dir, "a")
	f.forge(a, "", 64, travel.ClaimRef(f.planKeyOf(a), "T001"))
	f.wait(w)
	var cost float64
	for _, line := range strings.Split(w.out.String(), "\n") {
		if strings.Contains(line, `"type":"worker_summary"`) {
			var s struct {
				CostUSD float64 `json:"cost_usd"`
			}
			must(t, json.Unmarshal([]byte(line), &s))
			cost = s.CostUSD
		}
	}
	// Every call but the one killed with the lost run reported $1.
	if calls := f.callLines(); cost != float64(len(calls)-1) {
		t.Fatalf("cost_usd %v, but %d calls reported $1 each\n%s", cost, len(calls)-1, w.err.String())
	}
}
