package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/rapidcases"
	"pgregory.net/rapid"
)

// TestAcrossRunsPropertyChains is a property test of replays across runs
// for tasks that took several attempts. Each case runs a plan of 2 to 4
// tasks to DONE in a real repository, serially or with --jobs 2 ([P]
// tasks); task i takes 1 to 3 attempts, each attempt but the last ended
// by its gate (the agent wrote "attempt N", the gate wants the last) or
// by a failed call (a 429). Its work is cleaned out of the tree, and the
// plan runs again, sometimes with another gate command. The properties:
//
//   - (a) the second run ends DONE with the tree the first left;
//   - (b) each task ends with the attempts it took the first time;
//   - (c) the work list predicts the run: a task planned across replays
//     across runs (every unit from the first run, no call);
//   - (d) serially, a task replays across runs exactly when its chain
//     holds: the same gate (the prompt names the gate command, so
//     another gate is another identity from attempt 1 on); otherwise it
//     runs live from attempt 1, all its attempts paid again, nothing of
//     the first run replayed or written half-way;
//   - (e) with --jobs, the agent is called once per attempt of each task
//     that did not replay, and no more; and while every task before it
//     replayed across runs, a task replays across runs exactly as (d)
//     says (the wave follows the tree through their gates: none of
//     them is called ahead);
//   - (f) the journal's invariants hold after each run (runIn).
func TestAcrossRunsPropertyChains(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two loops per case in real repositories")
	}
	defer rapidcases.Default(acrossChecks)()
	rapid.Check(t, func(rt *rapid.T) {
		root, err := os.MkdirTemp("", "across-prop-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(root)
		tb := &rapidTB{TB: t, rt: rt, root: root}
		checkAcrossChains(tb, rt)
	})
}

func checkAcrossChains(tb *rapidTB, rt *rapid.T) {
	n := rapid.IntRange(2, 4).Draw(rt, "tasks")
	jobs := rapid.IntRange(1, 2).Draw(rt, "jobs")
	attempts, byCall := make([]int, n+1), make([]bool, n+1)
	var plan strings.Builder
	plan.WriteString("# Plan\n\n")
	cfg := tb.TempDir()
	for i := 1; i <= n; i++ {
		attempts[i] = rapid.IntRange(1, 3).Draw(rt, fmt.Sprintf("attempts%d", i))
		byCall[i] = attempts[i] > 1 && rapid.Bool().Draw(rt, fmt.Sprintf("byCall%d", i))
		kind := "gate"
		if byCall[i] {
			kind = "call"
		}
		writeFile(tb, filepath.Join(cfg, fmt.Sprint(i)), fmt.Sprintf("%d %s\n", attempts[i], kind))
		marker := map[bool]string{true: "[P] "}[jobs > 1]
		fmt.Fprintf(&plan, "### Task %d: %sStep %d\n\nWrite out-%d.txt.\n\n", i, marker, i, i)
	}
	changeGate := rapid.Bool().Draw(rt, "changeGate")
	rt.Logf("attempts %v, by a failed call %v, jobs %d, another gate the second time: %v", attempts[1:], byCall[1:], jobs, changeGate)

	repo := newRepo(tb, map[string]string{"plan.md": plan.String()})
	agentPath, logDir := fakeAgent(tb, `read want kind < `+shellQuote(cfg)+`/"$IMPLLOOP_TASK_ID"
echo "$IMPLLOOP_TASK_ID" >> "$LOG/calls"
if [ "$kind" = call ] && [ "$IMPLLOOP_ATTEMPT" -lt "$want" ]; then echo "429 Too Many Requests" >&2; exit 1; fi
echo "attempt $IMPLLOOP_ATTEMPT" > "out-$IMPLLOOP_TASK_ID.txt"`)
	gate := filepath.Join(cfg, "gate.sh")
	writeFile(tb, gate, `read want kind < "$(dirname "$0")/$IMPLLOOP_TASK_ID"
f="out-$IMPLLOOP_TASK_ID.txt"
grep -H attempt "$f" && grep -qx "attempt $want" "$f"
`)
	s := settingsFor(agentPath)
	s.Jobs, s.Verify = jobs, "sh "+shellQuote(gate)

	first := runIn(tb, repo, s)
	if first.Verdict != "DONE" {
		rt.Fatalf("first run: %s", first.Verdict)
	}
	want := map[string]string{}
	for i := 1; i <= n; i++ {
		want[fmt.Sprintf("out-%d.txt", i)] = fmt.Sprintf("attempt %d\n", attempts[i])
	}
	git(tb, repo, "clean", "-fdq")
	if err := os.Remove(filepath.Join(logDir, "calls")); err != nil {
		rt.Fatal(err)
	}

	if changeGate {
		s.Verify += " && true"
	}
	dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, DryRun: true})
	if err != nil {
		rt.Fatalf("dry run: %v", err)
	}
	out := runIn(tb, repo, s)
	if out.Verdict != "DONE" {
		rt.Fatalf("second run: %s", out.Verdict)
	}
	// (a)
	for p, c := range want {
		if got := readFile(tb, filepath.Join(repo, p)); got != c {
			rt.Errorf("%s = %q, want %q", p, got, c)
		}
	}
	j, err := cache.Open(repo)
	if err != nil {
		rt.Fatal(err)
	}
	defer j.Close()
	rows := taskRows(tb, j, out.RunID)
	units, err := j.Units(out.RunID)
	if err != nil {
		rt.Fatal(err)
	}
	across := map[string]bool{} // every unit replayed from the first run
	for i := 1; i <= n; i++ {
		id := fmt.Sprint(i)
		across[id] = true
		seen := false
		for _, u := range units {
			if u.TaskID == id {
				seen = true
				across[id] = across[id] && u.ReplayedFromRun == first.RunID
			}
		}
		across[id] = across[id] && seen
	}
	calls := map[string]int{}
	if b, err := os.ReadFile(filepath.Join(logDir, "calls")); err == nil {
		for _, id := range strings.Fields(string(b)) {
			calls[id]++
		}
	}
	allBefore := true // every task before i replayed across runs
	for i := 1; i <= n; i++ {
		id := fmt.Sprint(i)
		// (b)
		if rows[id].Attempts != attempts[i] {
			rt.Errorf("task %s: %d attempts, want %d", id, rows[id].Attempts, attempts[i])
		}
		// (c)
		if dry.Plan[i-1].Action == ActionAcross && !across[id] {
			rt.Errorf("task %s was planned across runs but did not replay across runs", id)
		}
		// (d), (e)
		holds := !changeGate
		switch {
		case across[id] && calls[id] != 0:
			rt.Errorf("task %s replayed across runs and called the agent %d time(s)", id, calls[id])
		case !across[id] && calls[id] != attempts[i]:
			rt.Errorf("task %s ran live with %d call(s), want %d", id, calls[id], attempts[i])
		case (jobs == 1 || allBefore) && across[id] != holds:
			rt.Errorf("task %s: replayed across runs %v, want %v (jobs %d)", id, across[id], holds, jobs)
		}
		allBefore = allBefore && across[id]
		if !across[id] {
			for _, u := range units {
				if u.TaskID == id && u.Replayed() {
					rt.Errorf("task %s ran live, but its unit %s replayed from %s", id, u.UnitID, u.ReplayedFromRun)
				}
			}
		}
	}
}
