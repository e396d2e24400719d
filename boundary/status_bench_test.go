package boundary

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkStatus: the read-only snapshot `implloop status` takes (Take
// without WithRun: from one git status, writing nothing) against
// `git status --porcelain=v2 -z --untracked-files=all` (without optional
// locks, as a reader runs it) in the same loop, on a repository of n files
// with 10 dirty paths. "status/git-status" is issue 33's ratio: at most
// 1.25 at 100,000 files. "slow/git-status" is the snapshot the long way
// (`git add -A` into a copy of the index, `git write-tree` into a
// temporary object directory), as it was before.
func BenchmarkStatus(b *testing.B) {
	for _, n := range []int{20000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			if n > 20000 && testing.Short() {
				b.Skip("100,000 files: not with -short")
			}
			dir := benchRepo(b, n)
			ctx := context.Background()
			status := func() {
				runStatus(b, dir, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all")
			}
			ours := func() {
				s, err := Take(ctx, dir)
				if err != nil {
					b.Fatal(err)
				}
				if !s.fast || len(s.Paths) != 10 {
					b.Fatalf("fast %v, %d dirty paths, want 10", s.fast, len(s.Paths))
				}
			}
			slow := func() {
				if _, err := Take(ctx, dir, withSlowReadOnly()); err != nil {
					b.Fatal(err)
				}
			}
			status()
			ours()
			var git, took, slowed time.Duration
			timed := []struct {
				f   func()
				sum *time.Duration
			}{{status, &git}, {ours, &took}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Each in turn goes first.
				for j := range timed {
					x := timed[(i+j)%len(timed)]
					t0 := time.Now()
					x.f()
					*x.sum += time.Since(t0)
				}
				if i == 0 {
					t0 := time.Now()
					slow()
					slowed = time.Since(t0)
				}
			}
			b.ReportMetric(float64(took)/float64(git), "status/git-status")
			b.ReportMetric(float64(slowed)/(float64(git)/float64(b.N)), "slow/git-status")
			b.ReportMetric(float64(took)/1e6/float64(b.N), "status-ms/op")
			b.ReportMetric(float64(git)/1e6/float64(b.N), "git-status-ms/op")
		})
	}
}
