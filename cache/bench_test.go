package cache

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkReplay1000 is the journal's share of resuming a fully cached
// 1,000-task plan: per task, in one Batch, one FindCompleted, one
// AddReplayedUnit, one replayed PutGate and one PutTask. The reference is
// the same work with each write committed on its own and fsynced (as the
// live path's writes are), reported as the ratio reference/ours.
func BenchmarkReplay1000(b *testing.B) {
	const n = 1000
	j := openT(b, newRepo(b))
	parent := mustRun(b, j, "")
	units := make([]Unit, n)
	for i := range n {
		units[i] = complete(b, j, unitFor(parent.ID, fmt.Sprint(i), 1, "task"))
	}
	resume := func(durable bool) time.Duration {
		start := time.Now()
		r := mustRun(b, j, parent.ID)
		lin, err := j.LineageIDs(r.ID)
		if err != nil {
			b.Fatal(err)
		}
		for i, want := range units {
			// One batch per replayed task; the reference commits each write
			// on its own, fsynced.
			replay := func(b *Journal) error {
				u, ok, err := b.FindCompleted(lin, want.Identity)
				if err != nil || !ok {
					return fmt.Errorf("miss %d: %v", i, err)
				}
				if _, err := b.AddReplayedUnit(r.ID, u.UnitID, u); err != nil {
					return err
				}
				if err := b.PutGate(Gate{RunID: r.ID, TaskID: u.TaskID, Attempt: 1, Command: "true", Passed: true, Replayed: !durable}); err != nil {
					return err
				}
				return b.PutTask(Task{RunID: r.ID, TaskID: u.TaskID, Ordinal: i, Status: TaskDone, Source: SourceReplayed, Attempts: 1})
			}
			var err error
			if durable {
				err = replay(j)
			} else {
				err = j.Batch(false, replay)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := j.FinishRun(r.ID, "DONE", 0, time.Time{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var ours, ref time.Duration
	b.ResetTimer()
	for range b.N {
		ours += resume(false)
	}
	b.StopTimer()
	for range b.N {
		ref += resume(true)
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "ms/resume")
	b.ReportMetric(float64(ref)/float64(ours), "fsync-each/ours")
}

// BenchmarkImportRecords is the journal's share of a pull: 100 runs of
// 100 tasks (a unit, a gate and a task row each) imported into a new
// journal in one ImportRecords. Reported: ms per import and µs per row.
func BenchmarkImportRecords(b *testing.B) {
	const runs, tasks = 100, 100
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	recs := make([]*Records, runs)
	for r := range recs {
		id := fmt.Sprintf("r-20261130-1000%02d-%04x", r%60, r)
		rec := &Records{Run: Run{ID: id, PlanPath: "plan.md", PlanSHA256: "x", Verdict: "DONE",
			StartedAt: start.Add(time.Duration(r) * time.Minute), FinishedAt: start.Add(time.Duration(r+1) * time.Minute)}}
		for t := range tasks {
			u := unitFor(id, fmt.Sprint(t+1), 1, fmt.Sprintf("task %d of %s", t+1, id))
			u.StartedAt = rec.Run.StartedAt.Add(time.Duration(t) * time.Second)
			u.Status, u.TokensIn, u.FinishedAt = UnitCompleted, 10, u.StartedAt.Add(time.Second)
			rec.Units = append(rec.Units, u)
			rec.Gates = append(rec.Gates, Gate{RunID: id, TaskID: u.TaskID, Attempt: 1, Command: "true", Passed: true, At: u.FinishedAt})
			rec.Tasks = append(rec.Tasks, Task{RunID: id, TaskID: u.TaskID, Ordinal: t, Status: TaskDone, Source: SourceLive, Attempts: 1,
				StartedAt: u.StartedAt, FinishedAt: u.FinishedAt})
		}
		recs[r] = rec
	}
	var took time.Duration
	for range b.N {
		b.StopTimer()
		j := openT(b, newRepo(b))
		b.StartTimer()
		t0 := time.Now()
		added, err := j.ImportRecords(slices.Values(recs), nil)
		took += time.Since(t0)
		if err != nil || len(added) != runs {
			b.Fatalf("import: %v (%d added)", err, len(added))
		}
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/import")
	b.ReportMetric(float64(took.Microseconds())/float64(b.N*runs*tasks*3), "µs/row")
}
