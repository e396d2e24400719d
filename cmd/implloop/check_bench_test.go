package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

const benchPlan = "# Plan\n\n### Task 1: One\n\n```text path=a.txt\none\n```\n\n### Task 2: Two\n\n```text path=b.txt\ntwo\n```\n\n```verify\ntest -f %s\n```\n"

// checkBenchRepo is a repository with 10 journaled runs of plan.md (the
// last one PARTIAL), an edit of the plan staged (so check lints it and
// computes the resume preview of the PARTIAL run) and a few other staged
// files.
func checkBenchRepo(b *testing.B) string {
	b.Helper()
	r := gittest.New(b)
	dir := r.Dir
	write := r.Write
	write("plan.md", strings.Replace(benchPlan, "%s", "b.txt", 1))
	r.Git("add", "plan.md")
	r.Git("commit", "-q", "-m", "plan")
	ios := &ioStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard, workingDir: dir}
	for i := range 10 {
		args := []string{"run", "plan.md", "--agent", "builtin", "--max-attempts", "1"}
		want := exitDone
		if i == 9 {
			write("plan.md", strings.Replace(benchPlan, "%s", "c.txt", 1))
			want = exitPartial
		} else {
			args = append(args, "--model", "m"+string(rune('0'+i))) // ten distinct runs, all live
		}
		if code := run(args, ios); code != want {
			b.Fatalf("run %d exited %d, want %d", i, code, want)
		}
	}
	if err := os.Remove(filepath.Join(dir, "BLOCKED.md")); err != nil {
		b.Fatal(err)
	}
	write("plan.md", strings.Replace(strings.Replace(benchPlan, "%s", "c.txt", 1), "path=b.txt", "path=c.txt", 1))
	for i := range 5 {
		write("f"+string(rune('0'+i))+".txt", "x\n")
	}
	r.Git("add", "-A")
	return dir
}

// BenchmarkCheck times `implloop check` on a repository with 10 journaled
// runs, in-process and as the hook runs it (a process), against
// `git diff --cached --name-status` alone in the same run (the one git call
// any pre-commit check of staged changes makes); the target is under
// 100 ms for the process.
func BenchmarkCheck(b *testing.B) {
	dir := checkBenchRepo(b)
	var errOut bytes.Buffer
	ios := &ioStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut, workingDir: dir}
	o := &checkOptions{io: ios}
	if err := checkRun(o); err != nil {
		b.Fatalf("check: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "will re-run task 2") {
		b.Fatalf("check printed no resume warning:\n%s", errOut.String())
	}
	ios.ErrOut = io.Discard

	bin, err := exec.LookPath("implloop") // testscript.Main put it on PATH
	if err != nil {
		b.Fatal(err)
	}
	gitDiff := func() {
		c := exec.Command("git", "diff", "--cached", "--name-status")
		c.Dir = dir
		if out, err := c.Output(); err != nil || len(out) == 0 {
			b.Fatalf("git diff: %v", err)
		}
	}
	inProcess := func() {
		if err := checkRun(o); err != nil {
			b.Fatal(err)
		}
	}
	process := func() {
		c := exec.Command(bin, "check")
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("implloop check: %v\n%s", err, out)
		}
	}
	gitDiff()
	inProcess()
	process()
	var ref, ours, proc time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		gitDiff()
		t1 := time.Now()
		inProcess()
		t2 := time.Now()
		process()
		ref, ours, proc = ref+t1.Sub(t0), ours+t2.Sub(t1), proc+time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours)/1e6/n, "check-ms/op")
	b.ReportMetric(float64(proc)/1e6/n, "check-process-ms/op")
	b.ReportMetric(float64(ref)/1e6/n, "git-diff-ms/op")
	b.ReportMetric(float64(ours)/float64(ref), "check/git-diff")
	b.ReportMetric(float64(proc)/float64(ref), "check-process/git-diff")
}
