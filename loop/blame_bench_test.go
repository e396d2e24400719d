package loop

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkBlame: implloop blame of a 5,000-line file written by 50 tasks
// (100 lines each) against `git blame --first-parent` of the same file
// along the run's ref, in the same loop. The issue bounds the ratio at 3x.
func BenchmarkBlame(b *testing.B) {
	repo := newRepo(b, map[string]string{"plan.md": fileTaskPlan(50)})
	agentPath, _ := fakeAgent(b, `i=0; while [ $i -lt 100 ]; do echo "task $IMPLLOOP_TASK_ID line $i"; i=$((i+1)); done >> big.txt`)
	out, err := Run(context.Background(), Options{Settings: settingsFor(agentPath), RepoRoot: repo})
	if err != nil || out.Verdict != "DONE" {
		b.Fatalf("run: %v %+v", err, out)
	}
	j := openJournal(b, repo)
	last, _, err := j.LastBoundary(out.RunID)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var ours, git time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		lines, err := blameLines(ctx, j, repo, out.RunID, "big.txt", 0, 0)
		ours += time.Since(t0)
		if err != nil || len(lines) != 5000 || lines[4999].Task != "50" {
			b.Fatalf("blame: %v, %d lines", err, len(lines))
		}
		t1 := time.Now()
		c := exec.Command("git", "blame", "--porcelain", "--first-parent", last.Commit, "--", "big.txt")
		c.Dir = repo
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		git += time.Since(t1)
	}
	b.ReportMetric(float64(ours)/float64(git), "blame/git-blame")
	b.ReportMetric(float64(ours.Microseconds())/1000/float64(b.N), "ms/blame")
	b.ReportMetric(float64(git.Microseconds())/1000/float64(b.N), "ms/git-blame")
}
