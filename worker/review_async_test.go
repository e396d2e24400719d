package worker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/loop"
)

// reviewRepo is a clone with a plan of n independent tasks, its origin a
// bare repository whose pre-receive hook is hook ("" for none), and
// settings whose agent sleeps agentSleep and writes out-<task>.txt.
func reviewRepo(t *testing.T, n int, hook, agentSleep string) (*gittest.Repo, string, loop.Settings) {
	t.Helper()
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "w", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(dir, "allowed")
	if err := os.WriteFile(allowed, []byte(gittest.Email+" "+string(pub)), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\nsleep "+agentSleep+"\necho done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(dir, "shared.git")
	gittest.At(t, dir).Git("init", "-q", "--bare", bare)
	if hook != "" {
		if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := gittest.New(t)
	for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingKey", key + ".pub"}, {"gpg.ssh.allowedSignersFile", allowed}, {"implloop.signRuns", "true"}} {
		r.Git("config", kv[0], kv[1])
	}
	r.Git("remote", "add", "origin", bare)
	var plan strings.Builder
	plan.WriteString("# Plan\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&plan, "- [ ] T%d [P] write out-T%d.txt\n", i, i)
	}
	r.Write("plan.md", plan.String())
	r.Commit("plan")
	r.Git("push", "-q", "origin", "HEAD:main")
	s := loop.DefaultSettings()
	s.Plan, s.AgentCmd, s.Verify = "plan.md", agent, "test -f out-$IMPLLOOP_TASK_ID.txt"
	return r, bare, s
}

// The renewals of a result being pushed go on while the worker claims
// its next task: both make lease commits (newLease). Here the first
// result's push is refused once, so that it is tried again after 1 s,
// its lease renewed every 100 ms meanwhile, while the worker claims and
// checks out the next task. Under the race detector (make test runs
// worker with -race) the two must not touch the worker's state
// unsynchronized.
func TestReviewRenewalRacesNextClaim(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	hook := "#!/bin/sh\nif grep -q refs/implloop/records/ && mkdir \"$0.once\" 2>/dev/null; then echo 'busy' >&2; exit 1; fi\n"
	r, bare, s := reviewRepo(t, 3, hook, "0.1")
	var mu sync.Mutex
	var kinds []string
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: 300 * time.Millisecond, ID: "w",
		Log: func(e Event) { mu.Lock(); kinds = append(kinds, e.Type+":"+e.Task); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range sum.Tasks {
		if !tr.Pushed || tr.Verdict != "DONE" {
			t.Fatalf("summary %+v\nevents %v", sum, kinds)
		}
	}
	if len(sum.Tasks) != 3 {
		t.Fatalf("summary %+v\nevents %v", sum, kinds)
	}
	records := gittest.At(t, bare).Git("for-each-ref", "refs/implloop/records/")
	if strings.Count(records, "\n") != 3 {
		t.Fatalf("records on the remote:\n%s", records)
	}
	// The case it is about: the next task claimed while the first
	// result's push waits to be tried again.
	all := " " + strings.Join(kinds, " ") + " "
	failed, claimed, pushed := strings.Index(all, " push_failed:T1 "), strings.Index(all, " claimed:T2 "), strings.Index(all, " pushed:T1 ")
	if failed < 0 || claimed < 0 || pushed < claimed {
		t.Fatalf("events %v: T2 not claimed while T1's push was tried again", kinds)
	}
}

// newLease is called by the renewals of the result being pushed in the
// background (renewal.renew, until the push lands) while the worker
// claims its next task (do); the worker's lease counter is shared by
// both. The race detector seldom sees it in a whole run (each side forks
// a git process between two leases, and fork's lock orders them), so the
// two calls are made here side by side, as they can be.
func TestReviewNewLeaseConcurrent(t *testing.T) {
	r := gittest.New(t)
	r.Write("a.txt", "a\n")
	r.Commit("a")
	w := &worker{o: Options{Root: r.Dir, ID: "w"}, now: time.Now, key: "k", lease: time.Minute}
	ctx := context.Background()
	if _, err := w.newLease(ctx, "T0"); err != nil { // the first claim: emptyTree set
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the renewal of the task being pushed
		defer wg.Done()
		_, _ = w.newLease(ctx, "T1")
	}()
	_, _ = w.newLease(ctx, "T2") // the next task's claim
	wg.Wait()
}
