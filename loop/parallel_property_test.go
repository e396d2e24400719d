package loop

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/internal/rapidcases"
	"pgregory.net/rapid"
)

// parallelChecks is TestParallelPropertyDependencyOrder's default number
// of cases (about 1 s each on 2 cores; -rapid.checks=N for more).
const parallelChecks = "20"

// TestParallelPropertyDependencyOrder is a property test of --jobs over
// random dependency graphs (issue 15). Each case is a plan of 2 to 8
// tasks, each plain, spec-kit [P], with a `Depends on` line naming some
// earlier tasks, or both, run with --jobs 4 in a real repository by a
// recording agent: every call appends "start ID" and "end ID" to a file
// outside the repository, and writes fID.txt after a pause of its own.
// The properties:
//
//   - no task's call starts before every task it waits for (extractor.After,
//     closed over: what those wait for too; so extractor.LatestWait's task
//     as well) has ended its last call;
//   - the run ends DONE, every task done, each task's file in the tree with
//     its content, and no worktree left behind (parRun);
//   - the journal's invariants hold (runIn), and it has the "running" and
//     "returned" ahead events of each call made ahead, before the call's
//     unit_started (checkAheadJournaled).
func TestParallelPropertyDependencyOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a loop per case in a real repository")
	}
	defer rapidcases.Default(parallelChecks)()
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 8).Draw(rt, "tasks")
		specs := make([]string, n)
		scripts := map[string]string{}
		for i := range n {
			id := strconv.Itoa(i + 1)
			spec := id
			if rapid.Bool().Draw(rt, "P"+id) {
				spec += "[P]"
			}
			if i > 0 && rapid.IntRange(0, 2).Draw(rt, "declares"+id) == 0 {
				var deps []string
				for k := range i {
					if rapid.Bool().Draw(rt, fmt.Sprintf("%s-on-%d", id, k+1)) {
						deps = append(deps, strconv.Itoa(k+1))
					}
				}
				if len(deps) > 0 {
					spec += ":" + strings.Join(deps, ", ")
				}
			}
			specs[i] = spec
			pause := rapid.SampledFrom([]string{"0", "0.05", "0.1"}).Draw(rt, "pause"+id)
			scripts[id] = "sleep " + pause + "; echo \"task " + id + "\" > f" + id + ".txt"
		}
		repo := newRepo(t, nil)
		writeFile(t, filepath.Join(repo, "plan.md"), parPlan(specs...))
		agentPath, order := parAgent(t, scripts)
		out := parRun(t, repo, agentPath, 4)
		if out.Verdict != "DONE" {
			rt.Fatalf("plan %q: verdict %s", specs, out.Verdict)
		}

		sel, err := loadPlan(filepath.Join(repo, "plan.md"), "")
		if err != nil {
			rt.Fatal(err)
		}
		if len(sel.Tasks) != n {
			rt.Fatalf("plan %q: %d tasks extracted", specs, len(sel.Tasks))
		}
		lines := strings.Split(strings.TrimSpace(readFile(t, order)), "\n")
		firstStart, lastEnd := map[string]int{}, map[string]int{}
		for i, l := range lines {
			what, id, _ := strings.Cut(l, " ")
			if _, seen := firstStart[id]; what == "start" && !seen {
				firstStart[id] = i
			}
			if what == "end" {
				lastEnd[id] = i
			}
		}
		waits := waitsFor(sel.Tasks)
		latest := extractor.LatestWait(sel.Tasks)
		for i, x := range sel.Tasks {
			s, ok := firstStart[x.ID]
			if !ok {
				rt.Fatalf("plan %q: task %s never started: %v", specs, x.ID, lines)
			}
			if latest[i] >= 0 && !waits[x.ID][sel.Tasks[latest[i]].ID] {
				rt.Fatalf("plan %q: LatestWait says task %s waits for %s, After does not", specs, x.ID, sel.Tasks[latest[i]].ID)
			}
			for a := range waits[x.ID] {
				if e, ok := lastEnd[a]; !ok || e > s {
					rt.Fatalf("plan %q: task %s started before task %s (which it waits for) ended: %v", specs, x.ID, a, lines)
				}
			}
			if got := readFile(t, filepath.Join(repo, "f"+x.ID+".txt")); got != "task "+x.ID+"\n" {
				rt.Fatalf("plan %q: f%s.txt = %q", specs, x.ID, got)
			}
		}
		for _, rt2 := range out.Report.Tasks {
			if rt2.Status != "done" {
				rt.Fatalf("plan %q: task %s ended %s", specs, rt2.ID, rt2.Status)
			}
		}
		if len(out.Report.Tasks) != n {
			rt.Fatalf("plan %q: %d tasks in the report", specs, len(out.Report.Tasks))
		}
		checkAheadJournaled(rt, openJournal(t, repo), out.RunID)
	})
}

// waitsFor is extractor.After closed over: every task each task waits
// for, directly or through the tasks it waits for.
func waitsFor(tasks []extractor.Task) map[string]map[string]bool {
	after := extractor.After(tasks)
	out := map[string]map[string]bool{}
	for _, x := range tasks { // plan order: what x waits for is done before x
		set := map[string]bool{}
		for _, a := range after[x.ID] {
			set[a] = true
			for b := range out[a] {
				set[b] = true
			}
		}
		out[x.ID] = set
	}
	return out
}

// checkAheadJournaled checks the ahead events of run in the journal: a
// task whose unit_started says it ran in a worktree has, before it, one
// "running" and one "returned" ahead event for that worktree, and no other
// task has any.
func checkAheadJournaled(rt *rapid.T, j *cache.Journal, run string) {
	evs, err := j.Events(run)
	if err != nil {
		rt.Fatal(err)
	}
	seen := map[string][]string{} // task -> statuses of its ahead events so far
	for _, ce := range evs {
		var e Event
		if err := json.Unmarshal(ce.Data, &e); err != nil {
			rt.Fatal(err)
		}
		switch e.Type {
		case EvAhead:
			seen[e.Task] = append(seen[e.Task], e.Status+" "+e.Worktree)
		case EvUnitStarted:
			want := []string(nil)
			if e.Worktree != "" {
				want = []string{"running " + e.Worktree, "returned " + e.Worktree}
			}
			if !slices.Equal(seen[e.Task], want) {
				rt.Fatalf("task %s: unit_started (worktree %q) after ahead events %q", e.Task, e.Worktree, seen[e.Task])
			}
			delete(seen, e.Task)
		}
	}
	if len(seen) > 0 {
		rt.Fatalf("ahead events of no unit: %v", seen)
	}
}
