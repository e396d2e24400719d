//go:build unix

package gitobj

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

// BenchmarkWriter writes what a worker's kept files write each task (a
// blob, a tree of it, a commit of the tree) in process, and with git as
// before (hash-object, mktree, commit-tree: the reference), in the same
// run, and reports the ratios of their wall times and of their CPU times
// (this process's and its children's: the processes' start included,
// what a worker pays).
func BenchmarkWriter(b *testing.B) {
	dir := b.TempDir()
	gittest.At(b, dir).Git("init", "-q")
	git := dir + "/.git"
	in := Open(Repo{Dir: dir, GitDir: git, CommonDir: git})
	ref := Open(Repo{Dir: dir}) // no object directory given: git writes
	if !in.InProcess() || ref.InProcess() {
		b.Fatal("writers not as expected")
	}
	when := time.Unix(1700000000, 0).UTC()
	write := func(w *Writer, i int) {
		blob, err := w.Blob(ctx, []byte(fmt.Sprintf("plan %d\n", i)))
		if err != nil {
			b.Fatal(err)
		}
		tree, err := w.Tree(ctx, []Entry{{ModeFile, "plan", blob}})
		if err != nil {
			b.Fatal(err)
		}
		who := Ident{"implloop", "implloop@localhost", when}
		if _, err := w.Commit(ctx, Commit{Tree: tree, Author: who, Committer: who, Message: fmt.Sprintf("kept %d\n", i)}); err != nil {
			b.Fatal(err)
		}
	}
	var ours, theirs, oursCPU, theirsCPU time.Duration
	for i := 0; i < b.N; i++ {
		t0, c0 := time.Now(), cpu()
		write(in, 2*i)
		t1, c1 := time.Now(), cpu()
		write(ref, 2*i+1)
		ours, theirs = ours+t1.Sub(t0), theirs+time.Since(t1)
		oursCPU, theirsCPU = oursCPU+c1-c0, theirsCPU+cpu()-c1
	}
	b.ReportMetric(float64(ours)/float64(theirs), "gitobj/git")
	b.ReportMetric(float64(oursCPU)/float64(theirsCPU), "cpu-gitobj/git")
	b.ReportMetric(float64(oursCPU.Microseconds())/float64(b.N), "cpu-µs-gitobj/op")
	b.ReportMetric(float64(theirsCPU.Microseconds())/float64(b.N), "cpu-µs-git/op")
}

// cpu is the CPU time this process and its waited-for children (git)
// used so far.
func cpu() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
