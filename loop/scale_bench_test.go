package loop

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkRunScale: runs of 100 and 400 tasks in which every task leaves
// one new uncommitted file (the shape that made the journal grow with the
// square of the run while every boundary stored the whole dirty set). The
// agent is a one-line script. Reported for each size: loop time per task
// and the state the run added (journal, blobs and reports under the git
// directory, plus the git objects the boundaries wrote); and the ratios
// 400/100 the issue bounds: per task at most 1.3x, state at most 4.5x.
func BenchmarkRunScale(b *testing.B) {
	if testing.Short() {
		b.Skip("500 agent calls: not with -short")
	}
	type result struct {
		perTask time.Duration
		state   int64
	}
	run := func(b *testing.B, n int) result {
		repo := newRepo(b, map[string]string{"plan.md": fileTaskPlan(n)})
		agentPath, _ := fakeAgent(b, fileTaskAgent)
		objects0 := objectBytes(b, repo)
		t0 := time.Now()
		out, err := Run(context.Background(), Options{Settings: settingsFor(agentPath), RepoRoot: repo})
		elapsed := time.Since(t0)
		if err != nil || out.Verdict != "DONE" {
			b.Fatalf("run of %d: %v %+v", n, err, out)
		}
		state := dirBytes(b, filepath.Join(repo, ".git", "implloop")) + objectBytes(b, repo) - objects0
		return result{perTask: elapsed / time.Duration(n), state: state}
	}
	for i := 0; i < b.N; i++ {
		small, large := run(b, 100), run(b, 400)
		b.ReportMetric(float64(small.perTask.Microseconds())/1000, "ms/task@100")
		b.ReportMetric(float64(large.perTask.Microseconds())/1000, "ms/task@400")
		b.ReportMetric(float64(large.perTask)/float64(small.perTask), "per-task-400/100")
		b.ReportMetric(float64(small.state)/1e6, "MB-state@100")
		b.ReportMetric(float64(large.state)/1e6, "MB-state@400")
		b.ReportMetric(float64(large.state)/float64(small.state), "state-400/100")
	}
}

// fileTaskPlan is a plan of n tasks, task i writing out/f<i>.txt (with
// fileTaskAgent as the agent).
func fileTaskPlan(n int) string {
	var plan strings.Builder
	plan.WriteString("# Plan\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&plan, "### Task %d: Step %d\n\nWrite out/f%d.txt.\n\n", i, i, i)
	}
	return plan.String()
}

// fileTaskAgent is a fakeAgent body that leaves one new file per task.
const fileTaskAgent = `mkdir -p out && echo "task $IMPLLOOP_TASK_ID" > "out/f$IMPLLOOP_TASK_ID.txt"`

// dirBytes is the size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// objectBytes is the size of the repository's git objects (loose and
// packed), as git count-objects reports it.
func objectBytes(b *testing.B, repo string) int64 {
	var n int64
	for _, line := range strings.Split(git(b, repo, "count-objects", "-v"), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "size" || k == "size-pack") {
			kib, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			n += kib * 1024
		}
	}
	return n
}
