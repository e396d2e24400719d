package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The tests in this file hold inputs on which an earlier Parse did work
// quadratic (or worse) in the size of the plan: seconds to minutes where
// the current one takes milliseconds. They assert on what bounds the work
// (how many diagnostics, how long a message), not on time, and the package
// test timeout catches a regression that brings the slow path back.

// countMessages returns the diagnostics whose message contains substr.
func countMessages(ds []Diagnostic, substr string) []Diagnostic {
	var out []Diagnostic
	for _, d := range ds {
		if strings.Contains(d.Message, substr) {
			out = append(out, d)
		}
	}
	return out
}

// TestManyUnknownDependencies: every unknown dependency used to look for a
// "did you mean" among all the tasks, so 20,000 unknown ids against 20,000
// tasks took about 10 s. Now the tasks are indexed once, and the
// diagnostics stop at MaxDiagnosticsPerKind.
func TestManyUnknownDependencies(t *testing.T) {
	t.Parallel()
	const n = 20000
	var b strings.Builder
	for range n {
		b.WriteString("- [ ] a\n")
	}
	b.WriteString("  Depends on:")
	for i := range n {
		fmt.Fprintf(&b, " 0.%d", i)
	}
	b.WriteString("\n")
	p, ds := Parse("plan.md", []byte(b.String()))
	if len(p.Tasks) != n {
		t.Fatalf("%d tasks, want %d", len(p.Tasks), n)
	}
	unknown := countMessages(ds, "depends on unknown task")
	if len(unknown) != MaxDiagnosticsPerKind {
		t.Fatalf("%d unknown-dependency diagnostics, want %d", len(unknown), MaxDiagnosticsPerKind)
	}
	more := countMessages(ds, fmt.Sprintf("(and %d more like this, not shown)", n-MaxDiagnosticsPerKind))
	if len(more) != 1 || !strings.Contains(more[0].Message, "depends on unknown task") {
		t.Fatalf("want one unknown-dependency diagnostic counting the rest, got %v", more)
	}
}

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src, want string
	}{
		{"- [ ] T001 a\n- [ ] T002 b\n  Depends on: T1\n", `task T002 depends on unknown task "T1" (did you mean "T001"?)`},
		{"- [ ] 1. a\n- [ ] 2. b\n  Depends on: T01\n", `task 2 depends on unknown task "T01" (did you mean "1"?)`},
		{"- [ ] 3.2 a\n- [ ] 4. b\n  Depends on: 3.3\n", `task 4 depends on unknown task "3.3"`},
		// Two ids with the number 1: a suggestion would be a guess.
		{"- [ ] T001 a\n- [ ] 1. b\n- [ ] T002 c\n  Depends on: T1\n", `task T002 depends on unknown task "T1"`},
		// The same id twice is one candidate (and a duplicate).
		{"- [ ] T001 a\n- [ ] T001 b\n- [ ] T002 c\n  Depends on: T01\n", `task T002 depends on unknown task "T01" (did you mean "T001"?)`},
	} {
		_, ds := Parse("plan.md", []byte(tc.src))
		got := countMessages(ds, "unknown task")
		if len(got) != 1 || got[0].Message != tc.want {
			t.Errorf("%q: got %v, want one %q", tc.src, got, tc.want)
		}
	}
}

// TestCycleReportsBounded: one depth-first search meets a back edge at
// every task of a long chain whose last task depends on all the others;
// each back edge used to be reported with its whole path, so 5,000 tasks
// made 5,000 messages naming 12.5 million ids in all.
func TestCycleReportsBounded(t *testing.T) {
	t.Parallel()
	const n = 5000
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] %d. a\n  Depends on: %d\n", i, i+1)
	}
	fmt.Fprintf(&b, "- [ ] %d. a\n  Depends on:", n+1)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, " %d", i)
	}
	b.WriteString("\n")
	_, ds := Parse("plan.md", []byte(b.String()))
	cycles := countMessages(ds, "dependency cycle:")
	if len(cycles) != maxCycleReports {
		t.Fatalf("%d cycles reported, want %d", len(cycles), maxCycleReports)
	}
	for _, d := range cycles {
		if strings.Count(d.Message, " -> ") > maxCycleShown+1 {
			t.Fatalf("cycle message names too many tasks: %.300s", d.Message)
		}
	}
	long := countMessages(cycles, "more) ...")
	if len(long) == 0 {
		t.Fatalf("no cycle message elides a long cycle: %v", cycles)
	}
	if !strings.HasPrefix(long[0].Message, "dependency cycle: 1 -> 2 -> 3 -> 4 -> 5 -> ... (") {
		t.Errorf("long cycle message: %s", long[0].Message)
	}
}

// TestDiagnosticsCappedPerKind: a finding on every line stops at
// MaxDiagnosticsPerKind, and the last one kept counts the rest.
func TestDiagnosticsCappedPerKind(t *testing.T) {
	t.Parallel()
	const n = 1000
	src := strings.Repeat("- [ ] 7. a\n", n)
	p, ds := Parse("plan.md", []byte(src))
	if len(p.Tasks) != n || !HasErrors(ds) {
		t.Fatalf("%d tasks, errors %v", len(p.Tasks), HasErrors(ds))
	}
	dups := countMessages(ds, "duplicate task id")
	if len(dups) != MaxDiagnosticsPerKind {
		t.Fatalf("%d duplicate-id diagnostics, want %d", len(dups), MaxDiagnosticsPerKind)
	}
	last := dups[len(dups)-1]
	want := fmt.Sprintf(`duplicate task id "7" (first at line 1) (and %d more like this, not shown)`, n-1-MaxDiagnosticsPerKind)
	if last.Message != want || last.Line != MaxDiagnosticsPerKind+1 {
		t.Fatalf("last duplicate-id diagnostic %v, want %q at line %d", last, want, MaxDiagnosticsPerKind+1)
	}
	// Below the cap nothing changes.
	_, ds = Parse("plan.md", []byte(strings.Repeat("- [ ] 7. a\n", MaxDiagnosticsPerKind+1)))
	if got := countMessages(ds, "not shown"); len(got) != 0 {
		t.Fatalf("capped below the limit: %v", got)
	}
}

// TestLongIDInDiagnostics: a task id as long as the file used to be
// repeated in every diagnostic about the task, so 1,000 unknown
// dependencies of a task with a 100 KB id made 100 MB of messages.
func TestLongIDInDiagnostics(t *testing.T) {
	t.Parallel()
	id := "T" + strings.Repeat("7", 100<<10)
	var b strings.Builder
	b.WriteString("- [ ] " + id + " a\n  Depends on:")
	for i := range 1000 {
		fmt.Fprintf(&b, " %d", i)
	}
	p, ds := Parse("plan.md", []byte(b.String()))
	if len(p.Tasks) != 1 || p.Tasks[0].ID != id {
		t.Fatalf("tasks %d, id of %d bytes", len(p.Tasks), len(p.Tasks[0].ID))
	}
	total := 0
	for _, d := range ds {
		total += len(d.Message)
		if len(d.Message) > 2*maxArgLen+200 {
			t.Fatalf("diagnostic of %d bytes: %.300s", len(d.Message), d.Message)
		}
	}
	if total > 100*1024 {
		t.Fatalf("%d bytes of diagnostics", total)
	}
}

// TestFrontMatterAliases: each YAML alias decodes to a copy of its anchor,
// and front matter was decoded key by key, so go.yaml.in/yaml's guard
// against alias expansion (a ratio per decode) allowed about 30,000 values
// per 800-byte key: a 1 MB front matter took 5 s. Aliases are refused.
func TestFrontMatterAliases(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("---\nx: &a [" + strings.Repeat("x,", 999) + "x]\n")
	for k := range 50 {
		fmt.Fprintf(&b, "k%d: [", k)
		for range 30 {
			b.WriteString(strings.Repeat("y,", 12) + "*a,")
		}
		b.WriteString("y]\n")
	}
	b.WriteString("---\n- [ ] a\n")
	p, ds := Parse("plan.md", []byte(b.String()))
	want := "plan.md:3:30: error: front matter uses the YAML alias *a: write the value out (implloop does not expand aliases)"
	if len(ds) != 1 || ds[0].String() != want {
		t.Fatalf("diagnostics %v, want %q", ds, want)
	}
	if len(p.FrontMatter) != 0 || len(p.Tasks) != 1 {
		t.Fatalf("front matter %d keys, %d tasks", len(p.FrontMatter), len(p.Tasks))
	}
	// Merge keys are aliases too; an anchor alone is harmless.
	_, ds = Parse("plan.md", []byte("---\nbase: &b {x: 1}\nparams:\n  <<: *b\n---\n- [ ] a\n"))
	if len(countMessages(ds, "YAML alias *b")) != 1 {
		t.Fatalf("merge key: %v", ds)
	}
	p, ds = Parse("plan.md", []byte("---\ntitle: &t Plan\n---\n- [ ] a\n"))
	if HasErrors(ds) || p.FrontMatter["title"] != "Plan" {
		t.Fatalf("anchor without alias: %v %v", ds, p.FrontMatter)
	}
}

func TestFrontMatterTooLarge(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("---\n")
	for i := 0; b.Len() < MaxFrontMatter+10; i++ {
		fmt.Fprintf(&b, "# comment line %d\n", i)
	}
	b.WriteString("title: x\n---\n- [ ] a\n")
	p, ds := Parse("plan.md", []byte(b.String()))
	if len(ds) != 1 || ds[0].Line != 2 || !strings.Contains(ds[0].Message, "the limit is 65536 (64 KiB)") {
		t.Fatalf("diagnostics %v", ds)
	}
	if len(p.Tasks) != 1 || p.Tasks[0].Title != "a" || len(p.FrontMatter) != 0 {
		t.Fatalf("tasks %+v, front matter %v", p.Tasks, p.FrontMatter)
	}
}

// TestLongHeadingManyItems: the readers weigh every list and item by what
// the heading above it says ("Acceptance criteria", "Step by Step Tasks");
// working that out again for each of 20,000 items under a 64 KiB heading
// was quadratic. Each heading's words are now weighed once.
func TestLongHeadingManyItems(t *testing.T) {
	t.Parallel()
	const n = 20000
	var b strings.Builder
	b.WriteString("# Plan\n\n## " + strings.Repeat("details of the work ", 3300) + "\n\n")
	for i := range n {
		fmt.Fprintf(&b, "- [ ] item %d\n- **%d.1** bold\n\n1. step\n\n", i, i)
	}
	p, ds := ParseWith("plan.md", []byte(b.String()), Options{Explain: true})
	if len(p.Tasks) == 0 && !HasErrors(ds) {
		t.Fatalf("no tasks and no error")
	}
	if len(p.Reading.PassedOver) > 4*n {
		t.Fatalf("%d passages", len(p.Reading.PassedOver))
	}
}

// TestDependencyRangesBounded: a range ("Tareas 1.1 a 1.9") stands for
// every task numbered between its ends; thousands of tasks each naming a
// range over all the tasks before them would cost their product, so one
// range stands for at most maxRangeDeps tasks.
func TestDependencyRangesBounded(t *testing.T) {
	t.Parallel()
	const n = 1200
	var b strings.Builder
	b.WriteString("- [ ] 1. Step 1\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] %d. Step %d\n  Depends on: tasks 1 to %d\n", i, i, i-1)
	}
	p, ds := Parse("plan.md", []byte(b.String()))
	if len(p.Tasks) != n || HasErrors(ds) {
		t.Fatalf("%d tasks, want %d; %v", len(p.Tasks), n, ds)
	}
	if got := p.Tasks[3].Deps; !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("task 4 depends on %v, want [1 2 3]", got)
	}
	for _, task := range p.Tasks {
		if len(task.Deps) > maxRangeDeps+2 {
			t.Fatalf("task %s: %d dependencies, want at most %d", task.ID, len(task.Deps), maxRangeDeps+2)
		}
	}
}
