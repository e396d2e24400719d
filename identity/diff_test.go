package identity

import (
	"strings"
	"testing"
)

func diffOf(t *testing.T, a, b Preimage) []Change {
	t.Helper()
	changes, err := Diff(mustCanonical(t, a), mustCanonical(t, b))
	if err != nil {
		t.Fatal(err)
	}
	return changes
}

func render(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, c.String()+" | "+c.Reason())
	}
	return out
}

func TestDiff(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("context line\n", 150) // about 2 KB around the edit
	tests := []struct {
		name string
		edit func(*Preimage)
		want []string
	}{
		{"equal", func(*Preimage) {}, nil},
		{"model", func(p *Preimage) { p.Model = "b" }, []string{`model: "a" -> "b" | model changed`}},
		{"attempt", func(p *Preimage) { p.Attempt = 2 }, []string{`attempt: 1 -> 2 | new attempt`}},
		{"task text one line", func(p *Preimage) { p.Task.Text = long + "WRITE out/f10.txt hello\n" + long },
			[]string{`task.text: -"WRITE out/f10.tx hello" +"WRITE out/f10.txt hello" | task text changed`}},
		{"task id", func(p *Preimage) { p.Task.ID = "11" }, []string{`task.id: "10" -> "11" | task id changed`}},
		{"no task", func(p *Preimage) { p.Task = nil }, []string{
			`task.id: "10" -> (absent) | task id changed`,
			`task.text: "context line" (+301 lines) -> (absent) | task text changed`}},
		{"feedback appears", func(p *Preimage) { p.GateFeedback = "FAIL x"; p.Attempt = 2 }, []string{
			`attempt: 1 -> 2 | new attempt`, `gate_feedback: (absent) -> "FAIL x" | feedback from the failed attempt changed`}},
		{"plan and preamble", func(p *Preimage) { p.PlanSHA256 = "bb"; p.PreambleSHA256 = "" }, []string{
			`preamble_sha256: "p1" -> (absent) | preamble changed`, `plan_sha256: "aa" -> "bb" | plan changed`}},
		{"agent", func(p *Preimage) { p.Agent = "claude" }, []string{`agent: "exec" -> "claude" | agent changed`}},
		{"param", func(p *Preimage) { p.Params = map[string]string{"k": "2", "new": "x"} }, []string{
			`params.k: "1" -> "2" | param k changed`, `params.new: (absent) -> "x" | param new changed`}},
		{"artifacts", func(p *Preimage) { p.Artifacts = []string{"h1", "h3"} }, []string{`artifacts: -"h2" +"h3" | dependency artifacts changed`}},
		{"env", func(p *Preimage) { p.Env = nil }, []string{`env: -"PATH" | passed-through environment changed`}},
		{"timeout", func(p *Preimage) { p.TimeoutSeconds = 30 }, []string{`timeout_s: 60 -> 30 | timeout changed`}},
		{"instructions", func(p *Preimage) { p.Instructions = "i2" }, []string{`instructions: "i1" -> "i2" | instructions changed`}},
	}
	base := func() Preimage {
		return Preimage{Role: "implement", Agent: "exec", Model: "a", Instructions: "i1", Attempt: 1,
			Task:       &TaskInput{ID: "10", Text: long + "WRITE out/f10.tx hello\n" + long},
			PlanSHA256: "aa", PreambleSHA256: "p1", Artifacts: []string{"h2", "h1"}, Env: []string{"PATH"},
			TimeoutSeconds: 60, Params: map[string]string{"k": "1"}}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := base(), base()
			b.Task = &TaskInput{ID: a.Task.ID, Text: a.Task.Text}
			tt.edit(&b)
			got := render(diffOf(t, a, b))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestDiffLongTextShowsOnlyChangedLines(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("x", 300) + "\nkeep\n"
	b := strings.Repeat("x", 150) + "Y" + strings.Repeat("x", 149) + "\nkeep\nadded 1\nadded 2\nadded 3\nadded 4\nadded 5\nadded 6\nadded 7\nadded 8"
	c := Change{Field: "prompt", Old: mustJSON(a), New: mustJSON(b)}
	s := c.String()
	if len(s) > 400 || !strings.Contains(s, `+"added 3"`) || !strings.Contains(s, "(3 more changed lines)") || strings.Contains(s, "keep") || !strings.Contains(s, "Y") {
		t.Fatalf("String() = %s", s)
	}
	one := Change{Field: "prompt", Old: mustJSON(strings.Repeat("x", 300)), New: mustJSON(strings.Repeat("x", 150) + "Y" + strings.Repeat("x", 149))}
	s = one.String()
	if !strings.Contains(s, `..."xxx`) && !strings.Contains(s, `"...`) || !strings.Contains(s, "Y") || len(s) > 260 {
		t.Fatalf("single long line not clipped around the change: %s", s)
	}
}

func TestDiffReasonsAndErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ch   Change
		want string
	}{
		{Change{Field: "task.text"}, "task text changed"},
		{Change{Field: "attempt", Old: mustJSON(1), New: mustJSON(2)}, "new attempt"},
		{Change{Field: "newkey"}, "newkey changed"},
	} {
		if got := c.ch.Reason(); got != c.want {
			t.Fatalf("Reason of %s = %q, want %q", c.ch.Field, got, c.want)
		}
	}
	if _, err := Diff([]byte("{"), []byte("{}")); err == nil {
		t.Fatal("Diff accepted bad JSON")
	}
	if _, err := Diff([]byte("[]"), []byte("{}")); err == nil {
		t.Fatal("Diff accepted a non-object")
	}
	// A stored preimage from a newer scheme with a key this one does not
	// know still diffs, the key last.
	got, err := Diff([]byte(`{"model":"a","zz":{"q":1}}`), []byte(`{"model":"b","aa":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := render(got); strings.Join(r, "\n") != "model: \"a\" -> \"b\" | model changed\naa: (absent) -> true | aa changed\nzz.q: 1 -> (absent) | zz.q changed" {
		t.Fatalf("got %q", r)
	}
}

func mustJSON(v any) []byte {
	b, err := marshalValue(v)
	if err != nil {
		panic(err)
	}
	return b
}
