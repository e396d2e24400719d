package worker

import (
	"fmt"
	"testing"
	"time"
)

// A waiting worker looks again soon after the claims moved, then less
// and less often while they stay still, never less often than its poll
// period; any move makes it look soon again.
func TestNextWait(t *testing.T) {
	w := &worker{poll: 2 * time.Second}
	a := map[string]claimState{"1": {value: "aaa"}}
	b := map[string]claimState{"1": {value: "bbb"}}
	var got []time.Duration
	for _, c := range []map[string]claimState{a, a, a, a, a, a, a, b, b, a} {
		got = append(got, w.nextWait(c))
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms, 100 * ms, 200 * ms, 100 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	// A short lease's poll period caps the first wait too.
	w = &worker{poll: 50 * ms}
	if d := w.nextWait(a); d != 50*ms {
		t.Fatalf("first wait %v under a 50ms poll period", d)
	}
}

// A worker's seal names its run and at most sealWindow-1 it pushed
// before, the newest.
func TestSealNext(t *testing.T) {
	var last []sealedRun
	for i := range 100 {
		last = sealNext(last, sealedRun{run: fmt.Sprint(i)})
		if want := min(i+1, sealWindow-1); len(last) != want || last[len(last)-1].run != fmt.Sprint(i) || last[0].run != fmt.Sprint(i+1-want) {
			t.Fatalf("after run %d: %d sealed again, from %s, want %d", i, len(last), last[0].run, want)
		}
	}
}

// An idle worker pulls the results no task waits for a poll period after
// it went idle and each poll period after, and at once when nothing else
// is left (waiting: 0).
func TestIdlePullDue(t *testing.T) {
	now := time.Unix(1000, 0)
	w := &worker{poll: 2 * time.Second, now: func() time.Time { return now }}
	steps := []struct {
		after   time.Duration
		waiting int
		want    bool
	}{
		{0, 3, false},                      // just went idle
		{time.Second, 3, false},            // within the poll period
		{time.Second, 3, true},             // a poll period idle
		{100 * time.Millisecond, 3, false}, // pulled just now
		{100 * time.Millisecond, 0, true},  // nothing left but them
		{100 * time.Millisecond, 0, true},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		if got := w.idlePullDue(s.waiting); got != s.want {
			t.Fatalf("step %d: %v, want %v", i, got, s.want)
		}
	}
}
