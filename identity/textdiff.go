package identity

import (
	"encoding/json"
	"strings"
)

// diffContext is how many unchanged lines FullText shows around a change.
const diffContext = 2

// FullText renders the change whole, for a person reading why a unit ran
// live (implloop explain): a short value as String does, and text that is
// long or spans lines as a line diff over as many lines as it takes, each
// changed line whole ("- " removed, "+ " added), with up to two unchanged
// lines around each change ("  ") and "  ..." where unchanged lines are
// left out. String's one-line form clips lines to a window around the
// change; this one never clips.
func (c Change) FullText() string {
	var oldS, newS string
	if json.Unmarshal(c.Old, &oldS) != nil || json.Unmarshal(c.New, &newS) != nil || !isLong(oldS) && !isLong(newS) {
		return c.String()
	}
	return c.Field + ":\n" + unifiedLines(strings.Split(oldS, "\n"), strings.Split(newS, "\n"))
}

type lineOp struct {
	kind byte // ' ', '-', '+'
	text string
}

// lineOps is an edit script from a to b: a longest-common-subsequence line
// diff; beyond maxDiffCells the middle (after the common head and tail) is
// one removal and one addition.
func lineOps(a, b []string) []lineOp {
	var head, tail []lineOp
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		head = append(head, lineOp{' ', a[0]})
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		tail = append([]lineOp{{' ', a[len(a)-1]}}, tail...)
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	ops := head
	if len(a)*len(b) > maxDiffCells || len(a) == 0 || len(b) == 0 {
		for _, l := range a {
			ops = append(ops, lineOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, lineOp{'+', l})
		}
		return append(ops, tail...)
	}
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, lineOp{' ', a[i]})
			i, j = i+1, j+1
		case j == len(b) || i < len(a) && lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, lineOp{'-', a[i]})
			i++
		default:
			ops = append(ops, lineOp{'+', b[j]})
			j++
		}
	}
	return append(ops, tail...)
}

// unifiedLines renders lineOps(a, b) with diffContext unchanged lines
// around each change.
func unifiedLines(a, b []string) string {
	ops := lineOps(a, b)
	keep := make([]bool, len(ops))
	for i, op := range ops {
		if op.kind == ' ' {
			continue
		}
		for k := max(0, i-diffContext); k <= min(len(ops)-1, i+diffContext); k++ {
			keep[k] = true
		}
	}
	var sb strings.Builder
	skipped := false
	for i, op := range ops {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped {
			sb.WriteString("  ...\n")
		}
		skipped = false
		sb.WriteByte(op.kind)
		sb.WriteByte(' ')
		sb.WriteString(op.text)
		sb.WriteByte('\n')
	}
	if skipped {
		sb.WriteString("  ...\n")
	}
	return strings.TrimSuffix(sb.String(), "\n")
}
