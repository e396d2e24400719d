package worker

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// Eight workers that look at the same 32 ready tasks at once (a fleet's
// start) mostly claim different ones: the first claims of the benchmark's
// fleet (BenchmarkWorkers, ids w1..w8).
func TestSpreadEightWorkers(t *testing.T) {
	id := func(i int) string { return fmt.Sprintf("T%03d", i+1) }
	picked := map[int]bool{}
	for w := 1; w <= 8; w++ {
		picked[spread(fmt.Sprintf("w%d", w), 32, 0, id)] = true
	}
	if len(picked) < 6 {
		t.Fatalf("8 workers picked %d different tasks of 32: %v", len(picked), picked)
	}
}

// spread picks one of the first max(16, 2*held) tasks, the same one
// whatever comes after them, and the same one when a task other than it
// is taken (claimed by another worker) from among them.
func TestSpreadProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		worker := rapid.StringN(1, 12, -1).Draw(t, "worker")
		ids := rapid.SliceOfNDistinct(rapid.StringMatching(`T[0-9]{1,3}`), 1, 300, rapid.ID[string]).Draw(t, "ids")
		held := rapid.IntRange(0, 200).Draw(t, "held")
		n := len(ids)
		got := spread(worker, n, held, func(i int) string { return ids[i] })
		window := min(n, max(spreadMin, 2*held))
		if got < 0 || got >= window {
			t.Fatalf("picked %d of %d (window %d)", got, n, window)
		}
		if window < n { // what follows the window does not count
			if again := spread(worker, window, held, func(i int) string { return ids[i] }); again != got {
				t.Fatalf("picked %d, %d without the tasks past the window", got, again)
			}
		}
		if window == n && n > 1 { // another task claimed: the same pick
			drop := rapid.IntRange(0, n-1).Filter(func(i int) bool { return i != got }).Draw(t, "drop")
			rest := append(append([]string{}, ids[:drop]...), ids[drop+1:]...)
			again := spread(worker, n-1, held, func(i int) string { return rest[i] })
			if rest[again] != ids[got] {
				t.Fatalf("picked %s, then %s once %s was taken", ids[got], rest[again], ids[drop])
			}
		}
	})
}
