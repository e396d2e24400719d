package extractor

import (
	"fmt"
	"strings"

	"github.com/implloop/implloop/plan"
)

// RangeForms lists the accepted --task-range forms, for usage errors.
const RangeForms = `"10:13" (10 to 13, inclusive), "10:" (10 and after), ":5" (up to 5), "7" (just 7), "T010:T013", "3.2"; empty for every task`

// Range selects tasks by the numeric part of their ids: "T010" is 10,
// "3.2" is 3.2. Bounds compare as version tuples, and a bound covers the
// ids it prefixes, so "3" selects 3, 3.1 and 3.2 and ":3" ends after 3.2.
// The zero Range selects every task.
type Range struct {
	Lo, Hi []int // nil: unbounded
	text   string
}

// All is the range of every task.
var All = Range{}

// String returns the range as it was written ("" for All).
func (r Range) String() string { return r.text }

// RangeSyntaxError is a task range that does not parse.
type RangeSyntaxError struct {
	Input  string
	Reason string
}

func (e *RangeSyntaxError) Error() string {
	return fmt.Sprintf("bad task range %q: %s; accepted forms: %s", e.Input, e.Reason, RangeForms)
}

// ParseRange parses a --task-range value: "10:13", "10:", ":5", "7",
// "T010:T013", "3.2", or "" for every task.
func ParseRange(s string) (Range, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return All, nil
	}
	bad := func(reason string) (Range, error) {
		return Range{}, &RangeSyntaxError{Input: in, Reason: reason}
	}
	lo, hi, isSpan := strings.Cut(s, ":")
	if strings.Contains(hi, ":") {
		return bad("more than one \":\"")
	}
	var r Range
	var err error
	if r.Lo, err = parseBound(lo); err != nil {
		return bad(err.Error())
	}
	if !isSpan {
		if r.Lo == nil {
			return bad("no task id")
		}
		r.Hi, r.text = r.Lo, s
		return r, nil
	}
	if r.Hi, err = parseBound(hi); err != nil {
		return bad(err.Error())
	}
	if r.Lo == nil && r.Hi == nil {
		return bad("no task id on either side of \":\"")
	}
	if r.Lo != nil && r.Hi != nil && plan.CompareNumeric(r.Lo, r.Hi) > 0 && !isPrefix(r.Hi, r.Lo) {
		return bad(fmt.Sprintf("start %s is after end %s", strings.TrimSpace(lo), strings.TrimSpace(hi)))
	}
	r.text = s
	return r, nil
}

// parseBound parses one side of a range: "", "10", "T010", "3.2".
func parseBound(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	digits := strings.TrimLeft(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
	if len(s)-len(digits) > 4 {
		return nil, fmt.Errorf("%q is not a task id", s)
	}
	nums, ok := plan.NumericID(digits)
	if !ok || digits == "" || digits[0] < '0' || digits[0] > '9' {
		return nil, fmt.Errorf("%q is not a task id", s)
	}
	return nums, nil
}

// Contains reports whether the task with this id is in the range. An id
// with no number is only in the full range.
func (r Range) Contains(id string) bool {
	if r.Lo == nil && r.Hi == nil {
		return true
	}
	n, ok := plan.NumericID(id)
	if !ok {
		return false
	}
	if r.Lo != nil && plan.CompareNumeric(n, r.Lo) < 0 {
		return false
	}
	if r.Hi != nil && plan.CompareNumeric(n, r.Hi) > 0 && !isPrefix(r.Hi, n) {
		return false
	}
	return true
}

// isPrefix reports whether p is a prefix of n: 3 of 3.2.
func isPrefix(p, n []int) bool {
	if len(p) > len(n) {
		return false
	}
	for i := range p {
		if p[i] != n[i] {
			return false
		}
	}
	return true
}
