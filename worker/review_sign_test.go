package worker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

// TestReviewSigningProgramAsItStarted: the key and the program that
// sign (gpg.format, user.signingKey, gpg.ssh.program, gpg.program) are
// read by `git commit-tree -S` at each push, in the clone whose
// configuration the agent shares. The agent of the first task sets
// gpg.ssh.program; when each push took git's configuration as it was
// then, the worker ran that program, outside any sandbox the agent runs
// in, at the next push. The worker signs as it learned when it started
// (travel.LearnSigning): every result goes signed with the user's key,
// the agent's program never runs, and the worker says the configuration
// changed (a concern).
func TestReviewSigningProgramAsItStarted(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	d := t.TempDir()
	mark, ran, prog := filepath.Join(d, "flipped"), filepath.Join(d, "ran"), filepath.Join(d, "sign")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+ran+"\nexec ssh-keygen \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := "if mkdir " + mark + " 2>/dev/null; then git config gpg.ssh.program " + prog + " || exit 1; fi\n" +
		"echo done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
	r, bare, s := signedRepo(t, 2, "", agent)
	var events []Event
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w",
		Log: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(r.Git("config", "gpg.ssh.program")); got != prog {
		t.Fatalf("the agent did not set gpg.ssh.program (%q)", got)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the worker ran the signing program an agent named (gpg.ssh.program)")
	}
	allPushed(t, sum, 2)
	signedByAllowed(t, bare, 2)
	saidChanged(t, events, "gpg.ssh.program")
}

// The agent of a worker's first task signs its own commits: it points
// user.signingKey at its key, and asks git to sign pushes
// (push.gpgSign, which the remote does not take). The worker goes on
// signing its results with the user's key, and pushing them unsigned:
// every result lands, each verifies against the user's allowed signers.
func TestWorkSigningKeyAsItStarted(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	d := t.TempDir()
	key, mark := filepath.Join(d, "agentkey"), filepath.Join(d, "flipped")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "agent", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	agent := "if mkdir " + mark + " 2>/dev/null; then git config user.signingKey " + key + ".pub && git config push.gpgSign true || exit 1; fi\n" +
		"echo done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
	r, bare, s := signedRepo(t, 3, "", agent)
	var events []Event
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w",
		Log: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(r.Git("config", "user.signingKey")); got != key+".pub" {
		t.Fatalf("the agent did not set user.signingKey (%q)", got)
	}
	allPushed(t, sum, 3)
	signedByAllowed(t, bare, 3)
	saidChanged(t, events, "push.gpgsign, user.signingkey")
}

// The agent of a worker's first task installs a pre-push hook in the
// clone's git directory, which the worker's worktree shares: the worker
// runs it at no push (its claims' pushes ran none already; its results'
// ran it, outside any sandbox).
func TestWorkPushesRunNoHook(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	d := t.TempDir()
	mark, ran := filepath.Join(d, "flipped"), filepath.Join(d, "ran")
	agent := "if mkdir " + mark + " 2>/dev/null; then hook=\"$(git rev-parse --git-common-dir)/hooks/pre-push\" && " +
		"printf '#!/bin/sh\\ntouch " + ran + "\\n' > \"$hook\" && chmod +x \"$hook\" || exit 1; fi\n" +
		"echo done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
	r, _, s := signedRepo(t, 2, "", agent)
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	allPushed(t, sum, 2)
	hook := filepath.Join(r.Dir, ".git", "hooks", "pre-push")
	if _, err := os.Stat(hook); err != nil {
		t.Fatalf("the agent did not install its hook: %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a worker's push ran the pre-push hook an agent installed")
	}
}

// allPushed fails t unless sum has n tasks, each done and pushed.
func allPushed(t *testing.T, sum *Summary, n int) {
	t.Helper()
	if len(sum.Tasks) != n {
		t.Fatalf("summary %+v", sum)
	}
	for _, tr := range sum.Tasks {
		if !tr.Pushed || tr.Verdict != "DONE" {
			t.Fatalf("summary %+v", sum)
		}
	}
}

// signedByAllowed fails t unless the remote bare (signedRepo's) has n
// records commits, each signed by a key of the allowed signers
// signedRepo set up.
func signedByAllowed(t *testing.T, bare string, n int) {
	t.Helper()
	remote := gittest.At(t, bare)
	commits := strings.Fields(remote.Git("for-each-ref", "--format=%(objectname)", "refs/implloop/records/"))
	if len(commits) != n {
		t.Fatalf("records on the remote: %v", commits)
	}
	allowed := filepath.Join(filepath.Dir(bare), "allowed")
	for _, c := range commits {
		if out, err := remote.GitErr("-c", "gpg.ssh.allowedSignersFile="+allowed, "-c", "gpg.ssh.program=ssh-keygen", "verify-commit", c); err != nil {
			t.Errorf("records %s are not signed by the user's key: %v\n%s", c, err, out)
		}
	}
}

// saidChanged fails t unless events hold one concern, naming keys.
func saidChanged(t *testing.T, events []Event, keys string) {
	t.Helper()
	var said []string
	for _, e := range events {
		if e.Type == "concern" {
			said = append(said, e.Message)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "changed since this worker started ("+keys+")") {
		t.Errorf("concerns %q, want one naming %s", said, keys)
	}
}

// The agent of a worker's first task points gpg.ssh.allowedSignersFile
// at a file that allows a forger's key, and gpg.ssh.program at a program
// of its own, and puts the forger's result of the other task on the
// remote (a result signed by the forger, of this plan, its claim done),
// which the third task waits for. The worker's pull verifies as the
// worker started: the forged result is not trusted, the task is done
// again here, the agent's program never runs. When each pull took git's
// configuration as it was then, the forged result was trusted and built
// on, and the agent's program ran outside any sandbox.
func TestWorkVerifiesAsItStarted(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	r, bare, s := signedRepo(t, 2, "", "")
	r.Write("plan.md", "# Plan\n\n- [ ] T1 [P] write out-T1.txt\n- [ ] T2 [P] write out-T2.txt\n- [ ] T3 write out-T3.txt\n")
	r.Commit("plan: T3 waits for T1 and T2")
	r.Git("push", "-q", "origin", "HEAD:main")
	d := t.TempDir()
	plain := filepath.Join(d, "plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\necho done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The forger: a worker of the same plan, on a copy of the remote,
	// signing with a key only its own allowed signers file holds.
	forge := filepath.Join(d, "forge.git")
	r.Git("clone", "-q", "--bare", bare, forge)
	r.Git("clone", "-q", forge, filepath.Join(d, "forger"))
	f := gittest.At(t, filepath.Join(d, "forger"))
	key, forged := filepath.Join(d, "forgerkey"), filepath.Join(d, "forged-allowed")
	sshSigner(t, key, forged)
	signAs(f, key, forged)
	fs := s
	fs.AgentCmd = plain
	fsum, err := Work(context.Background(), Options{Root: f.Dir, Remote: "origin", Settings: fs, Lease: time.Minute, ID: "forger"})
	if err != nil {
		t.Fatal(err)
	}
	allPushed(t, fsum, 3)
	claims := strings.Fields(gittest.At(t, forge).Git("for-each-ref", "--format=%(refname)", "refs/implloop/claims/"))
	if len(claims) != 3 {
		t.Fatalf("the forger's claims: %v", claims)
	}
	prefix := strings.TrimSuffix(claims[0], filepath.Base(claims[0])) // refs/implloop/claims/<plan>/
	// The worker's agent: its first call changes what git verifies with
	// and puts the forged result of the other ready task on the remote.
	mark, ran, prog := filepath.Join(d, "flipped"), filepath.Join(d, "ran"), filepath.Join(d, "verify")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+ran+"\nexec ssh-keygen \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(d, "agent.sh")
	script := "#!/bin/sh\nif mkdir " + mark + " 2>/dev/null; then\n" +
		"  case \"$IMPLLOOP_TASK_ID\" in T1) other=T2;; *) other=T1;; esac\n" +
		"  git config gpg.ssh.allowedSignersFile " + forged + " && git config gpg.ssh.program " + prog + " &&\n" +
		"  git -C " + forge + " push -q " + bare + " \"" + prefix + "$other:" + prefix + "$other\" 'refs/implloop/records/*:refs/implloop/records/*' 'refs/implloop/runs/*:refs/implloop/runs/*' || exit 1\n" +
		"  echo \"$other\" > " + filepath.Join(d, "other") + "\n" +
		"fi\necho done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s.AgentCmd = agent
	var events []Event
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w",
		Log: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(filepath.Join(d, "other"))
	if err != nil {
		t.Fatalf("the agent did not put the forged result on the remote: %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the worker ran the program an agent named (gpg.ssh.program)")
	}
	// Its own task, the forged one done again, then T3.
	allPushed(t, sum, 3)
	redone := false
	for _, tr := range sum.Tasks {
		if tr.Task == strings.TrimSpace(string(other)) && strings.Contains(tr.Redone, "not trusted") {
			redone = true
		}
	}
	if !redone {
		t.Errorf("the forged result of %s was built on: summary %+v", other, sum)
	}
	saidChanged(t, events, "gpg.ssh.allowedsignersfile, gpg.ssh.program")
}
