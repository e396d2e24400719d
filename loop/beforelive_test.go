package loop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Options.BeforeLive: called once, before the first agent call, after
// the run's start (B0 journaled); not at all when every unit replays. An
// error from it interrupts the run there: no agent called, the run ends
// INTERRUPTED, and a resume does the tasks.
func TestBeforeLive(t *testing.T) {
	t.Parallel()
	agentPath, logDir := fakeAgent(t, `echo "$IMPLLOOP_TASK_ID" >> "$LOG/calls"; echo x > "out-$IMPLLOOP_TASK_ID.txt"`)
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	s := settingsFor(agentPath)
	calls := func() string { b, _ := os.ReadFile(filepath.Join(logDir, "calls")); return string(b) }

	refused := errors.New("the last push was refused")
	held := 0
	var concerns []string
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, BeforeLive: func(context.Context) error {
		held++
		if git(t, repo, "for-each-ref", "refs/implloop/runs/") == "" {
			t.Errorf("BeforeLive called before the run's first boundary")
		}
		return refused
	}, Observer: ObserverFunc(func(ev Event) {
		if ev.Type == EvConcern {
			concerns = append(concerns, ev.Message)
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	if held != 1 || calls() != "" || !out.Interrupted || out.Verdict != "INTERRUPTED" {
		t.Fatalf("held %d, calls %q, outcome %+v", held, calls(), out)
	}
	// No call was made: the task's "no changes" is no concern.
	if len(concerns) > 0 {
		t.Fatalf("concerns: %q", concerns)
	}
	checkJournal(t, repo)

	held = 0
	out, err = Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: out.RunID, BeforeLive: func(context.Context) error {
		held++
		if calls() != "" {
			t.Errorf("BeforeLive called after an agent call")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if held != 1 || calls() != "1\n2\n" || out.Verdict != "DONE" {
		t.Fatalf("held %d, calls %q, outcome %+v", held, calls(), out)
	}

	held = 0
	out, err = Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: out.RunID, Full: true, BeforeLive: func(context.Context) error {
		held++
		return refused
	}})
	if err != nil {
		t.Fatal(err)
	}
	if held != 0 || calls() != "1\n2\n" || out.Verdict != "DONE" {
		t.Fatalf("a resume that replays: held %d, calls %q, outcome %+v", held, calls(), out)
	}
	checkJournal(t, repo)
}
