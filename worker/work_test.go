package worker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/loop"
)

func TestMain(m *testing.M) {
	home, err := gittest.Isolate("implloop-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// signedRepo is a clone with a plan of n independent tasks, its git
// signing runs with a key its allowed signers hold, its origin a bare
// repository whose pre-receive hook is hook ("" for none), and settings
// whose agent is the shell script agent.
func signedRepo(t *testing.T, n int, hook, agent string) (*gittest.Repo, string, loop.Settings) {
	t.Helper()
	dir := t.TempDir()
	key, allowed := filepath.Join(dir, "key"), filepath.Join(dir, "allowed")
	sshSigner(t, key, allowed)
	agentPath := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agentPath, []byte("#!/bin/sh\n"+agent), 0o755); err != nil {
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
	signAs(r, key, allowed)
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
	s.Plan, s.AgentCmd, s.Verify = "plan.md", agentPath, "test -f out-$IMPLLOOP_TASK_ID.txt"
	return r, bare, s
}

// sshSigner makes the ssh key key (key.pub its public half) and the
// allowed signers file allowed, which allows it alone, for gittest.Email.
func sshSigner(t *testing.T, key, allowed string) {
	t.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", filepath.Base(key), "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(allowed, []byte(gittest.Email+" "+string(pub)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// signAs makes r's git sign runs with key and trust the signers allowed.
func signAs(r *gittest.Repo, key, allowed string) {
	for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingKey", key + ".pub"}, {"gpg.ssh.allowedSignersFile", allowed}, {"implloop.signRuns", "true"}} {
		r.Git("config", kv[0], kv[1])
	}
}

// sleeper is an agent that sleeps d seconds and writes out-<task>.txt.
func sleeper(d string) string {
	return "sleep " + d + "\necho done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
}

// One worker in this process (under the race detector in make test),
// four tasks whose agent outlasts a renewal: each result is pushed in the
// background while the next task is claimed and run, the lease renewed
// meanwhile, and every result lands, signed and sealed.
func TestWorkPushesInBackground(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	r, bare, s := signedRepo(t, 4, "", sleeper("0.3"))
	var events []Event
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: 600 * time.Millisecond, ID: "w",
		Log: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	pushed := 0
	for _, tr := range sum.Tasks {
		if tr.Pushed && tr.Verdict == "DONE" {
			pushed++
		}
	}
	if pushed != 4 || len(sum.Tasks) != 4 {
		t.Fatalf("summary %+v", sum)
	}
	records := gittest.At(t, bare).Git("for-each-ref", "refs/implloop/records/")
	claims := gittest.At(t, bare).Git("for-each-ref", "--format=%(objectname)", "refs/implloop/claims/")
	for _, c := range strings.Fields(claims) {
		if !strings.Contains(records, c) {
			t.Errorf("claim %s names no records:\n%s", c, records)
		}
	}
	if seals := gittest.At(t, bare).Git("for-each-ref", "refs/implloop/seals/"); strings.Count(seals, "\n") != 3 {
		t.Errorf("seals (one a push after the first):\n%s", seals)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Type)
	}
	if strings.Count(strings.Join(kinds, " "), "pushed") != 4 {
		t.Errorf("events %v", kinds)
	}
	// Its first event says what it works on: the plan key and the base
	// it shares with the other workers.
	if e := events[0]; e.Type != "started" || e.Plan != sum.Plan || e.Base != sum.Base || sum.Plan == "" ||
		!strings.Contains(e.Message, "plan.md at "+sum.Base[:12]+", 4 task(s), plan key "+sum.Plan) {
		t.Errorf("first event %+v, summary's plan %s base %s", e, sum.Plan, sum.Base)
	}
}

// Every push that carries a result runs at the worker's own priority,
// the pushes behind the next task's agent too: each holds the lease
// while it runs (no renewal meanwhile), and one at a lower priority,
// starved by busier processes on a loaded machine, outlasted a 3 s
// lease and lost its task to a takeover (CI). The remote is a local
// path, so its receive-pack, and the pre-receive hook that notes each
// push's priority, are the push's children and take its priority.
func TestWorkPushesAtItsPriority(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: priorities are not read here")
	}
	nice := "cut -d' ' -f19 /proc/self/stat"
	out, err := exec.Command("sh", "-c", nice).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(out))
	log := filepath.Join(t.TempDir(), "pushes")
	hook := "#!/bin/sh\nwhile read old new ref; do echo \"$(" + nice + ") $ref\" >> " + log + "; done\n"
	r, _, s := signedRepo(t, 3, hook, sleeper("0.3"))
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	allPushed(t, sum, 3)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for line := range strings.Lines(string(b)) {
		prio, ref, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !strings.HasPrefix(ref, "refs/implloop/records/") {
			continue
		}
		results++
		if prio != want {
			t.Errorf("%s was pushed at nice %s, the worker runs at %s", ref, prio, want)
		}
	}
	if results != 3 {
		t.Fatalf("%d results pushed:\n%s", results, b)
	}
}
