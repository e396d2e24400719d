package sandbox

import (
	"testing"
	"time"

	"github.com/implloop/implloop/agent"
)

// BenchmarkSandboxOverhead: what --sandbox adds to an agent call (issue
// 29: at most 30 ms). Each iteration makes 100 calls of `true` through
// the exec backend as the loop makes them, without the sandbox and then
// with it (each call readied by Sandbox.Call: git layout, implloop's refs
// kept loose, the rules), and reports both per call, the difference, the
// ratio, and how much of the difference is implloop's own readying
// (prep-ms/call; the rest is bubblewrap making and removing namespaces).
func BenchmarkSandboxOverhead(b *testing.B) {
	r := newRepo(b)
	s := newSandbox(b, r.options(Options{}))
	ag, err := agent.New("exec", agent.Options{Command: "true"})
	if err != nil {
		b.Fatal(err)
	}
	var prep time.Duration
	call := func(sandboxed bool) {
		req := agent.Request{Dir: r.dir}
		if sandboxed {
			t0 := time.Now()
			c, err := s.Call(b.Context(), r.dir)
			prep += time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req.Wrap = c.Wrap
		}
		res, err := ag.Run(b.Context(), req)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("true: exit %d, %v", res.ExitCode, err)
		}
	}
	const calls = 100
	var plain, boxed time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		for range calls {
			call(false)
		}
		t1 := time.Now()
		for range calls {
			call(true)
		}
		plain, boxed = plain+t1.Sub(t0), boxed+time.Since(t1)
		n += calls
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	b.ReportMetric(ms(plain), "plain-ms/call")
	b.ReportMetric(ms(boxed), "sandboxed-ms/call")
	b.ReportMetric(ms(boxed-plain), "added-ms/call")
	b.ReportMetric(ms(prep), "prep-ms/call")
	b.ReportMetric(float64(boxed)/float64(plain), "ratio")
}
