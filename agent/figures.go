package agent

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// The figures an agent prints (token counts, a cost) are read leniently:
// a figure that is not a plain number never costs the record it is in
// (its result text, its error, the other figures). What is read here is
// only judged later, by the loop (loop/figures.go), which refuses a
// negative, non-finite or implausibly large figure per call with a concern.

// count is a token count as an agent printed it. Any JSON number is read,
// a numeric string too; a count past int64 saturates, and anything that is
// not a number reads as -1 (refused as negative).
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(bytes.Trim(b, `"`))
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		*c = count(i)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsNaN(f):
		*c = -1
	case f >= math.MaxInt64:
		*c = math.MaxInt64
	case f <= math.MinInt64:
		*c = math.MinInt64
	default:
		*c = count(f)
	}
	return nil
}

// money is a cost in US dollars as an agent printed it: any JSON number
// (1e999 reads as +Inf), or a string such as "NaN"; anything else is NaN.
type money float64

func (m *money) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	f, err := strconv.ParseFloat(string(bytes.Trim(b, `"`)), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		f = math.NaN()
	}
	*m = money(f)
	return nil
}

// addCount is a + b, saturating instead of wrapping around.
func addCount(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}
