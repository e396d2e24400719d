package loop

import (
	"context"
	"encoding/json"
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

// waitEvent waits until the events file has an event of type typ for
// task.
func waitEvent(t *testing.T, events, typ, task string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(events)
		for _, l := range strings.Split(string(b), "\n") {
			var ev Event
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == typ && ev.Task == task {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s event for task %s", typ, task)
}

// TestParallelKill9NeverPaysTwice kills a --jobs 3 run with SIGKILL at
// random moments (issue 26) and resumes it: the calls paid for across the
// killed run and its resume are the calls of a run never killed, but for
// a call that finished in the instant before the kill, before implloop
// could journal it (what any journal has: it can only journal a call once
// it returned). A call counts as paid when the agent finished it (its last
// line); one the kill cut short was never finished, and runs again. A
// finished call that was journaled is never paid again; one that was not
// must be one implloop had not said was back yet (an ahead event
// "returned", a unit_finished: each comes after the call is journaled).
//
// Task 2 of the wave runs long, 3 and 4 return early: a kill while 2 runs
// finds 3's and 4's calls paid and not yet at their turn.
func TestParallelKill9NeverPaysTwice(t *testing.T) {
	const calls = 5 // a run never killed: one call per task
	plan := parPlan("1", "2[P]", "3[P]", "4[P]", "5")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	n := *killPoints
	for k := range n {
		// The first kill lands while task 1 runs, the last once the wave
		// settled; the others are spread over the wave (task 2 runs
		// 2.3 s, 3 and 4 return after about 0.2 s).
		var after time.Duration
		phase := "wave"
		switch {
		case k == 0:
			phase, after = "start", time.Duration(rng.Float64()*float64(600*time.Millisecond))
		case k == n-1 && n > 2:
			phase, after = "end", time.Duration(rng.Float64()*float64(300*time.Millisecond))
		default:
			after = time.Duration((float64(k-1) + rng.Float64()) / float64(max(n-2, 1)) * float64(2500*time.Millisecond))
		}
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
			events := filepath.Join(t.TempDir(), "events")
			child, output := startChild(t, Options{Settings: s, RepoRoot: repo}, events)
			switch phase {
			case "wave":
				waitEvent(t, events, EvUnitFinished, "1")
			case "end":
				waitEvent(t, events, EvUnitFinished, "4")
			}
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
				back := map[string]string{} // task~attempt -> the event that said the call was back
				for _, l := range strings.Split(readFile(t, events), "\n") {
					var ev Event
					if json.Unmarshal([]byte(l), &ev) != nil {
						continue // the line the kill cut
					}
					if ev.Type == EvAhead && ev.Status == "returned" || ev.Type == EvUnitFinished {
						back[ev.Task+"~"+fmt.Sprint(ev.Attempt)] = ev.Type
					}
				}
				for i, p := range before {
					key := p.task + "~" + p.attempt
					before[i].journaledNow = journaled[key]
					if !before[i].journaledNow {
						ago := time.Duration(killedAt - p.at)
						if back[key] != "" {
							t.Errorf("task %s's call was back (%s event), and not journaled at the kill, %s after it finished", p.task, back[key], ago)
						}
						t.Logf("task %s's call finished %s before the kill, not journaled yet: paid again", p.task, ago)
						excused++
					}
				}
			}
			writeFile(t, filepath.Join(logDir, "resumed"), "")
			out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: killed})
			if err != nil {
				t.Fatalf("resume of %s (killed %s after the %s): %v", killed, after, phase, err)
			}
			checkJournal(t, repo)
			if out.Verdict != "DONE" {
				t.Fatalf("resume (killed %s after the %s): %s", after, phase, out.Verdict)
			}
			all := readPaid(t, paidPath)
			if len(all) != calls+excused {
				t.Errorf("killed %s after the %s: %d calls paid (%d before the kill, %d of them not journaled yet), want %d",
					after, phase, len(all), len(before), excused, calls+excused)
			}
			again := map[string]bool{}
			for _, p := range all[len(before):] {
				again[p.task+"~"+p.attempt] = true
			}
			for _, p := range before {
				if p.journaledNow && again[p.task+"~"+p.attempt] {
					t.Errorf("killed %s after the %s: task %s attempt %s was journaled and paid again", after, phase, p.task, p.attempt)
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
