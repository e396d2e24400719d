package loop

import (
	"fmt"
	"math"

	"github.com/implloop/implloop/agent"
)

// Hostile or broken figures.
//
// The tokens and cost an agent reports are its word, and an agent is
// arbitrary code: a figure that is negative, not a finite number, or
// implausibly large for one call (which is also what keeps every sum of
// them from overflowing) is refused per call, with a concern, and the
// call counts as having reported nothing for it. Totals are never
// negative and never overflow; a run never fails on a figure.

// Bounds of one call's figures: no call costs a million dollars or
// reads a trillion tokens.
const (
	maxCallCost   = 1e6
	maxCallTokens = 1e12
)

// refuseFigures zeroes the figures of r that cannot be right and says
// which, one concern each.
func refuseFigures(r *agent.Result) []string {
	var out []string
	switch c := r.CostUSD; {
	case math.IsNaN(c) || math.IsInf(c, 0):
		out = append(out, fmt.Sprintf("the agent reported a cost of %v for a call: refused (not a finite number), counted as not reported", c))
		r.CostUSD = 0
	case c < 0:
		out = append(out, fmt.Sprintf("the agent reported a cost of %v for a call: refused (negative), counted as not reported", c))
		r.CostUSD = 0
	case c > maxCallCost:
		out = append(out, fmt.Sprintf("the agent reported a cost of %v for a call: refused (over $1,000,000 for one call), counted as not reported", c))
		r.CostUSD = 0
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"input tokens", &r.InputTokens}, {"output tokens", &r.OutputTokens}, {"cache-read tokens", &r.CacheRead}, {"cache-write tokens", &r.CacheWrite}} {
		switch {
		case *f.v < 0:
			out = append(out, fmt.Sprintf("the agent reported %d %s for a call: refused (negative), counted as not reported", *f.v, f.name))
			*f.v = 0
		case *f.v == math.MaxInt64:
			// Read saturated (1e308, a 30-digit count): the number
			// shown would be implloop's, not the agent's.
			out = append(out, fmt.Sprintf("the agent reported a count of %s past 64 bits for a call: refused (over a trillion for one call), counted as not reported", f.name))
			*f.v = 0
		case *f.v > maxCallTokens:
			out = append(out, fmt.Sprintf("the agent reported %d %s for a call: refused (over a trillion for one call), counted as not reported", *f.v, f.name))
			*f.v = 0
		}
	}
	return out
}
