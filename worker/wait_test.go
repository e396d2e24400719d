package worker

import (
	"context"
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

// A claim is taken over once seen unchanged for its worker's lease (as
// the lease says), and the reason says both how long it was seen
// unchanged and the lease: a watcher with a longer lease of its own
// waits longer than the holder's before it reads that lease.
func TestStaleSaysHowLong(t *testing.T) {
	now := time.Unix(1000, 0)
	w := &worker{lease: 10 * time.Second, seen: map[string]seenClaim{}}
	ctx := context.Background()
	if why := w.stale(ctx, "T1", "aaa", now); why != "" {
		t.Fatalf("first seen: %q", why)
	}
	s := w.seen["T1"]
	s.period, s.checked = 3*time.Second, true // its lease, as read
	w.seen["T1"] = s
	// It is read once the claim was unchanged for this worker's own
	// lease (10 s): past the holder's (3 s) by then.
	if why := w.stale(ctx, "T1", "aaa", now.Add(9900*time.Millisecond)); why != "" {
		t.Fatalf("within this worker's lease: %q", why)
	}
	why := w.stale(ctx, "T1", "aaa", now.Add(10240*time.Millisecond))
	if want := "its claim was unchanged for 10.2s, past its worker's lease (3s): its worker stopped"; why != want {
		t.Fatalf("got %q, want %q", why, want)
	}
	if why := w.stale(ctx, "T1", "bbb", now.Add(11*time.Second)); why != "" {
		t.Fatalf("renewed: %q", why)
	}
}
