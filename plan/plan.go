// Package plan turns the bytes of a markdown implementation plan into a
// [Plan]: its front matter, its preamble and its tasks, each task with the
// exact byte span it covers in the file, and the diagnostics `implloop lint`
// prints.
//
// # Task forms
//
// A plan is CommonMark with GFM task lists, parsed with goldmark. Each
// convention people write plans in has a reader; [Forms] lists them in
// order of precedence, and the first that finds tasks defines them unless
// it leaves more text between its tasks than in them, when a later one
// that does better wins ([Plan.Reading] says which, and lint warns when
// another reading was plausible). [Options.Form] or front matter "form:"
// forces one. The two classic forms:
//
//  1. Task headings: a heading (at the top level of the document, not inside
//     a list or a block quote) whose text starts "Task N", "Step N" or a
//     spec-kit id "T001", optionally followed by ":", ".", ")" or a dash and
//     a title: "### Task 3: Add login", "## Task 10 — Retry", "## Step 2.
//     Wire it up". N may be dotted ("Task 3.2") or carry a letter prefix
//     ("Task S1.1"). Emphasis around the label is allowed ("## **Task 3:**
//     Add login"); so is a checkbox before it ("#### [ ] T-001: Title").
//  2. Checklist tasks: top-level list items with a task marker ("- [ ]",
//     "- [x]", "- [X]"), optionally with an id: "- [ ] 3. Title",
//     "- [ ] 3.2 Title", "- [ ] T001 [P] [US1] Title", "- [ ] Task 3: Title",
//     "- [ ] **P0-1: Title**", "- [ ] `tdg-1` Title"; Kiro's optional
//     marker "- [ ]* 2. Title" sets [Task.Optional]. Items under an aside
//     heading ("Definition of done", "Completed") are context while
//     other items exist; "1.1" right after "1." is folded into it.
//
// The others: front matter todos (Cursor), <task> blocks, a PRP's "Task
// N:" list in a yaml block, numbered lists under a heading naming the
// work, table rows with an id column, bullets with bold ids, and numbered
// or phase section headings. docs/plan-format.md has them all. A plan
// with none of these whose sections name the work ("## Fix", "###
// Changes to ...") is one task, the whole plan, with a lint warning
// saying so; otherwise the plan has no tasks: a lint error, not a guess.
//
// # Reading as a person reads
//
// Plans hold lists that only look like the task list. Where the list sits
// counts: under a heading that names the task list ("Step by Step Tasks",
// "任务", "Tareas") a plan's tasks are found first; under one that
// explains the work ("Technical details", "Benefits", "Acceptance
// criteria") or only shows tasks ("Task Breakdown Preview", "Template")
// a list is context. How much of the plan a reading covers counts too: a
// list wholly inside one of several phases, or one that covers little of
// a plan another structure covers, gives way. A second reading that comes
// close is a lint warning naming both and how to force either
// ([Options.Form], front matter "form:"); [Options.Explain] says why each
// part that is no task was passed over ([Reading.PassedOver]).
//
// Labels, status marks and dependency lines are read in the languages
// plans are written in: "Tarea 3", "任务 1.1：", "[~]", "✅", "依赖：",
// "Abhängig von:". A folder of task files is a plan too ([ReadBytes]
// bundles it; see folder.go).
//
// Fenced and indented code, HTML blocks and block quotes are never scanned
// for tasks (the markdown parser says what is code, not a regular
// expression).
//
// # Spans
//
// A heading task's span runs from the start of its heading line to the
// start of the next top-level heading of the same or a higher level (fewer
// "#"), or to the end of the file. Headings of a deeper level inside it,
// including task-like ones ("#### Step 1" under "### Task 1"), are part of
// it. Checkbox items inside a heading task are its steps, not tasks.
//
// A checklist task's span runs from the start of its item's line to the
// start of the next item of the same list, or, for the last item, to the
// start of the next top-level block after the list (or the end of the
// file). Nested items ("  - [ ] 1.1 Sub") and everything indented under the
// item belong to it.
//
// Either span then gives back its trailing blank lines and, for heading
// tasks, trailing thematic breaks ("---" between tasks is a separator, not
// part of the task above it). So spans never overlap, appear in source
// order, and [Task.Text] is exactly src[Start:End]. Text between tasks that
// belongs to none (a spec-kit "## Phase 2" heading and its purpose line) is
// not part of any task; a checklist task's [Task.Section] names the closest
// heading above it.
//
// # Ids, dependencies, verify
//
// A task's id is its explicit label ("10", "3.2", "T010"), else its 1-based
// ordinal. A line in a task's prose (not in code) starting "Depends on:",
// "Depends:" or "Dependencies:" declares dependencies: "Depends on: 1, 3",
// "depends on Task 3 and Task 5", "Depends: T012"; "none" declares none
// ([Task.NoDeps]: the task waits for no other task under --jobs);
// so does an arrow ending a checklist item, "→ depends: tdg-1, tdg-2",
// left out of the title. A
// fenced block with info string "verify" holds the task's verify command.
//
// # Everything else
//
// Everything between the front matter and the first task is the preamble;
// text after the last task that is more than blank lines is the
// [Plan.Trailer], context like the preamble.
// Optional YAML front matter ("---" on the first line, closed by "---" or
// "...") holds plan-level settings; see [FrontMatterKeys]. Front matter over
// [MaxFrontMatter] or using YAML aliases ("*name") is an error and is not
// decoded. CRLF files parse like their LF twins: same tasks, ids, titles,
// lines and (after turning CRLF into LF) texts.
//
// A plan is refused (an error diagnostic, no tasks) when it is over
// [MaxSize], holds a NUL byte, or opens more than [MaxNesting] lists or
// block quotes on one line; bytes that are not UTF-8 are an error but the
// plan is still parsed. Diagnostics of one kind stop at
// [MaxDiagnosticsPerKind]; the last one kept says how many more there are.
package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// MaxSize is the largest plan implloop reads (32 MiB).
const MaxSize = 32 << 20

// Form says which task form defined a plan's tasks.
type Form string

const (
	FormNone      Form = ""          // no tasks
	FormTodos     Form = "todos"     // front matter "todos:" (Cursor plans)
	FormHeadings  Form = "headings"  // "### Task 3: Title" headings
	FormXML       Form = "xml"       // <task> ... </task> blocks
	FormYAML      Form = "yaml"      // "Task 1:" entries of a ```yaml block (a PRP's task list)
	FormChecklist Form = "checklist" // top-level "- [ ] ..." items
	FormBullets   Form = "bullets"   // "- **3.2** Title" bullets, with the plain bullets after each
	FormNumbered  Form = "numbered"  // "1. ..." items under a Tasks heading
	FormTable     Form = "table"     // one task per table row
	FormSections  Form = "sections"  // "## Phase 1", "### 12.1 — Title" headings
	FormWhole     Form = "whole"     // no task list: the whole plan is one task
	FormFolder    Form = "folder"    // a folder of task files, one task each (not a form a file can be read in)
)

// Options change how a plan is read.
type Options struct {
	Form    Form // read the tasks in this form only (FormNone: choose)
	Explain bool // fill Reading.PassedOver: why each part that is no task was passed over

	noCheck bool // a folder's task file: its dependencies are checked against the folder's tasks
}

// Plan is a parsed plan file.
type Plan struct {
	Path        string         // as given
	SHA256      string         // hex sha256 of the raw bytes
	Size        int            // bytes
	FrontMatter map[string]any // nil when the plan has none
	BodyStart   int            // offset of the first byte after BOM and front matter
	Preamble    string         // exact bytes from BodyStart to the first task (all the body for FormTodos)
	Trailer     string         // exact bytes after the last task when they hold more than blank lines and breaks
	Form        Form
	Reading     Reading // how the tasks were read
	Tasks       []Task

	folderDeps []depRef // a folder's task file: the dependencies it declares, unchecked
}

// Task is one task of a plan. Offsets are bytes into the file, lines are
// 1-based and inclusive.
type Task struct {
	ID       string   `json:"id"`      // explicit id ("10", "3.2", "T010") or the ordinal
	Ordinal  int      `json:"ordinal"` // 1-based position among the plan's tasks
	Title    string   `json:"title"`
	Text     string   `json:"text"`  // src[Start:End], byte-exact
	Start    int      `json:"start"` // byte offset of the first byte of the span
	End      int      `json:"end"`   // byte offset just past the span
	Line     int      `json:"line"`
	EndLine  int      `json:"end_line"`
	Checked  bool     `json:"checked"`            // "- [x]"; a heading task when it has steps and all are checked; any task whose Status skips it
	Status   Status   `json:"status,omitempty"`   // the progress mark the plan gives it ("[~]", "✅", a Status cell), when it gives one
	Optional bool     `json:"optional,omitempty"` // Kiro's "- [ ]*"
	Deps     []string `json:"deps,omitempty"`     // declared dependencies, in order, deduplicated
	NoDeps   bool     `json:"no_deps,omitempty"`  // "Depends on: none" and no dependency declared: it waits for no task
	Verify   string   `json:"verify,omitempty"`   // the first ```verify block's content, LF line endings
	Section  string   `json:"section,omitempty"`  // checklist tasks: the closest heading above, level 2 or deeper ("Phase 1: Setup")
	Level    int      `json:"level,omitempty"`    // heading level of a heading task; 0 for checklist tasks
	Labels   []string `json:"labels,omitempty"`   // spec-kit markers after the id ("P", "US1"), out of the title
	File     string   `json:"file,omitempty"`     // a folder plan's task: its file, which Line and EndLine count in

	explicitID bool
}

// Severity of a diagnostic.
type Severity int

const (
	SeverityError Severity = iota
	SeverityWarning
)

func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// MarshalText makes a Severity "error" or "warning" in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Diagnostic is one finding about a plan. Line and Col are 1-based (Col
// counts bytes); Line 0 means the finding is about the file as a whole.
type Diagnostic struct {
	Path     string   `json:"path"`
	Line     int      `json:"line,omitempty"`
	Col      int      `json:"col,omitempty"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// String formats d as `plan.md:12:1: error: message`, the form editors and
// compilers use (`plan.md: error: message` for a whole-file finding).
func (d Diagnostic) String() string {
	if d.Line <= 0 {
		return fmt.Sprintf("%s: %s: %s", d.Path, d.Severity, d.Message)
	}
	col := max(d.Col, 1)
	return fmt.Sprintf("%s:%d:%d: %s: %s", d.Path, d.Line, col, d.Severity, d.Message)
}

// HasErrors reports whether any diagnostic is an error.
func HasErrors(ds []Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Errors returns the diagnostics of ds that are errors, in order.
func Errors(ds []Diagnostic) []Diagnostic {
	var out []Diagnostic
	for _, d := range ds {
		if d.Severity == SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// ReadFile reads and parses the plan at path. The error is non-nil only
// when the file could not be read at all (missing, unreadable, a directory,
// over [MaxSize]); the diagnostics then hold the same finding, so a linter
// can print diagnostics alone. The plan is nil exactly when err is.
func ReadFile(path string) (*Plan, []Diagnostic, error) { return ReadFileWith(path, Options{}) }

// ReadFileWith is ReadFile with options.
func ReadFileWith(path string, opts Options) (*Plan, []Diagnostic, error) {
	src, err := readLimited(path)
	if err != nil {
		return nil, []Diagnostic{{Path: path, Severity: SeverityError, Message: err.Error()}}, err
	}
	p, ds := ParseWith(path, src, opts)
	return p, ds, nil
}

// ReadBytes reads a plan file's bytes with ReadFile's limits (a directory,
// a file over MaxSize), for callers that parse them later.
func ReadBytes(path string) ([]byte, error) { return readLimited(path) }

// ErrTooLarge is returned (wrapped) by ReadFile for a file over MaxSize.
var ErrTooLarge = errors.New("plan file too large")

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read plan: %w", unwrapPathError(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read plan: %w", unwrapPathError(err))
	}
	if fi.IsDir() {
		return readFolder(path)
	}
	if fi.Mode().IsRegular() && fi.Size() > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d (32 MiB)", ErrTooLarge, fi.Size(), MaxSize)
	}
	// Read one byte past the limit so that a file that grew, or a pipe,
	// is caught too.
	src, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read plan: %w", unwrapPathError(err))
	}
	if len(src) > MaxSize {
		return nil, fmt.Errorf("%w: more than %d bytes (32 MiB)", ErrTooLarge, MaxSize)
	}
	return src, nil
}

// unwrapPathError drops the "open PATH:" prefix: the diagnostic already
// starts with the path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// IDs returns the plan's task ids in plan order.
func (p *Plan) IDs() []string {
	ids := make([]string, len(p.Tasks))
	for i, t := range p.Tasks {
		ids[i] = t.ID
	}
	return ids
}

// normalizeNewlines turns CRLF into LF.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}
