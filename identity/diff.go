package identity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Change is one field that differs between two preimages.
type Change struct {
	// Field is the dotted path of the field: "model", "task.text",
	// "params.k", "attempt".
	Field string
	// Old and New are the field's JSON values; nil when the field is absent
	// on that side.
	Old, New json.RawMessage
}

// Diff compares two canonical preimages (as Canonical returns and the
// journal stores) field by field. Nested objects are walked, so a task edit
// is reported as task.text and a param as params.NAME; lists (artifacts,
// env) are compared whole. Changes come in scope-table order, the most
// telling first; equal preimages give none.
func Diff(old, new []byte) ([]Change, error) {
	a, err := flatten(old)
	if err != nil {
		return nil, fmt.Errorf("identity: diff: old preimage: %w", err)
	}
	b, err := flatten(new)
	if err != nil {
		return nil, fmt.Errorf("identity: diff: new preimage: %w", err)
	}
	var changes []Change
	for k, ov := range a {
		if nv, ok := b[k]; !ok {
			changes = append(changes, Change{Field: k, Old: ov})
		} else if !bytes.Equal(ov, nv) {
			changes = append(changes, Change{Field: k, Old: ov, New: nv})
		}
	}
	for k, nv := range b {
		if _, ok := a[k]; !ok {
			changes = append(changes, Change{Field: k, New: nv})
		}
	}
	sort.Slice(changes, func(i, j int) bool {
		ii, _ := scopeIndex(changes[i].Field)
		jj, _ := scopeIndex(changes[j].Field)
		if ii != jj {
			return ii < jj
		}
		return changes[i].Field < changes[j].Field
	})
	return changes, nil
}

// flatten maps every leaf of a JSON object to its dotted path. An empty
// object is a leaf, so that its appearance is still a change.
func flatten(doc []byte) (map[string]json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	out := map[string]json.RawMessage{}
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		for k, val := range m {
			if sub, ok := val.(map[string]any); ok && len(sub) > 0 {
				if err := walk(prefix+k+".", sub); err != nil {
					return err
				}
				continue
			}
			raw, err := marshalValue(val)
			if err != nil {
				return err
			}
			out[prefix+k] = raw
		}
		return nil
	}
	if err := walk("", root); err != nil {
		return nil, err
	}
	return out, nil
}

func marshalValue(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// Reason is the short human phrase for the change, as explain and resume
// print it: "task text changed", "model changed", "new attempt".
func (c Change) Reason() string {
	switch {
	case c.Field == "attempt":
		var o, n int64
		if json.Unmarshal(c.Old, &o) == nil && json.Unmarshal(c.New, &n) == nil && n < o {
			return "earlier attempt"
		}
		return "new attempt"
	case c.Field == "task":
		return "task changed"
	case strings.HasPrefix(c.Field, "params."):
		return "param " + strings.TrimPrefix(c.Field, "params.") + " changed"
	}
	if _, e := scopeIndex(c.Field); e != nil {
		return e.Reason
	}
	return c.Field + " changed"
}

const (
	shortValue   = 60  // longer strings are shown as a line diff
	maxShownLine = 100 // longer changed lines are clipped around the change
	maxShown     = 4   // changed lines shown per side
)

// String renders the change on one line: `model: "a" -> "b"`, or for long
// or multi-line text only the lines that changed:
// `task.text: -"WRITE out/f10.tx hello" +"WRITE out/f10.txt hello"`.
func (c Change) String() string {
	var oldS, newS string
	oStr := json.Unmarshal(c.Old, &oldS) == nil
	nStr := json.Unmarshal(c.New, &newS) == nil
	if oStr && nStr && (isLong(oldS) || isLong(newS)) {
		return c.Field + ": " + lineDiff(oldS, newS)
	}
	var oset, nset []string
	oList := c.Old == nil || json.Unmarshal(c.Old, &oset) == nil && oset != nil
	nList := c.New == nil || json.Unmarshal(c.New, &nset) == nil && nset != nil
	if oList && nList && (oset != nil || nset != nil) {
		return c.Field + ": " + setDiff(oset, nset)
	}
	return c.Field + ": " + shown(c.Old) + " -> " + shown(c.New)
}

func isLong(s string) bool { return len(s) > shortValue || strings.Contains(s, "\n") }

// shown renders a value; a long string is cut to the start of its first line.
func shown(v json.RawMessage) string {
	if v == nil {
		return "(absent)"
	}
	var s string
	if json.Unmarshal(v, &s) == nil && isLong(s) {
		first, rest, _ := strings.Cut(s, "\n")
		out := quote(clip(first, 0))
		if n := strings.Count(rest, "\n"); rest != "" || n > 0 {
			out += fmt.Sprintf(" (+%d lines)", n+1)
		}
		return out
	}
	return string(v)
}

func quote(s string) string {
	b, _ := marshalValue(s)
	return string(b)
}

// lineDiff shows only the lines that differ: a longest-common-subsequence
// line diff, each hunk as its removed lines then its added lines, a hunk of
// one line each way clipped around the change.
func lineDiff(o, n string) string {
	var parts []string
	shownLines, hidden := 0, 0
	add := func(s string) {
		if shownLines < maxShown*2 {
			parts = append(parts, s)
			shownLines++
		} else {
			hidden++
		}
	}
	for _, h := range lineHunks(strings.Split(o, "\n"), strings.Split(n, "\n")) {
		if len(h.del) == 1 && len(h.add) == 1 {
			a, b := clipPair(h.del[0], h.add[0])
			add("-" + a)
			add("+" + b)
			continue
		}
		for _, l := range h.del {
			add("-" + quote(clip(l, 0)))
		}
		for _, l := range h.add {
			add("+" + quote(clip(l, 0)))
		}
	}
	if hidden > 0 {
		parts = append(parts, fmt.Sprintf("(%d more changed lines)", hidden))
	}
	return strings.Join(parts, " ")
}

type hunk struct{ del, add []string }

// maxDiffCells bounds the LCS table; beyond it the whole middle is one hunk.
const maxDiffCells = 1 << 20

// lineHunks returns the runs of removed and added lines between a and b,
// from the same edit script FullText renders (lineOps).
func lineHunks(a, b []string) []hunk {
	var hunks []hunk
	var cur hunk
	flush := func() {
		if len(cur.del)+len(cur.add) > 0 {
			hunks = append(hunks, cur)
			cur = hunk{}
		}
	}
	for _, op := range lineOps(a, b) {
		switch op.kind {
		case '-':
			cur.del = append(cur.del, op.text)
		case '+':
			cur.add = append(cur.add, op.text)
		default:
			flush()
		}
	}
	flush()
	return hunks
}

// clipPair quotes two versions of a line, clipped to a window around their
// first difference when they are long.
func clipPair(a, b string) (string, string) {
	if len(a) <= maxShownLine && len(b) <= maxShownLine {
		return quote(a), quote(b)
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return quote(clip(a, i)), quote(clip(b, i))
}

// clip shortens s to about maxShownLine bytes around byte at, marking cuts
// with "...", without splitting a UTF-8 sequence.
func clip(s string, at int) string {
	if len(s) <= maxShownLine {
		return s
	}
	start := max(0, at-maxShownLine/4)
	end := min(len(s), start+maxShownLine)
	for start > 0 && start < len(s) && s[start]&0xC0 == 0x80 {
		start--
	}
	for end < len(s) && s[end]&0xC0 == 0x80 {
		end++
	}
	out := s[start:end]
	if start > 0 {
		out = "..." + out
	}
	if end < len(s) {
		out += "..."
	}
	return out
}

// setDiff shows a list change as the values removed and added.
func setDiff(o, n []string) string {
	in := func(list []string, v string) bool {
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	}
	var parts []string
	for _, v := range o {
		if !in(n, v) {
			parts = append(parts, "-"+quote(v))
		}
	}
	for _, v := range n {
		if !in(o, v) {
			parts = append(parts, "+"+quote(v))
		}
	}
	if len(parts) == 0 { // same values, different order or repeats
		return shown(mustMarshal(o)) + " -> " + shown(mustMarshal(n))
	}
	return strings.Join(parts, " ")
}

func mustMarshal(v []string) json.RawMessage {
	if v == nil {
		return nil
	}
	b, _ := marshalValue(v)
	return b
}
