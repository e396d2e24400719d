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
	"github.com/implloop/implloop/loop"
)

// A worker learns how its results go (signed, and whose records they
// are) when it starts, before any agent ran: the agent of its first task
// turns signing off and renames the user in git's configuration, which
// the worker's worktree shares with its clone, and every result still
// goes signed, its records the user's (that task's too: it is pushed
// after its agent ran), and the worker says the configuration changed.
// When each push asked git, before the worker learned it once, every one
// went unsigned, as Mallory's: not trusted by the other workers or the
// fan-in, which would do each task again.
func TestWorkSignsAsItStarted(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	mark := filepath.Join(t.TempDir(), "flipped")
	agent := "if mkdir " + mark + " 2>/dev/null; then git config implloop.signRuns false && git config user.name Mallory || exit 1; fi\n" +
		"echo done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
	r, bare, s := signedRepo(t, 3, "", agent)
	// Who the records name comes from the user's git configuration here,
	// not from the test's environment.
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		if v, ok := os.LookupEnv(k); ok {
			os.Unsetenv(k)
			t.Cleanup(func() { os.Setenv(k, v) })
		}
	}
	r.Git("config", "user.name", "Ursula")
	r.Git("config", "user.email", gittest.Email)
	var events []Event
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w",
		Log: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	saidChanged(t, events, "implloop.signruns, user.name")
	if len(sum.Tasks) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	for _, tr := range sum.Tasks {
		if !tr.Pushed || tr.Verdict != "DONE" {
			t.Fatalf("summary %+v", sum)
		}
	}
	if got := strings.TrimSpace(r.Git("config", "implloop.signRuns")); got != "false" {
		t.Fatalf("the agent did not turn signing off (implloop.signRuns %q)", got)
	}
	remote := gittest.At(t, bare)
	commits := strings.Fields(remote.Git("for-each-ref", "--format=%(objectname)", "refs/implloop/records/"))
	if len(commits) != 3 {
		t.Fatalf("records on the remote: %v", commits)
	}
	for _, c := range commits {
		raw := remote.Git("cat-file", "commit", c)
		if !strings.Contains(raw, "\ngpgsig ") {
			t.Errorf("records %s went unsigned:\n%s", c, raw)
		}
		if !strings.Contains(raw, "\nauthor Ursula <") || strings.Contains(raw, "Mallory") {
			t.Errorf("records %s are Mallory's:\n%s", c, raw)
		}
	}
}

// The agent of a worker's first task points core.excludesFile (the
// configuration its worktree shares with the clone) at a file that
// ignores every task's work. Its own run goes on with the rules it began
// with, as ever; so do the runs of the tasks after it, which go by the
// ignore rules the worker learned when it started: every result on the
// remote holds its task's file. When each run took git's rules as its
// first boundary found them, before the worker learned them once, the
// next tasks' results went DONE and empty, their work left out as
// ignored (and the fan-in would have replayed them so).
func TestWorkIgnoreRulesAsItStarted(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	agent, ign := excludesFlipAgent(t, "")
	r, bare, s := signedRepo(t, 3, "", agent)
	var concerns []string
	sum, err := Work(context.Background(), Options{Root: r.Dir, Remote: "origin", Settings: s, Lease: time.Minute, ID: "w",
		Observer: loop.ObserverFunc(func(e loop.Event) {
			if e.Type == loop.EvConcern {
				concerns = append(concerns, e.Message)
			}
		})})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Tasks) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	if got := strings.TrimSpace(r.Git("config", "core.excludesFile")); got != ign {
		t.Fatalf("the agent did not set core.excludesFile (%q)", got)
	}
	for _, tr := range sum.Tasks {
		if !tr.Pushed || tr.Verdict != "DONE" {
			t.Fatalf("summary %+v", sum)
		}
	}
	resultsHoldWork(t, bare, sum)
	// The first task's run says its task changed the rules; each later
	// one that it runs by the rules the worker began with.
	if n := strings.Count(strings.Join(concerns, "\n"), "changed since this work tree's runs began"); n != 2 {
		t.Errorf("concerns %q", concerns)
	}
}

// excludesFlipAgent is an agent whose first call points core.excludesFile
// (the configuration a worker's worktree shares with its clone) at a file
// that ignores every task's work, then runs more (a shell line), and
// whose every call writes out-<task>.txt; ign is that file.
func excludesFlipAgent(t *testing.T, more string) (agent, ign string) {
	d := t.TempDir()
	mark := filepath.Join(d, "flipped")
	ign = filepath.Join(d, "ignore")
	if more != "" {
		more = " && " + more
	}
	agent = "if mkdir " + mark + " 2>/dev/null; then echo 'out-*' > " + ign + " && git config core.excludesFile " + ign + more + " || exit 1; fi\n" +
		"echo done > \"out-$IMPLLOOP_TASK_ID.txt\"\n"
	return agent, ign
}

// resultsHoldWork fails t for each of sum's results on the remote bare
// whose boundary lacks its task's file.
func resultsHoldWork(t *testing.T, bare string, sum *Summary) {
	t.Helper()
	remote := gittest.At(t, bare)
	for _, tr := range sum.Tasks {
		files := remote.Git("ls-tree", "-r", "--name-only", "refs/implloop/runs/"+tr.Run)
		if !strings.Contains(files, "out-"+tr.Task+".txt") {
			t.Errorf("task %s's result (run %s, %s) lacks its work: %q", tr.Task, tr.Run, tr.Verdict, files)
		}
	}
}
