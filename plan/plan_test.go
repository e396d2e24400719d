package plan

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fataler is what testing.T, testing.F's fuzz T and rapid.T share.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkInvariants fails t unless p is consistent with src: spans inside the
// file, in source order, never overlapping, texts byte-exact, lines right,
// ordinals 1..n, the preamble before the first task.
func checkInvariants(t fataler, src []byte, p *Plan) {
	t.Helper()
	prevEnd := p.BodyStart
	if p.Form == FormTodos { // the tasks are in the front matter, the body is context
		prevEnd = 0
		if p.Preamble != string(src[p.BodyStart:]) {
			t.Fatalf("todos: the preamble is not the whole body")
		}
	}
	for i, tk := range p.Tasks {
		if tk.Ordinal != i+1 {
			t.Fatalf("task %d: ordinal %d", i, tk.Ordinal)
		}
		if tk.ID == "" {
			t.Fatalf("task %d: empty id", i)
		}
		if tk.Start < 0 || tk.End > len(src) || tk.Start >= tk.End {
			t.Fatalf("task %s: span [%d,%d) outside the file (%d bytes) or empty", tk.ID, tk.Start, tk.End, len(src))
		}
		if tk.Start < prevEnd {
			t.Fatalf("task %s: span [%d,%d) overlaps or precedes the previous one (ended at %d)", tk.ID, tk.Start, tk.End, prevEnd)
		}
		prevEnd = tk.End
		if tk.Text != string(src[tk.Start:tk.End]) {
			t.Fatalf("task %s: text is not src[%d:%d]", tk.ID, tk.Start, tk.End)
		}
		if p.Form == FormFolder {
			continue // lines count in the task's own file
		}
		if tk.Start > 0 && src[tk.Start-1] != '\n' && !(tk.Start == 3 && bytes.HasPrefix(src, []byte("\xEF\xBB\xBF"))) { // or after a byte order mark
			t.Fatalf("task %s: span does not start at a line start", tk.ID)
		}
		wantLine := bytes.Count(src[:tk.Start], []byte{'\n'}) + 1
		wantEnd := bytes.Count(src[:tk.End-1], []byte{'\n'}) + 1
		if tk.Line != wantLine || tk.EndLine != wantEnd {
			t.Fatalf("task %s: lines %d-%d, want %d-%d", tk.ID, tk.Line, tk.EndLine, wantLine, wantEnd)
		}
	}
	if len(p.Tasks) > 0 && p.Form != FormTodos && p.Form != FormFolder && p.Preamble != string(src[p.BodyStart:p.Tasks[0].Start]) {
		t.Fatalf("preamble is not the bytes before the first task")
	}
}

func parseOK(t *testing.T, src string) *Plan {
	t.Helper()
	p, ds := Parse("plan.md", []byte(src))
	if HasErrors(ds) {
		t.Fatalf("unexpected errors: %v", ds)
	}
	checkInvariants(t, []byte(src), p)
	return p
}

type taskWant struct {
	id, title string
	line, end int
	checked   bool
	deps      []string
}

func summarize(p *Plan) []taskWant {
	var out []taskWant
	for _, t := range p.Tasks {
		out = append(out, taskWant{t.ID, t.Title, t.Line, t.EndLine, t.Checked, t.Deps})
	}
	return out
}

func TestForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  string
		form Form
		want []taskWant
	}{
		{
			name: "task headings with steps, files and code",
			src: `# Plan

Intro.

### Task 1: Add login

**Files:**
- Create: ` + "`auth/login.go`" + `

- [x] **Step 1: Write the failing test**

` + "```go\n### Task 9: not a task, it is code\n- [ ] T999 neither\n```" + `

- [x] **Step 2: Commit**

### Task 2: Add logout

Depends on: 1

- [ ] **Step 1: Do it**
`,
			form: FormHeadings,
			want: []taskWant{
				{"1", "Add login", 5, 17, true, nil},
				{"2", "Add logout", 19, 23, false, []string{"1"}},
			},
		},
		{
			name: "em dash and step headings, nested step headings stay inside",
			src:  "## Task 10 — Export\n\n#### Step 1: part of task 10\n\nx\n\n## Step 11. Import\n\ny\n",
			form: FormHeadings,
			want: []taskWant{
				{"10", "Export", 1, 5, false, nil},
				{"11", "Import", 7, 9, false, nil},
			},
		},
		{
			name: "a higher heading ends a task; thematic breaks between tasks are dropped",
			src:  "### Task 1: A\n\nbody\n\n---\n\n## Notes\n\ntext\n\n### Task 2: B\n\nbody\n",
			form: FormHeadings,
			want: []taskWant{
				{"1", "A", 1, 3, false, nil},
				{"2", "B", 11, 13, false, nil},
			},
		},
		{
			name: "setext heading task",
			src:  "Task 1: Setext\n--------------\n\nbody\n\nTask 2: Next\n------------\n\nmore\n",
			form: FormHeadings,
			want: []taskWant{
				{"1", "Setext", 1, 4, false, nil},
				{"2", "Next", 6, 9, false, nil},
			},
		},
		{
			name: "spec-kit phases are not tasks",
			src: `# Tasks: X

## Phase 1: Setup

- [X] T001 Create project structure
- [ ] T002 [P] [US1] Create model in src/models/user.py

## Phase 2: Core

- [ ] T003 [US1] Implement service (depends on T001, T002)
`,
			form: FormChecklist,
			want: []taskWant{
				{"T001", "Create project structure", 5, 5, true, nil},
				{"T002", "Create model in src/models/user.py", 6, 6, false, nil},
				{"T003", "Implement service (depends on T001, T002)", 10, 10, false, []string{"T001", "T002"}},
			},
		},
		{
			name: "kiro nested and optional",
			src: `# Implementation Plan

- [ ] 1. Set up
  - [ ] 1.1 Sub one
    - detail
  - [x] 1.2 Sub two
  - _Requirements: 1.1_

- [ ]* 2. Optional tests
  - _Requirements: 2.1_

- [x] 3. Done
`,
			form: FormChecklist,
			want: []taskWant{
				{"1", "Set up", 3, 7, false, nil},
				{"2", "Optional tests", 9, 10, false, nil},
				{"3", "Done", 12, 12, true, nil},
			},
		},
		{
			name: "plain checklist with continuation and nested notes",
			src:  "Intro\n\n- [ ] First\n  more of first\n- [x] Second\n  - note\n\n  ```sh\n  make\n  ```\n- [ ] Third\n\nOutro.\n",
			form: FormChecklist,
			want: []taskWant{
				{"1", "First", 3, 4, false, nil},
				{"2", "Second", 5, 10, true, nil},
				{"3", "Third", 11, 11, false, nil},
			},
		},
		{
			name: "checklist items in code, quotes and nested lists are not tasks",
			src:  "```\n- [ ] in code\n```\n\n> - [ ] quoted\n\n- Parent\n  - [ ] nested\n\n- [ ] real\n",
			form: FormChecklist,
			want: []taskWant{
				{"1", "real", 10, 10, false, nil},
			},
		},
		{
			name: "emphasised labels",
			src:  "## **Task 1:** Add **bold** thing\n\nx\n\n## **Task 2: Wrapped**\n\ny\n",
			form: FormHeadings,
			want: []taskWant{
				{"1", "Add **bold** thing", 1, 3, false, nil},
				{"2", "Wrapped", 5, 7, false, nil},
			},
		},
		{
			name: "dependency forms",
			src:  "## Task 1: a\n\nx\n\n## Task 2: b\n\ndepends on 1\n\n## Task 3: c\n\n**Depends on:** Task 1 and Task 2\n\n## Task 4: d\n\nDepends: none\n\n- Depends on: 3, 3, 1\n",
			form: FormHeadings,
			want: []taskWant{
				{"1", "a", 1, 3, false, nil},
				{"2", "b", 5, 7, false, []string{"1"}},
				{"3", "c", 9, 11, false, []string{"1", "2"}},
				{"4", "d", 13, 17, false, []string{"3", "1"}},
			},
		},
		{
			name: "front matter is not preamble and shifts nothing",
			src:  "---\ntitle: x\n---\n# P\n\n- [ ] one\n",
			form: FormChecklist,
			want: []taskWant{{"1", "one", 6, 6, false, nil}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := parseOK(t, tc.src)
			if p.Form != tc.form {
				t.Errorf("form %q, want %q", p.Form, tc.form)
			}
			got := summarize(p)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("tasks:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestTextAndPreamble(t *testing.T) {
	t.Parallel()
	src := "---\ntitle: t\n---\n# Plan\n\nShared context.\n\n## Task 1: A\n\nDo A.\n\n\n## Task 2: B\n\nDo B.\n"
	p := parseOK(t, src)
	if p.Preamble != "# Plan\n\nShared context.\n\n" {
		t.Errorf("preamble %q", p.Preamble)
	}
	if p.Tasks[0].Text != "## Task 1: A\n\nDo A.\n" {
		t.Errorf("task 1 text %q", p.Tasks[0].Text)
	}
	if p.Tasks[1].Text != "## Task 2: B\n\nDo B.\n" {
		t.Errorf("task 2 text %q", p.Tasks[1].Text)
	}
	if p.FrontMatter["title"] != "t" {
		t.Errorf("front matter %v", p.FrontMatter)
	}
}

func TestVerifyAndOptionalAndSection(t *testing.T) {
	t.Parallel()
	src := "## Phase A\n\n- [ ]* 1. First\n  ```verify\n  go test ./a/\n  ```\n- [ ] 2. Second\n\n## Phase B\n\n- [ ] 3. Third\n"
	p := parseOK(t, src)
	if got := p.Tasks[0]; got.Verify != "go test ./a/" || !got.Optional || got.Section != "Phase A" {
		t.Errorf("task 1: verify %q optional %v section %q", got.Verify, got.Optional, got.Section)
	}
	if got := p.Tasks[1]; got.Verify != "" || got.Optional {
		t.Errorf("task 2: verify %q optional %v", got.Verify, got.Optional)
	}
	if got := p.Tasks[2].Section; got != "Phase B" {
		t.Errorf("task 3 section %q", got)
	}
}

func TestParseLabel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in        string
		bare      bool
		kind      labelKind
		id, title string
	}{
		{"Task 3: Add login", false, labelTask, "3", "Add login"},
		{"task 3 - Add login", false, labelTask, "3", "Add login"},
		{"Task 10 — Retry", false, labelTask, "10", "Retry"},
		{"Task 10 – Retry", false, labelTask, "10", "Retry"},
		{"Step 2. Wire it", false, labelStep, "2", "Wire it"},
		{"Step 2", false, labelStep, "2", ""},
		{"Task 3.2: Sub", false, labelTask, "3.2", "Sub"},
		{"Task #4: Hash", false, labelTask, "4", "Hash"},
		{"T001 [P] [US1] Create", false, labelSpecKit, "T001", "Create"},
		{"T-001: Create the project", false, labelCode, "T-001", "Create the project"},
		{"**P0-1: Remove test data**", false, labelCode, "P0-1", "Remove test data"},
		{"S3 bucket policy", false, labelNone, "", ""},
		{"Task S1.1: Create the secrets module", false, labelTask, "S1.1", "Create the secrets module"},
		{"12.1 — Fix the parser", true, labelNumber, "12.1", "Fix the parser"},
		{"T012: Model", false, labelSpecKit, "T012", "Model"},
		{"**Step 1: Write the test**", false, labelStep, "1", "Write the test"},
		{"**Task 1:** Do **X**", false, labelTask, "1", "Do **X**"},
		{"1. Title", true, labelNumber, "1", "Title"},
		{"1.1 Sub", true, labelNumber, "1.1", "Sub"},
		{"3.2. Sub", true, labelNumber, "3.2", "Sub"},
		{"4) Paren", true, labelNumber, "4", "Paren"},
		{"1. Title", false, labelNone, "", ""},
		{"2 eggs", true, labelNone, "", ""},
		{"Tasks 3", false, labelNone, "", ""},
		{"Task3", false, labelNone, "", ""},
		{"Task 3b", false, labelNone, "", ""},
		{"Task: no number", false, labelNone, "", ""},
		{"Todo", false, labelNone, "", ""},
		{"Testing", false, labelNone, "", ""},
		{"Phase 1: Setup", false, labelNone, "", ""},
		{"", true, labelNone, "", ""},
		{"`tdg-1` Define the syntax", true, labelCode, "tdg-1", "Define the syntax"},
		{"`gtp-12.3` `openspecSync` description", true, labelCode, "gtp-12.3", "`openspecSync` description"},
		{"`S01`: Protocol view", false, labelCode, "S01", "Protocol view"},
		{"`ttd-1.2`—Title", false, labelCode, "ttd-1.2", "Title"},
		{"`src/main.go` — the entry point", true, labelNone, "", ""},
		{"`v2` API", true, labelNone, "", ""},
		{"`go1.22` upgrade", true, labelNone, "", ""},
		{"`tdg-1`x", true, labelNone, "", ""},
		{"`tdg-1", true, labelNone, "", ""},
		// A code id that starts with a task word is a code id, not "Task".
		{"TASK-001: Setup", false, labelCode, "TASK-001", "Setup"},
		{"STEP-2: Wire it", false, labelCode, "STEP-2", "Wire it"},
		{"Task-1: mixed case", false, labelNone, "", ""},
	} {
		got := parseLabel(tc.in, tc.bare)
		if got.kind != tc.kind || got.id != tc.id || got.title != tc.title {
			t.Errorf("parseLabel(%q, %v) = %+v, want kind %d id %q title %q", tc.in, tc.bare, got, tc.kind, tc.id, tc.title)
		}
	}
}

func TestNumericID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   string
		want []int
		ok   bool
	}{
		{"10", []int{10}, true},
		{"T010", []int{10}, true},
		{"3.2", []int{3, 2}, true},
		{"abc", nil, false},
		{"3.", nil, false},
		{"3a", nil, false},
	} {
		got, ok := NumericID(tc.id)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("NumericID(%q) = %v %v, want %v %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	if CompareNumeric([]int{3}, []int{3, 1}) >= 0 || CompareNumeric([]int{3, 2}, []int{4}) >= 0 || CompareNumeric([]int{10}, []int{10}) != 0 {
		t.Error("CompareNumeric order")
	}
}

func TestDiagnosticString(t *testing.T) {
	t.Parallel()
	d := Diagnostic{Path: "plan.md", Line: 12, Col: 1, Severity: SeverityError, Message: `duplicate task id "10" (first at line 3)`}
	if got, want := d.String(), `plan.md:12:1: error: duplicate task id "10" (first at line 3)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	d = Diagnostic{Path: "gone.md", Severity: SeverityError, Message: "cannot read plan: no such file or directory"}
	if got, want := d.String(), "gone.md: error: cannot read plan: no such file or directory"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// examples are the plans in testdata/plans with the tasks a person counts.
var examples = map[string]struct {
	form Form
	ids  []string
}{
	"superpowers.md":   {FormHeadings, []string{"1", "2", "3", "4"}},
	"em-dash.md":       {FormHeadings, []string{"10", "11", "12", "13"}},
	"steps.md":         {FormHeadings, []string{"1", "2", "3", "4", "5"}},
	"frontmatter.md":   {FormHeadings, []string{"1", "2", "3", "4"}},
	"crlf.md":          {FormHeadings, []string{"1", "2"}},
	"checklist.md":     {FormChecklist, []string{"1", "2", "3", "4", "5", "6"}},
	"kiro-tasks.md":    {FormChecklist, []string{"1", "2", "3", "4", "5", "6", "7"}},
	"kiro-flat.md":     {FormChecklist, []string{"1", "2", "3", "4"}},
	"speckit-tasks.md": {FormChecklist, speckitIDs(24)},
}

func speckitIDs(n int) []string {
	var ids []string
	for i := 1; i <= n; i++ {
		ids = append(ids, fmt.Sprintf("T%03d", i))
	}
	return ids
}

func TestExamplePlans(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "plans", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example plans: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		want, ok := examples[name]
		if !ok {
			t.Errorf("%s: example plan without expected ids in this test", name)
			continue
		}
		p, ds, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			t.Errorf("%s: unexpected diagnostic: %s", name, d)
		}
		checkInvariants(t, mustRead(t, f), p)
		if p.Form != want.form || !slices.Equal(p.IDs(), want.ids) {
			t.Errorf("%s: form %q ids %v, want %q %v", name, p.Form, p.IDs(), want.form, want.ids)
		}
	}
}

func TestDemoPlan(t *testing.T) {
	t.Parallel()
	p, ds, err := ReadFile(filepath.Join("..", "testdata", "demo", "plan.md"))
	if err != nil || len(ds) != 0 {
		t.Fatalf("demo plan: %v %v", err, ds)
	}
	if !slices.Equal(p.IDs(), []string{"1", "2", "3", "4", "5"}) {
		t.Fatalf("demo plan ids %v", p.IDs())
	}
	if d := p.TaskByID("3").Deps; !slices.Equal(d, []string{"1"}) {
		t.Errorf("task 3 deps %v", d)
	}
	if d := p.TaskByID("4").Deps; !slices.Equal(d, []string{"1", "3"}) {
		t.Errorf("task 4 deps %v", d)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCRLFExampleMatchesLF(t *testing.T) {
	t.Parallel()
	src := mustRead(t, filepath.Join("..", "testdata", "plans", "crlf.md"))
	if !bytes.Contains(src, []byte("\r\n")) {
		t.Fatal("crlf.md lost its CRLF line endings (check .gitattributes)")
	}
	assertTwins(t, src)
}

// assertTwins checks that src (with CRLF) and its LF twin parse alike.
func assertTwins(t fataler, crlf []byte) {
	t.Helper()
	lf := bytes.ReplaceAll(crlf, []byte("\r\n"), []byte("\n"))
	pc, dc := Parse("plan.md", crlf)
	pl, dl := Parse("plan.md", lf)
	if a, b := describe(pc, dc), describe(pl, dl); a != b {
		t.Fatalf("CRLF and LF twins differ:\n--- CRLF\n%s\n--- LF\n%s", a, b)
	}
}

// describe renders everything about a parse that must not depend on line
// endings.
func describe(p *Plan, ds []Diagnostic) string {
	var b strings.Builder
	fmt.Fprintf(&b, "form %q preamble %q fm %v\n", p.Form, normalizeNewlines(p.Preamble), p.FrontMatter)
	for _, t := range p.Tasks {
		fmt.Fprintf(&b, "%s|%d|%q|%d-%d|%v|%v|%v|%q|%q|%q\n", t.ID, t.Ordinal, t.Title, t.Line, t.EndLine, t.Checked, t.Optional, t.Deps, t.Verify, t.Section, normalizeNewlines(t.Text))
	}
	for _, d := range ds {
		fmt.Fprintf(&b, "%s\n", d)
	}
	return b.String()
}

func TestDeepNestingIsRefused(t *testing.T) {
	t.Parallel()
	src := "# Plan\n\n- [ ] ok\n" + strings.Repeat("- ", MaxNesting+1) + "[ ] x\n"
	p, ds := Parse("deep.md", []byte(src))
	if len(ds) != 1 || ds[0].String() != "deep.md:4:1: error: line nests lists or block quotes 101 deep (the limit is 100): not a plan implloop reads" || len(p.Tasks) != 0 {
		t.Fatalf("diagnostics %v, %d tasks", ds, len(p.Tasks))
	}
	// Realistic nesting is fine.
	parseOK(t, "- [ ] 1. a\n  - [ ] 1.1 b\n    - c\n      > d\n")
}

func TestSlugAndArrowDeps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"tdg-1", 5}, {"gtp-12.3", 8}, {"auth-2-1", 8}, {"tdg-1.", 5},
		{"v2", 0}, {"go1.22", 0}, {"tdg-", 0}, {"-1", 0}, {"abcdefghi-1", 0}, {"", 0},
	} {
		if got := slugID(tc.in); got != tc.want {
			t.Errorf("slugID(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"Build the graph → depends: tdg-2", "Build the graph"},
		{"Implement it → depends: tdg-3, tdg-5", "Implement it"},
		{"Wire it -> depends: 3", "Wire it"},
		{"Define `→ depends:` syntax and add it", "Define `→ depends:` syntax and add it"},
		{"Plain title", "Plain title"},
	} {
		if got := trimArrowDeps(tc.in); got != tc.want {
			t.Errorf("trimArrowDeps(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	src := "# Tasks\n\n- [ ] `ab-1` First\n- [ ] `ab-2` Second → depends: ab-1\n  - [ ] `ab-2.1` Part of it\n" +
		"- [ ] `ab-3` Third → depends: ab-1, ab-2\n- [ ] `ab-4` Fourth -> depends on the network\n- [ ] `ab-4.1` Flat sub-item\n"
	p, ds := Parse("p.md", []byte(src))
	if HasErrors(ds) {
		t.Fatalf("diagnostics: %v", ds)
	}
	want := []struct {
		id, title string
		deps      []string
	}{
		{"ab-1", "First", nil},
		{"ab-2", "Second", []string{"ab-1"}},
		{"ab-3", "Third", []string{"ab-1", "ab-2"}},
		{"ab-4", "Fourth -> depends on the network", nil},
	}
	if len(p.Tasks) != len(want) {
		t.Fatalf("got %d tasks, want %d: %+v", len(p.Tasks), len(want), p.Tasks)
	}
	for i, w := range want {
		got := p.Tasks[i]
		if got.ID != w.id || got.Title != w.title || !slices.Equal(got.Deps, w.deps) {
			t.Errorf("task %d = %q %q %v, want %q %q %v", i+1, got.ID, got.Title, got.Deps, w.id, w.title, w.deps)
		}
	}
}

func TestWholePlan(t *testing.T) {
	t.Parallel()
	fix := "# Fix: socket path truncation\n\n## Problem\n\nPaths over 108 bytes are cut.\n\n## Fix\n\n### Changes to `src/ipc.ts`\n\nHash long paths.\n\n## Notes\n\n- none\n"
	for _, tc := range []struct {
		name, src string
		form      Form
		title     string // "" for no tasks
		warn      bool
	}{
		{"single-fix plan", fix, FormNone, "Fix: socket path truncation", true},
		{"a note is not a plan", "# Plan\n\nNo tasks here.\n", FormNone, "", false},
		{"sections that name no work", "# Search\n\n## Typo tolerance\n\nUse trigrams.\n", FormNone, "", false},
		{"forced, any text", "# Plan\n\nNo tasks here.\n", FormWhole, "Plan", false},
		{"forced, no heading", "\n\nJust prose here.\nMore.\n", FormWhole, "Just prose here.", false},
		{"forced, empty", "\n\n", FormWhole, "", false},
		{"a task list wins", "# Fix\n\n## Fix\n\n- [ ] Do it\n", FormNone, "Do it", false},
		{"a changelog names no work", "# Notes\n\n## Changelog\n\n- v1\n\n## Fixtures\n\nData.\n", FormNone, "", false},
		{"a gerund names the work", "# Fix the race\n\nIt races.\n\n## Fixing the race\n\nLock it.\n", FormNone, "Fix the race", true},
		{"front matter", "---\nform: whole\n---\n# T\n\n- [ ] a\n- [ ] b\n", FormNone, "T", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ds := ParseWith("p.md", []byte(tc.src), Options{Form: tc.form})
			if tc.title == "" {
				if len(p.Tasks) != 0 || !HasErrors(ds) {
					t.Fatalf("got %d tasks and %v, want no tasks and an error", len(p.Tasks), ds)
				}
				return
			}
			if len(p.Tasks) != 1 || p.Tasks[0].Title != tc.title {
				t.Fatalf("got %+v, want one task %q", p.Tasks, tc.title)
			}
			if tc.title != "Do it" && (p.Form != FormWhole || p.Tasks[0].ID != "1") {
				t.Errorf("form %q id %q, want whole and 1", p.Form, p.Tasks[0].ID)
			}
			warned := slices.ContainsFunc(ds, func(d Diagnostic) bool { return strings.Contains(d.Message, "the whole plan is one task") })
			if warned != tc.warn {
				t.Errorf("warning %v, want %v: %v", warned, tc.warn, ds)
			}
		})
	}
	p, _ := Parse("p.md", []byte(fix))
	if p.Preamble != "" || p.Tasks[0].Text != fix {
		t.Errorf("whole plan: preamble %q, text %q; want all the plan in the task", p.Preamble, p.Tasks[0].Text)
	}
}

// TestWholePlanNotDoneByItsBoxes: a single-fix plan whose only checkboxes
// are ticked notes of the investigation still runs: its boxes do not make
// the whole plan done, as they would a heading task's steps.
func TestWholePlanNotDoneByItsBoxes(t *testing.T) {
	t.Parallel()
	src := "# Fix the flaky upload\n\n## Problem\n\nTimeouts.\n\n## Fix\n\n- Investigation\n  - [x] Reproduced\n  - [x] Found the bug\n\nBack off exponentially.\n"
	p, _ := Parse("p.md", []byte(src))
	if p.Form != FormWhole || len(p.Tasks) != 1 || p.Tasks[0].Checked {
		t.Fatalf("form %q, tasks %+v: want one whole task, not checked", p.Form, p.Tasks)
	}
}

// TestSlugDependencies: a slug id ("tdg-2") is a dependency in backticks
// or an arrow list only; in a "Depends on" line of prose, "node-18" is a
// version, not an unknown task. A bare code id's sub-id ("S1.1" after
// "S1") stays its own task; a backticked one ("`tdg-2.1`") folds.
func TestSlugDependencies(t *testing.T) {
	t.Parallel()
	versions := "# Plan\n\n### Task 1: Base\n\nDepends on go-1.22, which CI has.\n\n### Task 2: Next\n\nNeeds the runtime (depends on python-3.12)\n"
	p, ds := Parse("p.md", []byte(versions))
	if HasErrors(ds) || len(p.Tasks) != 2 || len(p.Tasks[0].Deps)+len(p.Tasks[1].Deps) != 0 {
		t.Errorf("versions read as dependencies: %+v %v", p.Tasks, ds)
	}
	slugs := "# Plan\n\n- [ ] `tdg-1` Parse\n- [ ] `tdg-2` Graph \u2192 depends: tdg-1\n  - [ ] `tdg-2.1` Regex\n- [ ] `tdg-3` Check (depends on `tdg-2`)\n"
	p, ds = Parse("p.md", []byte(slugs))
	if HasErrors(ds) || len(p.Tasks) != 3 {
		t.Fatalf("slugs: %+v %v", p.Tasks, ds)
	}
	if !slices.Equal(p.Tasks[1].Deps, []string{"tdg-1"}) || !slices.Equal(p.Tasks[2].Deps, []string{"tdg-2"}) || p.Tasks[1].Title != "Graph" {
		t.Errorf("slugs: %+v", p.Tasks)
	}
	codes := "# Plan\n\n- [x] S1: Storage\n- [ ] S1.1: Schema\n- [ ] S2: API\n  Depends on: S1.1\n"
	p, ds = Parse("p.md", []byte(codes))
	if HasErrors(ds) || len(p.Tasks) != 3 || p.Tasks[1].ID != "S1.1" || !slices.Equal(p.Tasks[2].Deps, []string{"S1.1"}) {
		t.Errorf("bare code sub-ids: %+v %v", p.Tasks, ds)
	}
	// Wrapped in emphasis or parentheses, a backticked slug is still a
	// dependency; a bare one after "Depends on:" is one when the plan has
	// such a task, else prose with a warning, never an error.
	wrapped := "# Plan\n\n- [ ] `tdg-1` Parse\n- [ ] `tdg-2` Graph\n  Depends on: **`tdg-1`**\n- [ ] `tdg-3` Check\n  Depends on: tdg-2\n- [ ] `tdg-4` More\n  Depends on: node-18 or later\n"
	p, ds = Parse("p.md", []byte(wrapped))
	if HasErrors(ds) || len(p.Tasks) != 4 || !slices.Equal(p.Tasks[1].Deps, []string{"tdg-1"}) || !slices.Equal(p.Tasks[2].Deps, []string{"tdg-2"}) || len(p.Tasks[3].Deps) != 0 {
		t.Errorf("wrapped and bare slugs: %+v %v", p.Tasks, ds)
	}
	if !slices.ContainsFunc(ds, func(d Diagnostic) bool {
		return strings.Contains(d.Message, `names "node-18", which is no task of this plan`)
	}) {
		t.Errorf("no warning for node-18: %v", ds)
	}
	// A table's id and dependency columns hold ids: slugs read there.
	table := "# P\n\n| ID | Task | Depends |\n|---|---|---|\n| tdg-1 | Parse | - |\n| tdg-2 | Graph | `tdg-1` |\n| tdg-3 | Check | tdg-2 |\n"
	p, ds = Parse("p.md", []byte(table))
	if HasErrors(ds) || len(p.Tasks) != 3 || !slices.Equal(p.Tasks[2].Deps, []string{"tdg-2"}) || !slices.Equal(p.Tasks[1].Deps, []string{"tdg-1"}) {
		t.Errorf("slug table: %+v %v", p.Tasks, ds)
	}
	prose := "# P\n\n- [ ] 1. Set up the client -> depends on network\n- [ ] 2. Next -> depends: 1\n"
	p, _ = Parse("p.md", []byte(prose))
	if len(p.Tasks) != 2 || p.Tasks[0].Title != "Set up the client -> depends on network" || p.Tasks[1].Title != "Next" || !slices.Equal(p.Tasks[1].Deps, []string{"1"}) {
		t.Errorf("arrow prose: %+v", p.Tasks)
	}
}

// TestByteOrderMarkTaskOnFirstLine: a task on the first line of a file with
// a byte order mark starts after the mark; the preamble is empty, not a
// slice that ends before it starts (which panicked).
func TestByteOrderMarkTaskOnFirstLine(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"# Task 1: a\n\nx\n",
		"- [ ] a\n- [ ] b\n",
		"## Phase 1\nx\n## Phase 2\ny\n",
		"1. **a**\n2. **b**\n",
		"# [X]",
		"# Fix\n\n## Fix\n\nx\n",
		"<task>\n<name>Task 1: a</name>\n</task>\n<task>\n<name>Task 2: b</name>\n</task>\n",
	} {
		bom := "\xEF\xBB\xBF" + src
		p, _ := Parse("p.md", []byte(bom))
		q, _ := Parse("p.md", []byte(src))
		if len(p.Tasks) != len(q.Tasks) || len(p.Tasks) == 0 {
			t.Fatalf("%q: %d tasks with a byte order mark, %d without", src, len(p.Tasks), len(q.Tasks))
		}
		if p.Preamble != "" || p.Tasks[0].Start != 3 || p.Tasks[0].Line != 1 || p.Tasks[0].Text != bom[3:p.Tasks[0].End] {
			t.Errorf("%q: preamble %q, first task at %d (line %d)", src, p.Preamble, p.Tasks[0].Start, p.Tasks[0].Line)
		}
	}
}

func TestTaskishIgnoresFileNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		title string
		want  bool
	}{
		{"Tasks", true},
		{"Implementation steps", true},
		{"1. src/prompts/plan.md", false},
		{"`docs/steps.md`", false},
		{"Update plan.md and the plan", true},
		{"Typo tolerance", false},
	} {
		if got := isTaskish(tc.title); got != tc.want {
			t.Errorf("isTaskish(%q) = %v, want %v", tc.title, got, tc.want)
		}
	}
}

// TestZencoderSteps: Zencoder's "### [x] Step: Planning" headings are
// tasks titled without "Step:", and checkbox headings inside a task are
// its steps, so a task whose "#### [x] 1. ..." steps are all done is done.
func TestZencoderSteps(t *testing.T) {
	t.Parallel()
	src := "# Full SDD workflow\n\n### [x] Step: Planning\n\nPlan it.\n\n### [ ] Step: Implementation\n\n#### [x] 1. First\n\nx\n\n#### [x] 2. Second\n\ny\n\n### [ ] Step: Report\n\n#### [x] 1. Draft\n\n#### [ ] 2. Send\n"
	p, ds := Parse("p.md", []byte(src))
	if HasErrors(ds) {
		t.Fatalf("diagnostics: %v", ds)
	}
	want := []struct {
		title   string
		checked bool
	}{{"Planning", true}, {"Implementation", true}, {"Report", false}}
	if len(p.Tasks) != len(want) {
		t.Fatalf("got %d tasks, want %d", len(p.Tasks), len(want))
	}
	for i, w := range want {
		if p.Tasks[i].Title != w.title || p.Tasks[i].Checked != w.checked {
			t.Errorf("task %d = %q checked %v, want %q checked %v", i+1, p.Tasks[i].Title, p.Tasks[i].Checked, w.title, w.checked)
		}
	}
}

// Headings "### TASK-001: Title" (awesome-copilot's and many a generated
// plan's ids) keep their ids, and "Depends on: TASK-001" (in any
// language) names them: the task word glued to the number is part of the
// id, not "Task" and "-001".
func TestTaskWordCodeIDs(t *testing.T) {
	t.Parallel()
	p := parseOK(t, "# Plan\n\n### TASK-001: Setup\n\nDo it.\n\n### TASK-002: API\n\nDepends on: TASK-001\n\nDo it.\n\n"+
		"### TASK-003: UI\n\n依赖: TASK-001, TASK-002\n\nDo it.\n")
	want := []struct {
		id, title string
		deps      []string
	}{{"TASK-001", "Setup", nil}, {"TASK-002", "API", []string{"TASK-001"}}, {"TASK-003", "UI", []string{"TASK-001", "TASK-002"}}}
	if len(p.Tasks) != len(want) {
		t.Fatalf("got %d tasks, want %d", len(p.Tasks), len(want))
	}
	for i, w := range want {
		got := p.Tasks[i]
		if got.ID != w.id || got.Title != w.title || !slices.Equal(got.Deps, w.deps) {
			t.Errorf("task %d = %q %q deps %v, want %q %q deps %v", i, got.ID, got.Title, got.Deps, w.id, w.title, w.deps)
		}
	}
}
