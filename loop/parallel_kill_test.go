package loop

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
)

// killPoints is how many runs TestParallelKill9NeverPaysTwice kills:
// a few in make test, more in make fuzz.
var killPoints = flag.Int("killpoints", 5, "kills of a --jobs 3 run (TestParallelKill9NeverPaysTwice)")

// paidLine is one call the agent finished: when (ns), which run, task and
// attempt.
type paidLine struct {
	at           int64
	run, task    string
	attempt      string
	journaledNow bool
}

func readPaid(t *testing.T, path string) []paidLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []paidLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var p paidLine
		if _, err := fmt.Sscan(l, &p.at, &p.run, &p.task, &p.attempt); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// TestParallelKill9NeverPaysTwice kills a --jobs 3 run with SIGKILL at
// random moments (issue 26) and resumes it: the calls paid for across the
// killed run and its resume are the calls of a run never killed, but for
// a call that finished in the instant before the kill, before implloop
// could journal it (what any journal has: it can only journal a call once
// it returned). A call counts as paid when the agent finished it (its last
// line); one the kill cut short was never finished, and runs again. A
// finished call that was journaled is never paid again; one that was not
// must have finished less than a second (the time to read its worktree's
// tree and journal it, on a loaded machine) before the kill.
//
// Task 2 of the wave runs long, 3 and 4 return early: a kill while 2 runs
// finds 3's and 4's calls paid and not yet at their turn.
func TestParallelKill9NeverPaysTwice(t *testing.T) {
	const calls = 5 // a run never killed: one call per task
	plan := parPlan("1", "2[P]", "3[P]", "4[P]", "5")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for k := range *killPoints {
		// Spread over the run: its first 3 s (task 2 ends at about 2.5 s).
		after := time.Duration((float64(k) + rng.Float64()) / float64(*killPoints) * float64(3*time.Second))
		t.Run(fmt.Sprintf("kill%d", k), func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t, map[string]string{"plan.md": plan})
			agentPath, logDir := fakeAgent(t, `
case "$IMPLLOOP_TASK_ID" in
2) [ -f "$LOG/resumed" ] && sleep 0.1 || sleep 2.3 ;;
*) sleep 0.1 ;;
esac
echo "task $IMPLLOOP_TASK_ID" > "f$IMPLLOOP_TASK_ID.txt"
echo "$(date +%s%N) $IMPLLOOP_RUN_ID $IMPLLOOP_TASK_ID $IMPLLOOP_ATTEMPT" >> "$LOG/paid"`)
			s := settingsFor(agentPath)
			s.Jobs = 3
			child, output := startChild(t, Options{Settings: s, RepoRoot: repo})
			time.Sleep(after)
			killedAt := time.Now().UnixNano()
			_ = child.Process.Signal(syscall.SIGKILL)
			_ = child.Wait()
			if strings.Contains(output.String(), "child:") {
				t.Fatalf("the run failed before it was killed:\n%s", output)
			}
			paidPath := filepath.Join(logDir, "paid")
			before := readPaid(t, paidPath)
			killed := ""
			if runs, err := openJournal(t, repo).ListRuns(); err == nil && len(runs) > 0 {
				killed = runs[0].ID
			}
			excused := 0
			if killed != "" {
				// Open to write: a read-only journal does not read the
				// WAL the killed run left.
				j, err := cache.Open(repo)
				if err != nil {
					t.Fatal(err)
				}
				journaled := map[string]bool{}
				us, _ := j.Units(killed)
				for _, u := range us {
					if u.Status == cache.UnitCompleted || u.Status == cache.UnitFailed {
						journaled[u.TaskID+"~"+fmt.Sprint(u.Attempt)] = true
					}
				}
				as, _ := j.AheadCalls(killed)
				for _, a := range as {
					journaled[a.TaskID+"~"+fmt.Sprint(a.Attempt)] = true
				}
				j.Close()
				for i, p := range before {
					before[i].journaledNow = journaled[p.task+"~"+p.attempt]
					if !before[i].journaledNow {
						if ago := time.Duration(killedAt - p.at); ago > time.Second {
							t.Errorf("task %s's call finished %s before the kill and was not journaled", p.task, ago)
						}
						excused++
					}
				}
			}
			writeFile(t, filepath.Join(logDir, "resumed"), "")
			out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: killed})
			if err != nil {
				t.Fatalf("resume of %s (killed after %s): %v", killed, after, err)
			}
			checkJournal(t, repo)
			if out.Verdict != "DONE" {
				t.Fatalf("resume (killed after %s): %s", after, out.Verdict)
			}
			all := readPaid(t, paidPath)

			if len(all) != calls+excused {
				t.Errorf("killed after %s: %d calls paid (%d before the kill, %d of them not journaled yet), want %d",
					after, len(all), len(before), excused, calls+excused)
			}
			again := map[string]bool{}
			for _, p := range all[len(before):] {
				again[p.task+"~"+p.attempt] = true
			}
			for _, p := range before {
				if p.journaledNow && again[p.task+"~"+p.attempt] {
					t.Errorf("killed after %s: task %s attempt %s was journaled and paid again", after, p.task, p.attempt)
				}
			}
			for i := 1; i <= 5; i++ {
				if got := readFile(t, filepath.Join(repo, fmt.Sprintf("f%d.txt", i))); got != fmt.Sprintf("task %d\n", i) {
					t.Errorf("f%d.txt = %q", i, got)
				}
			}
		})
	}
}
