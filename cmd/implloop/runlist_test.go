package main

import (
	"fmt"
	"testing"
)

// TestRunList: push and pull name a few runs, then say how many more.
func TestRunList(t *testing.T) {
	ids := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("r%d", i+1))
		}
		return out
	}
	for n, want := range map[int]string{
		0:   "",
		1:   "r1",
		6:   "r1 r2 r3 r4 r5 r6",
		7:   "r1 r2 r3 r4 r5 and 2 more",
		100: "r1 r2 r3 r4 r5 and 95 more",
	} {
		if got := runList(ids(n)); got != want {
			t.Errorf("%d runs: %q, want %q", n, got, want)
		}
	}
}
