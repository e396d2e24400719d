package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStartup starts the real binary (`implloop --version`, which
// does next to nothing after package init) and, in the same loop, the
// reference `git --version`, and reports each one's CPU time per process
// (the child's rusage, user + system) and their ratio. Every command, each
// `implloop work` worker and each of make test's hundreds of testscript
// invocations pays this. init-ms is package init's clock as
// GODEBUG=inittrace=1 sums it, from one more start per iteration.
func BenchmarkStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "implloop")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/implloop/implloop/cmd/implloop").CombinedOutput(); err != nil {
		b.Skipf("cannot build the binary: %v\n%s", err, out)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("no git")
	}
	var il, ref time.Duration
	var initMS float64
	b.ResetTimer()
	for range b.N {
		il += cpuOf(b, exec.Command(bin, "--version"))
		ref += cpuOf(b, exec.Command(git, "--version"))
		initMS += initClock(b, bin)
	}
	n := float64(b.N)
	b.ReportMetric(float64(il.Microseconds())/1000/n, "implloop-cpu-ms/proc")
	b.ReportMetric(float64(ref.Microseconds())/1000/n, "git-cpu-ms/proc")
	b.ReportMetric(float64(il)/float64(ref), "x-git")
	b.ReportMetric(initMS/n, "init-ms")
}

// cpuOf runs c and returns the CPU time it used.
func cpuOf(b *testing.B, c *exec.Cmd) time.Duration {
	b.Helper()
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", c, err, out)
	}
	return c.ProcessState.UserTime() + c.ProcessState.SystemTime()
}

// initClock is the sum of the "ms clock" of GODEBUG=inittrace=1's lines.
func initClock(b *testing.B, bin string) float64 {
	b.Helper()
	c := exec.Command(bin, "--version")
	c.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", c, err, stderr.String())
	}
	var sum float64
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init example.com/p @2.3 ms, 5.2 ms clock, 2736752 bytes, 31429 allocs
		f := strings.Fields(sc.Text())
		if len(f) >= 7 && f[0] == "init" && f[6] == "clock," {
			v, err := strconv.ParseFloat(f[4], 64)
			if err != nil {
				b.Fatalf("inittrace line %q: %v", sc.Text(), err)
			}
			sum += v
		}
	}
	return sum
}
