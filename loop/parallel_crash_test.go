package loop

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
)

// waitAhead waits until run has journaled n calls made ahead.
func waitAhead(t *testing.T, repo, run string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := cache.OpenReadOnly(repo)
		if err == nil {
			as, _ := j.AheadCalls(run)
			j.Close()
			if len(as) >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not journal %d calls made ahead", run, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestParallelCrashNeverPaysTwice is issue 26's "--jobs pays twice": T002
// and T003 return while T001 still runs, and implloop is killed (kill -9)
// or interrupted (Ctrl-C). Their calls were journaled the moment they
// returned, so the resume takes them, their work merged into the tree as
// their turn would have, and calls the agent only for T001, whose call was
// cut short: every finished call was paid for once.
func TestParallelCrashNeverPaysTwice(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			plan := "# Plan\n\n- [ ] T001 [P] One\n- [ ] T002 [P] Two\n- [ ] T003 [P] Three\n"
			repo := newRepo(t, map[string]string{"plan.md": plan})
			agentPath, logDir := fakeAgent(t, `
if [ "$IMPLLOOP_TASK_ID" = T001 ] && [ ! -f "$LOG/resumed" ]; then
	echo $$ > "$LOG/agent.pid"
	touch "$LOG/marker"
	sleep 60
fi
echo "$IMPLLOOP_TASK_ID" >> "out-$IMPLLOOP_TASK_ID.txt"
echo "$IMPLLOOP_RUN_ID $IMPLLOOP_TASK_ID" >> "$LOG/paid"`)
			s := settingsFor(agentPath)
			s.Jobs = 3
			child, output, _ := startAgentChild(t, Options{Settings: s, RepoRoot: repo}, logDir)
			runs, err := openJournal(t, repo).ListRuns()
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs %v, %v", runs, err)
			}
			first := runs[0].ID
			waitAhead(t, repo, first, 2)
			if err := child.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = child.Wait()
			if sig == syscall.SIGINT && !strings.Contains(output.String(), `"Interrupted":true`) {
				t.Fatalf("the interrupted run:\n%s", output)
			}
			writeFile(t, filepath.Join(logDir, "resumed"), "")

			out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: first})
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			checkJournal(t, repo)
			if out.Verdict != "DONE" {
				t.Fatalf("resume: %s", out.Verdict)
			}
			paid := strings.Fields(readFile(t, filepath.Join(logDir, "paid")))
			want := []string{first, "T002", first, "T003", out.RunID, "T001"}
			if strings.Join(sortedPairs(paid), " ") != strings.Join(sortedPairs(want), " ") {
				t.Errorf("calls paid: %v, want T002 and T003 by the first run, T001 by the resume", paid)
			}
			for _, id := range []string{"T001", "T002", "T003"} {
				if got := readFile(t, filepath.Join(repo, "out-"+id+".txt")); got != id+"\n" {
					t.Errorf("out-%s.txt = %q, want its work once", id, got)
				}
			}
			j := openJournal(t, repo)
			us, err := j.Units(out.RunID)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range us {
				if u.Status != cache.UnitCompleted || u.Replayed() {
					t.Errorf("resume's unit %s: %s (replayed %v), want completed, taken as live", u.UnitID, u.Status, u.Replayed())
				}
			}
			as, err := j.AheadCalls(first)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range as {
				if a.SettledBy != out.RunID {
					t.Errorf("the first run's call made ahead for %s: settled by %q, want the resume", a.TaskID, a.SettledBy)
				}
			}
			if len(as) != 2 {
				t.Errorf("the first run journaled %d calls made ahead, want 2", len(as))
			}
			if refs := git(t, repo, "for-each-ref", "refs/implloop/ahead/"); refs != "" {
				t.Errorf("refs of calls made ahead left:\n%s", refs)
			}
			// A second resume has nothing to take: everything replays.
			again, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: out.RunID, Full: true})
			if err != nil || !again.NoOp {
				t.Errorf("resume of the resume: %+v, %v; want a no-op", again, err)
			}
			if n := len(strings.Fields(readFile(t, filepath.Join(logDir, "paid")))); n != 6 {
				t.Errorf("%d words of paid calls after the second resume, want 6", n)
			}
			_ = os.Remove(filepath.Join(logDir, "resumed"))
		})
	}
}

// sortedPairs sorts words taken two by two.
func sortedPairs(words []string) []string {
	var pairs []string
	for i := 0; i+1 < len(words); i += 2 {
		pairs = append(pairs, words[i]+"/"+words[i+1])
	}
	slices.Sort(pairs)
	return pairs
}
