package loop

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkParallel8 runs 8 independent ([P]) tasks whose agent sleeps 2 s,
// with --jobs 4 and, as the reference in the same benchmark, --jobs 1.
// Issue 15's target: --jobs 4 at most 1.3x the 4 s two rounds of four
// calls take ("x-ideal"), against 16 s serial.
func BenchmarkParallel8(b *testing.B) {
	specs := make([]string, 8)
	scripts := map[string]string{}
	for i := range specs {
		id := fmt.Sprint(i + 1)
		specs[i] = id + "[P]"
		scripts[id] = "sleep 2; echo " + id + " > f" + id + ".txt"
	}
	var par, ser time.Duration
	for range b.N {
		for _, jobs := range []int{4, 1} {
			repo := newRepo(b, nil)
			writeFile(b, filepath.Join(repo, "plan.md"), parPlan(specs...))
			agentPath, _ := parAgent(b, scripts)
			s := settingsFor(agentPath)
			s.Jobs = jobs
			t0 := time.Now()
			out := runIn(b, repo, s)
			d := time.Since(t0)
			if out.Verdict != "DONE" {
				b.Fatalf("--jobs %d: %s", jobs, out.Verdict)
			}
			if jobs == 1 {
				ser += d
			} else {
				par += d
			}
		}
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((par / n).Milliseconds()), "ms-jobs4")
	b.ReportMetric(float64((ser / n).Milliseconds()), "ms-jobs1")
	b.ReportMetric(float64(par/n)/float64(4*time.Second), "x-ideal")
	b.Logf("8 tasks of 2 s: --jobs 4 %s (%.2fx the ideal 4 s; target at most 1.3x), --jobs 1 %s",
		(par / n).Round(time.Millisecond), float64(par/n)/float64(4*time.Second), (ser / n).Round(time.Millisecond))
}
