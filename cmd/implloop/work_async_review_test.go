package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Review of background pushes (branch speed): a worker pushes each
// result while it looks for, claims and checks out its next task.

// slowResultHook is a pre-receive hook that sleeps secs in the first
// push of a result (records) it sees, leaving $0.inflight while it
// sleeps; the others go through at once.
func slowResultHook(secs string) string {
	return "#!/bin/sh\nin=$(cat)\ncase \"$in\" in *refs/implloop/records/*) ;; *) exit 0;; esac\n" +
		"if mkdir \"$0.once\" 2>/dev/null; then : > \"$0.inflight\"; sleep " + secs + "; fi\nexit 0\n"
}

// everyResultSlowHook sleeps secs in every push of a result.
func everyResultSlowHook(secs string) string {
	return "#!/bin/sh\nin=$(cat)\ncase \"$in\" in *refs/implloop/records/*) sleep " + secs + ";; esac\nexit 0\n"
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string, w *runningWorker) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared:\n%s", path, w.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leaseClaims are the claims on the remote that hold a lease (not a
// result: not the value of a records ref).
func (f *fleet) leaseClaims() []string {
	f.t.Helper()
	records := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/records/*")
	var held []string
	for _, line := range strings.Split(strings.TrimSpace(f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*")), "\n") {
		oid, ref, ok := strings.Cut(line, "\t")
		if ok && !strings.Contains(records, oid+"\t") {
			held = append(held, ref)
		}
	}
	return held
}

// While the last result's push is tried again (refused three times: 1 s,
// 2 s, 4 s between tries), the worker holds the claim of its next task,
// taken before the first try failed, and renews it: a lease shorter than
// the retries (7 s) is not taken over by another live worker, and the
// task is paid for once. (Unrenewed, the claim would look stopped to
// the other worker, which would take the task over and run it, and the
// first worker would run it too once its push landed.)
//
// w1 ranks T002 first (spread), so the refused result is T002's and the
// next claim T001's; w2 starts once w1 holds both.
func TestAsyncReviewNextClaimRenewedWhilePushRetried(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(2))
	f.preReceive("#!/bin/sh\nin=$(cat)\ncase \"$in\" in *refs/implloop/records/*) ;; *) exit 0;; esac\n" +
		"case \"$in\" in */T002*) ;; *) exit 0;; esac\n" +
		"n=$(cat \"$0.n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0.n\"\n[ $n -gt 3 ] || { echo busy >&2; exit 1; }\n")
	// A lease of 5 s (renewed every 1.7 s): shorter than the retries,
	// and room on a loaded machine for a renewal's push, and for the
	// push of T001's result (at a low priority, the renewals waiting
	// for it).
	w1 := f.start("w1", nil, "--lease", "5s")
	f.waitClaim(t, "T002", w1)
	f.waitClaim(t, "T001", w1)
	w2 := f.start("w2", nil, "--lease", "5s")
	f.wait(w1)
	f.wait(w2)
	logs := w1.err.String() + w2.err.String()
	if !strings.Contains(logs, "trying again in 4s") {
		t.Fatalf("T002's push was not tried again three times\n%s", logs)
	}
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001", "T002"}) {
		t.Fatalf("calls %v: a task was paid for twice by two live workers\n%s", calls, logs)
	}
}

// startGroup starts a worker in a new clone in a process group of its
// own, so that a kill -9 takes its git children with it (a pod dies).
func (f *fleet) startGroup(name string, env []string, args ...string) *runningWorker {
	f.t.Helper()
	dir := f.clone(name)
	args = append(append([]string{"work", "plan.md", "--remote", "origin", "--id", name}, f.agentFlags()...), args...)
	w := &runningWorker{cmd: f.cmd(dir, "implloop", args...)}
	w.cmd.Env = append(slices.Clone(f.env), env...)
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.err
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(f.t, w.cmd.Start())
	f.t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			_ = w.cmd.Wait()
		}
	})
	return w
}

// A worker killed (-9, with its git children) while its first result's
// push is in flight (the server's hook sleeps), having claimed its next
// task meanwhile: the other workers take both tasks over after the
// lease; each task is done once, but for the one whose push was cut
// (done again at most once); nothing is left held; the fan-in replays
// every task.
func TestAsyncReviewKilledWhilePushInFlight(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(3))
	hook := f.preReceive(slowResultHook("2"))
	k := f.startGroup("k", nil, "--lease", "1s")
	waitFile(t, hook+".inflight", k)
	time.Sleep(300 * time.Millisecond) // the next task claimed meanwhile, as a rule
	must(t, syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL))
	_ = k.cmd.Wait()
	// Live workers with room for a slow push on a loaded machine (CI
	// lost a task to a second takeover with 3 s): k's claims name its
	// own 1 s lease, which they go by once one stood still for their
	// own.
	w1 := f.start("w1", nil, "--lease", "6s")
	w2 := f.start("w2", nil, "--lease", "6s")
	f.wait(w1)
	f.wait(w2)
	logs := k.err.String() + "\n" + w1.err.String() + "\n" + w2.err.String()
	calls := f.sortedCalls()
	if n := len(calls); n < 3 || n > 4 || !slices.Equal(slices.Compact(slices.Clone(calls)), []string{"T001", "T002", "T003"}) {
		t.Fatalf("calls %v: want each task once, T001 at most twice\n%s", calls, logs)
	}
	if len(calls) == 4 && calls[1] != "T001" {
		t.Fatalf("calls %v: a task other than the one being pushed was done twice\n%s", calls, logs)
	}
	if held := f.leaseClaims(); len(held) != 0 {
		t.Fatalf("claims held after every worker ended: %v\n%s", held, logs)
	}
	out, code, _ := f.fanIn()
	if code != 0 || !strings.Contains(out, "units: 0 live, 3 replayed") {
		t.Fatalf("fan-in exited %d:\n%s\n%s", code, out, logs)
	}
}

// Ctrl-C while a result's push is in flight (the server's hook sleeps):
// the worker exits 130 at once, leaves no claim holding its lease (the
// next task's, claimed meanwhile, given up untouched; the pushed task's
// either landed or given up), its next task's agent never called. Started
// again in the same clone, it replays the result it paid for: each task
// is called once.
func TestAsyncReviewInterruptWhilePushInFlight(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(2))
	hook := f.preReceive(slowResultHook("2"))
	w := f.start("w", nil)
	waitFile(t, hook+".inflight", w)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	must(t, w.cmd.Process.Signal(os.Interrupt))
	err := w.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("worker: %v, want exit %d\n%s", err, exitInterrupted, w.err.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the interrupted worker took %s to stop\n%s", d, w.err.String())
	}
	if calls := f.callLines(); !slices.Equal(calls, []string{"T001"}) {
		t.Fatalf("calls %v\n%s", calls, w.err.String())
	}
	time.Sleep(2 * time.Second) // the server's hook of the cut push ends
	if held := f.leaseClaims(); len(held) != 0 {
		t.Fatalf("claims still held by the interrupted worker: %v\n%s", held, w.err.String())
	}
	again := f.startIn(filepath.Join(f.dir, "w"), "w", nil)
	f.wait(again)
	if calls := f.sortedCalls(); !slices.Equal(calls, []string{"T001", "T002"}) {
		t.Fatalf("calls %v: the restart paid for a result again\n%s\n%s", calls, w.err.String(), again.err.String())
	}
}

// --max-cost reached while the last result's push is in flight (every
// push of a result takes half a second): the worker stops taking tasks, but
// only once that push landed: its summary says every task it ran pushed,
// and it holds no claim.
func TestAsyncReviewMaxCostWithPushPending(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(4))
	f.preReceive(everyResultSlowHook("0.5"))
	w := f.start("w", []string{"COST=0.4"}, "--max-cost", "1")
	f.wait(w)
	out := w.out.String()
	if n := len(f.callLines()); n != 3 || strings.Count(out, "  pushed") != 3 || strings.Contains(out, "not pushed") {
		t.Fatalf("%d calls; summary:\n%s\n%s", n, out, w.err.String())
	}
	if !strings.Contains(out, "stopped: the worker's live calls spent $1.20") {
		t.Fatalf("the worker does not say it stopped at its cap:\n%s", out)
	}
	if held := f.leaseClaims(); len(held) != 0 {
		t.Fatalf("claims held: %v\n%s", held, w.err.String())
	}
	if refs := f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/records/*"); strings.Count(refs, "\n") != 3 {
		t.Fatalf("records on the remote: %q", refs)
	}
}

// One worker, a chain (each task depends on the one before), every push
// of a result slow: the worker must wait for its own pending push before
// it can take the next task, which starts from that result, once it is on
// the remote (the agent checks: early-N, missing-N).
func TestAsyncReviewChainWaitsForOwnPush(t *testing.T) {
	t.Parallel()
	f := newFleet(t, chainPlan)
	f.preReceive(everyResultSlowHook("0.5"))
	w := f.start("w", []string{"CHAIN=1"})
	f.wait(w)
	if calls := f.callLines(); !slices.Equal(calls, []string{"1", "2", "3"}) {
		t.Fatalf("calls %v, want 1 2 3\n%s", calls, w.err.String())
	}
	if out := w.out.String(); strings.Count(out, "  pushed") != 3 {
		t.Fatalf("summary:\n%s", out)
	}
	f.fanInReplays(3)
}

// With --json, a result's pushed event comes from the push's goroutine
// while the next task's run writes its own events: stdout stays one JSON
// object a line, each task has its claimed, finished and pushed events in
// that order, and the summary says every task pushed.
func TestAsyncReviewJSONLinesWhilePushing(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(3))
	f.preReceive(everyResultSlowHook("0.5"))
	w := f.start("w", nil, "--json")
	f.wait(w)
	seen := map[string][]string{}
	var sum struct {
		Type  string `json:"type"`
		Tasks []struct {
			Task   string `json:"task"`
			Pushed bool   `json:"pushed"`
		} `json:"tasks"`
	}
	for _, line := range strings.Split(strings.TrimSpace(w.out.String()), "\n") {
		var ev struct{ Type, Task string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line %q: %v\n%s", line, err, w.out.String())
		}
		switch ev.Type {
		case "worker_claimed", "worker_finished", "worker_pushed":
			seen[ev.Task] = append(seen[ev.Task], strings.TrimPrefix(ev.Type, "worker_"))
		case "worker_summary":
			must(t, json.Unmarshal([]byte(line), &sum))
		}
	}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("T%03d", i)
		if got := strings.Join(seen[id], " "); got != "claimed finished pushed" {
			t.Errorf("task %s: events %q", id, got)
		}
	}
	if len(sum.Tasks) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	for _, tr := range sum.Tasks {
		if !tr.Pushed {
			t.Fatalf("summary %+v", sum)
		}
	}
}

// The server refuses only the second result, for good: the first is
// pushed; once it landed, the next task's agent no longer waits for a
// push under way, so the third task is claimed and its agent called while
// the second result is tried four times; the third result is pushed, and
// the worker stops with the second push's error, its claim given up: the
// remote holds the first and third results' claims, no lease. (Which
// tasks come first and second is the worker's spread, worker.pick: the
// hook lets the results of the first task it sees through, and refuses
// those of the second.)
func TestAsyncReviewSecondResultRefused(t *testing.T) {
	t.Parallel()
	f := newFleet(t, independentPlan(3))
	d := t.TempDir()
	first, second := filepath.Join(d, "first"), filepath.Join(d, "second")
	f.preReceive("#!/bin/sh\nin=$(cat)\ncase \"$in\" in *refs/implloop/records/*) ;; *) exit 0;; esac\n" +
		"task=$(printf '%s\\n' \"$in\" | sed -n 's|.*refs/implloop/claims/[^/]*/||p')\n" +
		"[ -f " + first + " ] || echo \"$task\" > " + first + "\n" +
		"[ \"$task\" = \"$(cat " + first + ")\" ] && exit 0\n" +
		"[ -f " + second + " ] || echo \"$task\" > " + second + "\n" +
		"[ \"$task\" = \"$(cat " + second + ")\" ] || exit 0\necho \"read-only for $task\" >&2; exit 1\n")
	w := f.start("w", nil)
	err := w.cmd.Wait()
	if err == nil {
		t.Fatalf("the worker ended well:\n%s", w.err.String())
	}
	e := w.err.String()
	calls := f.callLines()
	if len(calls) != 3 {
		t.Fatalf("calls %v\n%s", calls, e)
	}
	b1, _ := os.ReadFile(first)
	b2, _ := os.ReadFile(second)
	if strings.TrimSpace(string(b1)) != calls[0] || strings.TrimSpace(string(b2)) != calls[1] {
		t.Fatalf("calls %v, the first result pushed is %q's, the one refused %q's\n%s", calls, b1, b2, e)
	}
	if !strings.Contains(e, "task "+calls[0]+": pushed run") || !strings.Contains(e, "read-only for "+calls[1]) ||
		!strings.Contains(e, "task "+calls[2]+": pushed run") || !strings.Contains(e, "its claim was given up") {
		t.Fatalf("stderr:\n%s", e)
	}
	claims := strings.TrimSpace(f.run(f.dir, "git", "ls-remote", f.url, "refs/implloop/claims/*"))
	if strings.Count(claims, "\n") != 1 || strings.Contains(claims, "/"+calls[1]+"\n") || strings.HasSuffix(claims, "/"+calls[1]) || len(f.leaseClaims()) != 0 {
		t.Fatalf("claims on the remote:\n%s\n%s", claims, e)
	}
}
