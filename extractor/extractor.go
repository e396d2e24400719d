// Package extractor turns a parsed plan and a task range into the tasks the
// loop sees, in plan order: id, title, text, dependencies and verify command.
package extractor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/implloop/implloop/plan"
)

// Task is one task as the loop sees it. Text is the exact source bytes of
// the task's span in the plan file (CRLF line endings turned into LF so that
// a CRLF file and its LF twin extract identically).
type Task struct {
	ID      string   `json:"id"`      // "10", "3.2", "T010", or the ordinal
	Ordinal int      `json:"ordinal"` // 1-based position among all the plan's tasks
	Title   string   `json:"title"`
	Text    string   `json:"text"`
	Line    int      `json:"line"`     // first line (1-based)
	EndLine int      `json:"end_line"` // last line (inclusive)
	Checked bool     `json:"checked"`  // `- [x]` in the plan
	Deps    []string `json:"deps,omitempty"`
	NoDeps  bool     `json:"no_deps,omitempty"` // "Depends on: none": it waits for no task
	Verify  string   `json:"verify,omitempty"`  // the task's own ```verify block
	Labels  []string `json:"labels,omitempty"`  // spec-kit markers ("P": may run in parallel with its neighbours)
}

// Selection is what the loop runs: the plan's facts and the tasks in range.
type Selection struct {
	PlanPath       string         // as given by the user
	PlanSHA256     string         // hex sha256 of the raw plan bytes
	Preamble       string         // the shared context: text before the first task, then any text after the last (LF line endings)
	PreambleSHA256 string         // hex sha256 of Preamble
	FrontMatter    map[string]any // the plan's YAML front matter; nil when none
	Count          int            // number of tasks in the whole plan
	Tasks          []Task         // the selected tasks, in plan order
}

// Select returns the tasks of p that r selects, in plan order, with CRLF
// line endings turned into LF. A range that selects nothing is an
// *EmptyRangeError naming the plan's ids.
func Select(p *plan.Plan, r Range) (*Selection, error) {
	// Text after the last task that is no task (an ExecPlan's "Validation",
	// a plan's closing notes) is context as much as the text before the
	// first: it travels, and is hashed, with it.
	pre := normalizeNewlines(p.Preamble + p.Trailer)
	s := &Selection{
		PlanPath:       p.Path,
		PlanSHA256:     p.SHA256,
		Preamble:       pre,
		PreambleSHA256: SHA256Hex(pre),
		FrontMatter:    p.FrontMatter,
		Count:          len(p.Tasks),
	}
	for _, t := range p.Tasks {
		if !r.Contains(t.ID) {
			continue
		}
		s.Tasks = append(s.Tasks, Task{
			ID:      t.ID,
			Ordinal: t.Ordinal,
			Title:   t.Title,
			Text:    normalizeNewlines(t.Text),
			Line:    t.Line,
			EndLine: t.EndLine,
			Checked: t.Checked,
			Deps:    slices.Clone(t.Deps),
			NoDeps:  t.NoDeps,
			Verify:  t.Verify,
			Labels:  slices.Clone(t.Labels),
		})
	}
	if len(s.Tasks) == 0 {
		return nil, &EmptyRangeError{Range: r, Path: p.Path, IDs: p.IDs()}
	}
	return s, nil
}

// EmptyRangeError is a task range that selects no task of the plan.
type EmptyRangeError struct {
	Range Range
	Path  string
	IDs   []string // the plan's ids, in plan order
}

func (e *EmptyRangeError) Error() string {
	if len(e.IDs) == 0 {
		return fmt.Sprintf("%s has no tasks", e.Path)
	}
	return fmt.Sprintf("task range %q selects no task of %s; its task ids are %s", e.Range.String(), e.Path, SummarizeIDs(e.IDs))
}

// SummarizeIDs lists ids for a message, folding runs of consecutive numbers
// ("1-13", "T001-T045") and eliding the middle of a very long list.
func SummarizeIDs(ids []string) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && consecutive(ids[j], ids[j+1]) {
			j++
		}
		if j > i {
			parts = append(parts, ids[i]+"-"+ids[j])
		} else {
			parts = append(parts, ids[i])
		}
		i = j + 1
	}
	const keep = 12
	if len(parts) > 2*keep {
		n := len(parts) - 2*keep
		parts = append(append(parts[:keep:keep], fmt.Sprintf("... (%d more)", n)), parts[len(parts)-keep:]...)
	}
	return strings.Join(parts, ", ")
}

// consecutive reports whether b is the id right after a: "9" "10", "T009"
// "T010", "3.1" "3.2".
func consecutive(a, b string) bool {
	pa, na, ok1 := splitID(a)
	pb, nb, ok2 := splitID(b)
	if !ok1 || !ok2 || pa != pb || len(na) != len(nb) {
		return false
	}
	last := len(na) - 1
	return slices.Equal(na[:last], nb[:last]) && nb[last] == na[last]+1
}

// splitID splits "T010" into "T" and [10], "3.2" into "" and [3 2].
func splitID(id string) (prefix string, nums []int, ok bool) {
	i := strings.IndexFunc(id, func(r rune) bool { return '0' <= r && r <= '9' })
	if i < 0 {
		return "", nil, false
	}
	nums, ok = plan.NumericID(id)
	return id[:i], nums, ok
}

func normalizeNewlines(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// SHA256Hex is the lowercase hex SHA-256 of s: the form of every text digest
// in a selection, a unit's preimage (unit) and the plan listing (cmd).
func SHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
