package plan

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A folder plan keeps one task per file: "tasks/task-07.md", CCPM's
// ".claude/epics/<epic>/24.md" beside its epic.md, a "phase-3.md" per
// phase. ReadBytes turns such a folder into one byte string, the bundle,
// so that everything that hashes or re-reads a plan's bytes treats it as
// it treats a file: its sha256 changes when any of its files does, and
// Parse reads it back. A bundle starts with a NUL byte, which no plan
// file holds (Parse refuses one as binary), so the two never mix up.
//
//	\x00implloop folder plan v1\n
//	\x00file NAME LEN\n
//	LEN bytes of the file
//	\n
//	... one entry per file, the index file (README.md, epic.md) first,
//	then the task files in the order of their numbers.

const bundleMagic = "\x00implloop folder plan v1\n"

// IsBundle reports whether src is a folder plan's bytes (see ReadBytes).
func IsBundle(src []byte) bool { return bytes.HasPrefix(src, []byte(bundleMagic)) }

// indexNames are the files of a folder plan that hold its shared context.
var indexNames = []string{"readme.md", "epic.md", "index.md", "overview.md", "plan.md", "_index.md", "tasks.md"}

// folderFile is one file of a folder plan.
type folderFile struct {
	name  string
	num   []int  // the numbers in its name, for the order
	id    string // the id its name gives ("7", "T001")
	shape string // its name with the numbers taken out: "task-#.md"
}

// readFolder reads the task files of the folder at dir into a bundle.
func readFolder(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read plan folder: %w", unwrapPathError(err))
	}
	var index string
	var files []folderFile
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || !strings.EqualFold(filepath.Ext(name), ".md") || strings.ContainsAny(name, "\x00\n\r") {
			continue
		}
		if index == "" && slices.Contains(indexNames, strings.ToLower(name)) {
			index = name
			continue
		}
		if f, ok := taskFileName(name); ok {
			files = append(files, f)
		}
	}
	// The task files are those of the commonest name shape: "24.md" beside
	// "4-analysis.md" and "github-mapping.md" (CCPM) are the numbered ones.
	shapes := map[string]int{}
	best := ""
	for _, f := range files {
		shapes[f.shape]++
		if shapes[f.shape] > shapes[best] || (shapes[f.shape] == shapes[best] && f.shape < best) {
			best = f.shape
		}
	}
	files = slices.DeleteFunc(files, func(f folderFile) bool { return f.shape != best })
	slices.SortStableFunc(files, func(a, b folderFile) int {
		if c := CompareNumeric(a.num, b.num); c != 0 {
			return c
		}
		if len(a.name) != len(b.name) {
			return len(a.name) - len(b.name)
		}
		return strings.Compare(a.name, b.name)
	})
	// One file per id: "4.md" is the task, "4-analysis.md" beside it notes.
	files = slices.CompactFunc(files, func(a, b folderFile) bool { return a.id == b.id })
	if len(files) == 0 {
		return nil, fmt.Errorf("cannot read plan: is a directory with no task files (a folder plan holds one task per numbered file: task-01.md, 02-setup.md)")
	}
	var b bytes.Buffer
	b.WriteString(bundleMagic)
	add := func(name string) error {
		content, err := readLimited(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(&b, "\x00file %s %d\n", name, len(content))
		b.Write(content)
		b.WriteByte('\n')
		if b.Len() > MaxSize {
			return fmt.Errorf("%w: the folder's files hold more than %d bytes (32 MiB)", ErrTooLarge, MaxSize)
		}
		return nil
	}
	if index != "" {
		if err := add(index); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := add(f.name); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// taskFileName reads the numbers of a task file's name: "task-07.md",
// "07-setup.md", "T001-scaffold.md", "phase-3.md", "24.md". A name with
// no number is no task file.
func taskFileName(name string) (folderFile, bool) {
	base := strings.TrimSuffix(name, filepath.Ext(name))
	f := folderFile{name: name}
	var shape strings.Builder
	first := -1
	for i := 0; i < len(base); {
		if !isDigit(base[i]) {
			shape.WriteByte(base[i])
			i++
			continue
		}
		j := i
		for j < len(base) && isDigit(base[j]) && j-i < 9 {
			j++
		}
		n, _ := strconv.Atoi(base[i:j])
		f.num = append(f.num, n)
		if first < 0 {
			first = i
			// "T001" keeps its letter: a code id; "task-07" is 7.
			if k := codeID(base); k > 0 && k >= j && (k == len(base) || !isLetter(base[k])) {
				f.id = base[:k]
			} else {
				f.id = strconv.Itoa(n)
			}
		}
		shape.WriteByte('#')
		i = j
	}
	if first < 0 {
		return f, false
	}
	// Only the part up to the last number shapes the name: "07-setup" and
	// "08-tests" are one shape.
	s := shape.String()
	if k := strings.LastIndexByte(s, '#'); k >= 0 {
		s = s[:k+1]
	}
	f.shape = s + strings.ToLower(filepath.Ext(name))
	return f, true
}

// bundleEntry is one file of a bundle.
type bundleEntry struct {
	name         string
	start, end   int // its content: src[start:end]
	header, next int // the offset of its header line, and of the entry after it
}

// splitBundle reads the entries of a bundle; an error says where it is
// malformed.
func splitBundle(src []byte) ([]bundleEntry, error) {
	var out []bundleEntry
	i := len(bundleMagic)
	for i < len(src) {
		nl := bytes.IndexByte(src[i:], '\n')
		if nl < 0 || !bytes.HasPrefix(src[i:], []byte("\x00file ")) {
			return out, fmt.Errorf("malformed folder plan bundle at byte %d", i)
		}
		head := string(src[i+len("\x00file ") : i+nl])
		sp := strings.LastIndexByte(head, ' ')
		if sp <= 0 {
			return out, fmt.Errorf("malformed folder plan bundle at byte %d", i)
		}
		n, err := strconv.Atoi(head[sp+1:])
		start := i + nl + 1
		if err != nil || n < 0 || n > len(src)-start-1 || src[start+n] != '\n' {
			return out, fmt.Errorf("malformed folder plan bundle at byte %d", i)
		}
		out = append(out, bundleEntry{name: head[:sp], start: start, end: start + n, header: i, next: start + n + 1})
		i = start + n + 1
	}
	return out, nil
}

// parseBundle reads a folder plan: every task file one task, its text
// the whole file; the index file the shared context. A task's id is its
// front matter "id", else the number its name gives; its title the front
// matter "name" or "title", else its first heading; its dependencies the
// front matter "depends_on" / "dependencies" and any dependency line in
// it ("**Abhängig von:** T001"); it is done when its front matter status
// or a status line ("**Status**: ✅ Done") says so.
func (r *parseState) parseBundle() {
	p := r.plan
	entries, err := splitBundle(r.src)
	if err != nil {
		r.diag(0, 0, SeverityError, "%s", err)
	}
	p.Form = FormFolder
	text := string(r.src)
	first := true
	for _, e := range entries {
		fpath := filepath.Join(r.path, e.name)
		f, isTask := taskFileName(e.name)
		if first && !isTask || (first && slices.Contains(indexNames, strings.ToLower(e.name))) {
			p.Preamble = text[e.start:e.end]
			p.BodyStart = e.start
			first = false
			continue
		}
		first = false
		if !isTask {
			continue // ReadBytes bundles task files only; a hand-made bundle may hold others
		}
		if e.end == e.start {
			r.diagIn(fpath)(0, 0, SeverityError, "task file is empty: write the task in it, or remove it")
			continue
		}
		r.tasks = append(r.tasks, r.bundleTask(e, f, fpath))
	}
	r.numberBundleTasks(text)
	p.Reading = Reading{Form: FormFolder, Count: len(r.tasks)}
	if len(r.tasks) == 0 {
		r.diag(0, 0, SeverityError, "no tasks: a folder plan holds one task per numbered file (task-01.md, 02-setup.md, T003.md)")
		return
	}
	r.check(nil)
	if r.opts.Explain {
		r.plan.Reading.PassedOver = r.explain()
	}
}

// bundleTask reads one task file of a bundle: its text as one task, its
// front matter's id, title, dependencies, status and parallel flag over
// what the text says.
func (r *parseState) bundleTask(e bundleEntry, f folderFile, fpath string) taskBuild {
	content := r.src[e.start:e.end]
	fp, fds := ParseWith(fpath, content, Options{Form: FormWhole, noCheck: true})
	for _, d := range fds {
		if d.Severity == SeverityError || !strings.Contains(d.Message, "front matter key") {
			r.diags = append(r.diags, d)
		}
	}
	t := taskBuild{}
	t.File = e.name
	t.Start, t.End = e.start, e.end
	t.headEnd = t.End
	t.hasBody = !isBlank(content)
	t.ID, t.explicitID = f.id, true
	fm := fp.FrontMatter
	declared := false // front matter dependencies win: CCPM renames "Task 002" to issue 25 there, not in the text
	for _, k := range []string{"depends_on", "dependencies", "depends", "deps"} {
		if _, ok := fm[k]; ok {
			declared = true
		}
	}
	if len(fp.Tasks) > 0 {
		t.Title = fp.Tasks[0].Title
		for _, d := range fp.folderDeps {
			if !declared {
				t.deps = append(t.deps, depRef{id: d.id, line: d.line, col: d.col, weak: d.weak, file: fpath})
			}
		}
	}
	if fm["parallel"] == true {
		t.Labels = append(t.Labels, "P")
	}
	if s, ok := fm["id"].(string); ok && s != "" {
		t.ID = s
	}
	for _, k := range []string{"name", "title"} {
		if s, ok := fm[k].(string); ok && strings.TrimSpace(s) != "" {
			t.Title = strings.TrimSpace(s)
			break
		}
	}
	for _, k := range []string{"depends_on", "dependencies", "depends", "deps"} {
		for _, d := range folderDepList(fm[k]) {
			t.deps = append(t.deps, depRef{id: d, line: 1, col: 1, file: fpath})
		}
	}
	if s, ok := fm["status"].(string); ok {
		t.Status = statusWord(s, false)
	} else {
		t.Status = statusLine(content)
	}
	if t.Status == StatusPending {
		t.Status = StatusNone
	}
	t.Checked = t.Status.skips()
	return t
}

// numberBundleTasks gives the bundle's tasks their ordinals, ids where
// none was given, text, lines and titles.
func (r *parseState) numberBundleTasks(text string) {
	for i := range r.tasks {
		t := &r.tasks[i]
		t.Ordinal = i + 1
		if t.ID == "" {
			t.ID, t.explicitID = strconv.Itoa(t.Ordinal), false
		}
		t.Text = text[t.Start:t.End]
		t.Line = 1
		t.EndLine = bytes.Count(r.src[t.Start:t.End], []byte{'\n'}) + 1
		if t.End > t.Start && r.src[t.End-1] == '\n' {
			t.EndLine--
		}
		if t.Title == "" {
			t.Title = strings.TrimSuffix(t.File, filepath.Ext(t.File))
		}
		t.Title = cleanTitle(t.Title)
	}
}

// folderDepList reads a front matter dependency list: [24, 25], "3, 5",
// [task-3].
func folderDepList(v any) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if n, err := strconv.Atoi(s); err == nil && s != "" {
			s = strconv.Itoa(n) // 007 is 7, as the file names say
		}
		if s != "" {
			out = append(out, s)
		}
	}
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			add(fmt.Sprint(e))
		}
	case string:
		for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			add(s)
		}
	case int, float64:
		add(fmt.Sprint(v))
	}
	return out
}

// statusLine reads a task file's status from a status line before its
// first section: "**Status:** offen", "**상태**: ✅ 완료", "Status: Done".
func statusLine(content []byte) Status {
	for _, l := range strings.Split(string(content), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "## ") {
			break
		}
		k := strings.IndexAny(l, ":：")
		if k < 0 || k > 40 {
			continue
		}
		key := strings.ToLower(strings.Trim(l[:k], "*_ >-"))
		if oneOf(key, "status", "state", "estado", "statut", "stand", "状态", "状態", "상태", "进度") {
			return statusWord(strings.Trim(l[k:], ":：*_ "), false)
		}
	}
	return StatusNone
}
