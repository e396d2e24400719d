package loop

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/unit"
)

// BenchmarkAcrossRunsLookup is what looking for a replay across runs adds
// to each task of a fresh run: the lookup for 100 tasks in a journal
// holding 100 other runs of the same plan (100 tasks each, the same
// identities, every one from another tree: the worst miss, each candidate
// checked), against the same lookups in a journal with no other run.
// Reported: ms added per task (the issue asks for at most 1) and the
// ratio.
func BenchmarkAcrossRunsLookup(b *testing.B) {
	const runs, tasks = 100, 100
	empty, full := journalT(b), journalT(b)
	result, err := full.PutBlob([]byte(`{"result":"ok"}`))
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, tasks)
	for t := range tasks {
		ids[t] = identity.DigestCanonical([]byte(fmt.Sprintf(`{"task":{"id":"%d"},"v":1}`, t+1)))
	}
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for r := range runs {
		run := &cache.Run{ID: fmt.Sprintf("r-20261130-1000%02d-%04x", r%60, r), PlanPath: "plan.md", PlanSHA256: "x",
			StartedAt: start.Add(time.Duration(r) * time.Minute)}
		if err := full.CreateRun(run); err != nil {
			b.Fatal(err)
		}
		err := full.Batch(false, func(w *cache.Journal) error {
			if _, err := w.PutBoundary(cache.Boundary{RunID: run.ID, Commit: "c", Tree: fmt.Sprintf("tree-%d-0", r)}); err != nil {
				return err
			}
			for t := range tasks {
				id := strconv.Itoa(t + 1)
				pre := []byte(fmt.Sprintf(`{"task":{"id":"%d"},"v":1}`, t+1))
				u := cache.Unit{RunID: run.ID, UnitID: id + "/implement~a1", TaskID: id, Role: "implement", Attempt: 1,
					Identity: ids[t], Preimage: pre}
				if err := w.StartUnit(u); err != nil {
					return err
				}
				if err := w.FinishUnit(run.ID, u.UnitID, cache.Outcome{Status: cache.UnitCompleted, Result: result}); err != nil {
					return err
				}
				if err := w.PutTask(cache.Task{RunID: run.ID, TaskID: id, Ordinal: t, Status: cache.TaskDone, Source: cache.SourceLive, Attempts: 1}); err != nil {
					return err
				}
				if _, err := w.PutBoundary(cache.Boundary{RunID: run.ID, AfterTask: id, Commit: "c", Tree: fmt.Sprintf("tree-%d-%d", r, t+1)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	lookups := func(j *cache.Journal) time.Duration {
		e := &engine{j: j, lineage: &lineage{j: j}, runID: "r-20261130-120000-self", s: Settings{Jobs: 1}, prev: boundary.Snapshot{Tree: "this tree"}}
		t0 := time.Now()
		for t := range tasks {
			task := extractor.Task{ID: strconv.Itoa(t + 1)}
			units := []unit.Unit{{ID: task.ID + "/implement~a1", Identity: ids[t]}}
			if _, ok := e.acrossMatch(task, unit.Facts{Attempt: 1}, units, e.prev.Tree, e.acrossWork(context.Background())); ok {
				b.Fatal("a replay across runs from another tree")
			}
		}
		return time.Since(t0)
	}
	var none, many time.Duration
	b.ResetTimer()
	for range b.N {
		none += lookups(empty)
		many += lookups(full)
	}
	perTask := float64(b.N * tasks)
	b.ReportMetric(float64(many-none)/perTask/1e6, "ms-added/task")
	b.ReportMetric(float64(many)/float64(none), "full/empty")
}

func journalT(b *testing.B) *cache.Journal {
	j, err := cache.Open(gittest.New(b).Dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return j
}

// BenchmarkAcrossRunsChainLookup is what finding a replay across runs
// costs per task when it is found: 100 tasks another run did, each from
// the tree this run's is at (each task's tree another), each in two attempts (a failed gate, then the fix), against the
// same lookups when that run did each in one. The chain costs its second
// attempt's units, computed from the carried feedback and looked up in
// that run. Reported: ms per task for the chain, and the ratio.
func BenchmarkAcrossRunsChainLookup(b *testing.B) {
	const tasks = 100
	e := &engine{runID: "r-20261130-120000-self", s: DefaultSettings(), sel: &extractor.Selection{Count: tasks, PlanSHA256: "x"}}
	e.s.Agent, e.s.Verify = "builtin", "make check"
	ts := make([]extractor.Task, tasks)
	units := make([][2][]unit.Unit, tasks)
	for i := range ts {
		ts[i] = extractor.Task{ID: strconv.Itoa(i + 1), Ordinal: i + 1, Text: fmt.Sprintf("### Task %d\n\nDo %d.\n", i+1, i+1)}
		for a := range 2 {
			f := unit.Facts{Attempt: a + 1}
			if a == 1 {
				f.GateFeedback = "FAIL: task " + ts[i].ID
			}
			us, err := unit.WorkList(ts[i], e.unitParams(ts[i]), f)
			if err != nil {
				b.Fatal(err)
			}
			units[i][a] = us
		}
	}
	fill := func(j *cache.Journal, attempts int) {
		result, err := j.PutBlob([]byte(`{"result":"ok"}`))
		if err != nil {
			b.Fatal(err)
		}
		run := &cache.Run{ID: "r-20261130-100000-0001", PlanPath: "plan.md", PlanSHA256: "x", StartedAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
		if err := j.CreateRun(run); err != nil {
			b.Fatal(err)
		}
		err = j.Batch(false, func(w *cache.Journal) error {
			if _, err := w.PutBoundary(cache.Boundary{RunID: run.ID, Commit: "c", Tree: "tree-0"}); err != nil {
				return err
			}
			for i, t := range ts {
				for a := range attempts {
					for _, u := range units[i][a] {
						canon, err := identity.Canonical(u.Preimage)
						if err != nil {
							return err
						}
						cu := cache.Unit{RunID: run.ID, UnitID: u.ID, TaskID: t.ID, Role: u.Role, Attempt: u.Attempt, Identity: u.Identity, Preimage: canon}
						if err := w.StartUnit(cu); err != nil {
							return err
						}
						if err := w.FinishUnit(run.ID, u.ID, cache.Outcome{Status: cache.UnitCompleted, Result: result}); err != nil {
							return err
						}
					}
					g := cache.Gate{RunID: run.ID, TaskID: t.ID, Attempt: a + 1, Command: e.s.Verify, Passed: a+1 == attempts}
					if !g.Passed {
						g.ExitCode, g.Feedback = 1, "FAIL: task "+t.ID
					}
					if err := w.PutGate(g); err != nil {
						return err
					}
				}
				if err := w.PutTask(cache.Task{RunID: run.ID, TaskID: t.ID, Ordinal: i, Status: cache.TaskDone, Source: cache.SourceLive, Attempts: attempts}); err != nil {
					return err
				}
				if _, err := w.PutBoundary(cache.Boundary{RunID: run.ID, AfterTask: t.ID, Commit: "c", Tree: "tree-" + t.ID}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	single, chain := journalT(b), journalT(b)
	fill(single, 1)
	fill(chain, 2)
	lookups := func(j *cache.Journal, attempts int) time.Duration {
		e.j, e.lineage = j, &lineage{j: j}
		t0 := time.Now()
		for i, t := range ts {
			a, ok := e.acrossMatch(t, unit.Facts{Attempt: 1}, units[i][0], "tree-"+strconv.Itoa(i), nil)
			if !ok || len(a.attempts) != attempts {
				b.Fatalf("task %s: no replay across runs in %d attempt(s)", t.ID, attempts)
			}
		}
		return time.Since(t0)
	}
	var one, two time.Duration
	b.ResetTimer()
	for range b.N {
		one += lookups(single, 1)
		two += lookups(chain, 2)
	}
	perTask := float64(b.N * tasks)
	b.ReportMetric(float64(two)/perTask/1e6, "ms/task")
	b.ReportMetric(float64(two)/float64(one), "chain/single")
}
