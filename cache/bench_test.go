package cache

import (
	"fmt"
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
