package identity

import (
	"encoding/json"
	"strings"
	"testing"
)

// explain shows a changed task text whole: every changed line, unclipped,
// with two lines of context, not String's first 100 characters.
func TestChangeFullText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a long sentence of the task, ", 10)
	old := "# Task 3\n\nintro\none\ntwo\nthree\n" + long + "old end.\nfour\nfive\nsix\nseven"
	new := "# Task 3\n\nintro\none\ntwo\nthree\n" + long + "new end, longer than before.\nfour\nfive\nsix\nseven"
	raw := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	got := Change{Field: "task.text", Old: raw(old), New: raw(new)}.FullText()
	want := "task.text:\n  ...\n  two\n  three\n- " + long + "old end.\n+ " + long + "new end, longer than before.\n  four\n  five\n  ..."
	if got != want {
		t.Errorf("FullText:\n%s\nwant:\n%s", got, want)
	}
	// A short value reads as String has it.
	if got, want := (Change{Field: "model", Old: raw("a"), New: raw("b")}).FullText(), `model: "a" -> "b"`; got != want {
		t.Errorf("short: %q, want %q", got, want)
	}
	// Added and removed lines, no context to leave out.
	if got, want := (Change{Field: "task.text", Old: raw("x\ny"), New: raw("x\nz\ny\nw")}).FullText(), "task.text:\n  x\n+ z\n  y\n+ w"; got != want {
		t.Errorf("inserted: %q, want %q", got, want)
	}
}
