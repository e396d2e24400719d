package boundary

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchRepos caches the generated repositories for the life of the test
// process: generating 100,000 files takes a while, and -benchtime 3x calls a
// benchmark more than once.
var benchRepos struct {
	sync.Mutex
	dirs map[int]string
}

func cleanupBench() {
	benchRepos.Lock()
	defer benchRepos.Unlock()
	for _, d := range benchRepos.dirs {
		os.RemoveAll(d)
	}
}

// benchRepo returns a repository with n committed files and 10 dirty paths
// (8 modified, 1 deleted, 1 untracked), with a stat-fresh index.
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	benchRepos.Lock()
	defer benchRepos.Unlock()
	if d, ok := benchRepos.dirs[n]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("boundary-bench-%d-", n))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	r := &testRepo{t: b, dir: dir}
	r.git("init", "-q")
	// One fast-import stream: n blobs and a commit naming them.
	var stream bytes.Buffer
	w := bufio.NewWriter(&stream)
	path := func(i int) string { return fmt.Sprintf("d%03d/e%02d/f%06d.txt", i/1000, i/100%10, i) }
	for i := 0; i < n; i++ {
		content := fmt.Sprintf("file %d\nsome content to hash\n", i)
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(content), content)
	}
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter bench <b@example.com> 1700000000 +0000\ndata 5\nbench\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "M 100644 :%d %s\n", i+1, path(i))
	}
	w.Flush()
	r.gitIn(stream.Bytes(), "fast-import", "--quiet")
	r.git("reset", "-q", "--hard", "main")
	// Let the files' mtimes fall behind the index's, so no entry is racily
	// clean, then write the stat data once.
	time.Sleep(1100 * time.Millisecond)
	r.git("update-index", "-q", "--refresh")
	for i := 0; i < 8; i++ {
		r.write(path(i*(n/8)+1), fmt.Sprintf("dirty %d\n", i))
	}
	r.remove(path(n - 1))
	r.write("untracked/new.txt", "new\n")
	r.git("status", "--porcelain=v2") // warm the caches
	if benchRepos.dirs == nil {
		benchRepos.dirs = map[int]string{}
	}
	benchRepos.dirs[n] = dir
	b.Logf("generated %d files in %s", n, time.Since(start).Round(time.Millisecond))
	return dir
}

// BenchmarkTake compares boundary.Take with `git status --porcelain=v2 -z`
// on the same repository in the same run, and reports the ratio
// (take/git-status; the target is at most 1.25 at 100,000 files).
// BenchmarkTake: a boundary as the loop takes it (WithRun, WithPrev: the
// snapshot committed on the run's ref) in a repository of n files with 10
// dirty paths, one of which changes between boundaries, against
// `git status --porcelain=v2 -z --untracked-files=all` (without optional
// locks, as a reader that must not disturb an agent runs it) in the same
// loop. "take/git-status" is the ratio the design promises to keep at or
// under 1.25 at 100,000 files. The read-only snapshot `implloop status`
// takes (a temporary index and object directory) is reported beside it.
func BenchmarkTake(b *testing.B) {
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
			edit := filepath.Join(dir, "d000", "e00", "f000001.txt")
			var prev, prevKeep Snapshot
			step := 0
			// keep: as the loop takes it, keeping the plan and the
			// ignored files (there are none: what keeping costs then).
			takeRun := func(run string, prev *Snapshot, keep bool) {
				step++
				os.WriteFile(edit, []byte(fmt.Sprintf("edit %d\n", step)), 0o644)
				opts := []Option{WithRun(run)}
				if keep {
					opts = append(opts, WithKeep(Keep{Plan: "untracked/new.txt", Ignored: true,
						Limits: KeepLimits{FileSize: DefaultKeepFileSize, RunSize: DefaultKeepRunSize, Files: DefaultKeepFiles}}))
				}
				if prev.Commit != "" {
					opts = append(opts, WithPrev(*prev))
				}
				s, err := Take(ctx, dir, opts...)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Paths) != 10 {
					b.Fatalf("%d dirty paths, want 10", len(s.Paths))
				}
				*prev = s
			}
			take := func() { takeRun("bench", &prev, false) }
			takeKeep := func() { takeRun("bench-keep", &prevKeep, true) }
			readOnly := func() {
				if _, err := Take(ctx, dir); err != nil {
					b.Fatal(err)
				}
			}
			// Warm each (the first boundary seeds the private index).
			status()
			take()
			take()
			takeKeep()
			takeKeep()
			readOnly()
			var git, ours, ro, kept time.Duration
			timed := []struct {
				f   func()
				sum *time.Duration
			}{{status, &git}, {take, &ours}, {takeKeep, &kept}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Each in turn goes first: whatever the one before left
				// in the caches is shared out evenly.
				for j := range timed {
					x := timed[(i+j)%len(timed)]
					t0 := time.Now()
					x.f()
					*x.sum += time.Since(t0)
				}
				t2 := time.Now()
				readOnly()
				ro += time.Since(t2)
			}
			b.ReportMetric(float64(ours)/float64(git), "take/git-status")
			b.ReportMetric(float64(kept)/float64(ours), "keep/take")
			b.ReportMetric(float64(kept)/float64(git), "keep/git-status")
			b.ReportMetric(float64(ro)/float64(git), "readonly/git-status")
			b.ReportMetric(float64(ours)/1e6/float64(b.N), "take-ms/op")
			b.ReportMetric(float64(git)/1e6/float64(b.N), "git-status-ms/op")
		})
	}
}

// BenchmarkFirstBoundary: a run's first boundary, which lists the
// ignored files to keep (git status --ignored=matching, doing without its
// untracked cache once) and records the run's ignore rules, against the
// same boundary keeping nothing, in a repository of n files with 10 dirty
// paths and no ignored file. Both follow a boundary of another run, so
// the private index is warm. "first-keep/first" is what keeping costs at
// the start of a run; BenchmarkTake's "keep/take" at every boundary after.
func BenchmarkFirstBoundary(b *testing.B) {
	for _, n := range []int{20000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			if n > 20000 && testing.Short() {
				b.Skip("100,000 files: not with -short")
			}
			dir := benchRepo(b, n)
			ctx := context.Background()
			keep := WithKeep(Keep{Plan: "untracked/new.txt", Ignored: true,
				Limits: KeepLimits{FileSize: DefaultKeepFileSize, RunSize: DefaultKeepRunSize, Files: DefaultKeepFiles}})
			first := func(run string, opts ...Option) {
				if _, err := Take(ctx, dir, append([]Option{WithRun(run)}, opts...)...); err != nil {
					b.Fatal(err)
				}
			}
			first("warm")
			first("warm", keep)
			var plain, kept time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				first(fmt.Sprintf("plain%d", i))
				t1 := time.Now()
				first(fmt.Sprintf("keep%d", i), keep)
				plain, kept = plain+t1.Sub(t0), kept+time.Since(t1)
			}
			b.ReportMetric(float64(kept)/float64(plain), "first-keep/first")
			b.ReportMetric(float64(plain)/1e6/float64(b.N), "first-ms/op")
		})
	}
}

func runStatus(b *testing.B, dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.Output(); err != nil || len(out) == 0 {
		b.Fatalf("git %v: %v", args, err)
	}
}

// BenchmarkTakeSeries is a run's worth of boundaries over work that stays
// uncommitted: 200 dirty files (150 modified, 50 untracked, 8 KiB each),
// then 50 boundaries (WithRun, WithPrev: commits chained on the run's ref),
// one file changing between them. The reference is `git status` in the same
// loop; the ratio is per boundary (take/git-status).
func BenchmarkTakeSeries(b *testing.B) {
	const dirty, steps = 200, 50
	r := newTestRepo(b)
	body := strings.Repeat("some source line of a file that an agent edits\n", 170)
	path := func(i int) string { return fmt.Sprintf("src/p%02d/f%03d.go", i%10, i) }
	for i := 0; i < 1000; i++ {
		r.write(path(i), fmt.Sprintf("package p // %d\n", i))
	}
	r.commitAll("base")
	old := time.Now().Add(-time.Hour)
	for i := 0; i < dirty; i++ {
		p := path(i)
		if i >= 150 {
			p = fmt.Sprintf("new/n%02d/u%03d.go", i%5, i)
		}
		r.write(p, fmt.Sprintf("// %d\n%s", i, body))
		os.Chtimes(filepath.Join(r.dir, filepath.FromSlash(p)), old, old)
	}
	ctx := context.Background()
	var take, git time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run := fmt.Sprintf("bench%d", i)
		var prev Snapshot
		for seq := 0; seq < steps; seq++ {
			r.write(path(seq%dirty), fmt.Sprintf("// step %d %d\n%s", i, seq, body))
			opts := []Option{WithRun(run)}
			if seq > 0 {
				opts = append(opts, WithPrev(prev))
			}
			t0 := time.Now()
			s, err := Take(ctx, r.dir, opts...)
			t1 := time.Now()
			runStatus(b, r.dir, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all")
			take, git = take+t1.Sub(t0), git+time.Since(t1)
			if err != nil {
				b.Fatal(err)
			}
			if len(s.Paths) != dirty {
				b.Fatalf("%d dirty paths, want %d", len(s.Paths), dirty)
			}
			prev = s
		}
	}
	n := float64(b.N * steps)
	b.ReportMetric(float64(take)/float64(git), "take/git-status")
	b.ReportMetric(float64(take)/1e6/n, "take-ms/boundary")
	b.ReportMetric(float64(git)/1e6/n, "git-status-ms/boundary")
}
