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
			if _, ok := e.acrossRuns(context.Background(), task, unit.Facts{Attempt: 1}, []unit.Unit{{ID: task.ID + "/implement~a1", Identity: ids[t]}}); ok {
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
