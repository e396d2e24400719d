package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/implloop/implloop/internal/words"
)

// mdParser is goldmark with CommonMark's block parsers and, of the inline
// parsers, only the GFM task checkbox: block structure (what is a heading,
// a list item, code) does not depend on inlines, and skipping links and
// emphasis makes parsing several times faster.
var mdParser = sync.OnceValue(func() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(util.Prioritized(checkBoxParser{}, 0)),
		parser.WithParagraphTransformers(util.Prioritized(paragraphTransformer{}, 100)),
	)
})

// paragraphTransformer runs when goldmark closes a paragraph. It does two
// things, neither of which changes the block structure:
//
//   - goldmark's link reference definition transformer (the only default
//     one), behind a quick check that the paragraph cannot start with a
//     definition (task items "[ ] Title" never do). The check skips the
//     reader goldmark allocates for every paragraph.
//   - a paragraph whose inline content is never read (every one except the
//     first paragraph of a list item, where a task checkbox may be) becomes
//     a rawParagraph, which goldmark's inline pass skips. On a large plan the
//     inline pass is a quarter of the parse time.
type paragraphTransformer struct{}

func (paragraphTransformer) Transform(node *ast.Paragraph, reader text.Reader, pc parser.Context) {
	lines := node.Lines()
	if lines.Len() == 0 {
		return
	}
	seg := lines.At(0)
	if mayStartLinkRef(reader.Source()[seg.Start:seg.Stop]) {
		parser.LinkReferenceParagraphTransformer.Transform(node, reader, pc)
		if node.Parent() == nil || node.Lines().Len() == 0 {
			return
		}
	}
	parent := node.Parent()
	if parent.Kind() == ast.KindListItem && parent.FirstChild() == node {
		return
	}
	if line, _ := reader.PeekLine(); isSetextBar(line) {
		// Goldmark may be turning this paragraph into a setext heading,
		// which needs the Paragraph node itself.
		return
	}
	// What goldmark's paragraph parser does on close, which is skipped for
	// a replaced node: trim the lines' leading spaces and the last line's
	// trailing ones.
	lines = node.Lines()
	src := reader.Source()
	for i := range lines.Len() {
		l := lines.At(i)
		lines.Set(i, l.TrimLeftSpace(src))
	}
	last := lines.At(lines.Len() - 1)
	lines.Set(lines.Len()-1, last.TrimRightSpace(src))
	raw := &rawParagraph{}
	raw.SetLines(lines)
	raw.SetBlankPreviousLines(node.HasBlankPreviousLines())
	parent.ReplaceChild(parent, node, raw)
}

// isSetextBar reports whether line looks like a setext heading underline
// ("===" or "---"), erring on the side of yes.
func isSetextBar(line []byte) bool {
	line = bytes.Trim(line, " \t\r\n")
	if len(line) == 0 || (line[0] != '=' && line[0] != '-') {
		return false
	}
	for _, c := range line {
		if c != line[0] {
			return false
		}
	}
	return true
}

// rawParagraph is a paragraph whose inline content implloop never reads.
type rawParagraph struct {
	ast.BaseBlock
}

var kindRawParagraph = ast.NewNodeKind("RawParagraph")

func (n *rawParagraph) Kind() ast.NodeKind { return kindRawParagraph }
func (n *rawParagraph) IsRaw() bool        { return true }
func (n *rawParagraph) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, nil, nil)
}

// Pos is where its first line starts, as for goldmark's Paragraph.
func (n *rawParagraph) Pos() int {
	if n.Lines().Len() == 0 {
		return -1
	}
	return n.Lines().At(0).Start
}

// mayStartLinkRef is false only for lines that certainly do not start a
// link reference definition: no "[" first, or a label closed on the line
// by a "]" not followed by ":". Anything unusual (a backslash, a nested
// "[", a label running on) goes to goldmark.
func mayStartLinkRef(line []byte) bool {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i == len(line) {
		return true
	}
	if line[i] != '[' {
		return false
	}
	for j := i + 1; j < len(line); j++ {
		switch line[j] {
		case '\\', '[':
			return true
		case ']':
			return j+1 < len(line) && line[j+1] == ':'
		}
	}
	return true
}

var utf8BOM = []byte("\xEF\xBB\xBF")

// Parse parses src, the bytes of the plan at path (used in diagnostics
// only). It never fails: problems are diagnostics, and the returned plan
// holds whatever could be read (no tasks at all for a binary or oversized
// file).
func Parse(path string, src []byte) (*Plan, []Diagnostic) { return ParseWith(path, src, Options{}) }

// ParseWith is Parse with options.
func ParseWith(path string, src []byte, opts Options) (*Plan, []Diagnostic) {
	p := &Plan{Path: path, Size: len(src)}
	// Hashing a large plan takes as long as a good part of parsing it, and
	// needs nothing from the parse: do it beside.
	sum := make(chan [sha256.Size]byte, 1)
	if len(src) >= parallelHashSize {
		go func() { sum <- sha256.Sum256(src) }()
	} else {
		sum <- sha256.Sum256(src)
	}
	r := &parseState{path: path, src: src, plan: p, opts: opts}
	if IsBundle(src) && len(src) <= MaxSize {
		r.parseBundle()
	} else {
		r.parse()
	}
	digest := <-sum
	p.SHA256 = hex.EncodeToString(digest[:])
	r.summarizeOmitted()
	sort.SliceStable(r.diags, func(i, j int) bool {
		a, b := r.diags[i], r.diags[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return p, r.diags
}

// parallelHashSize is the size from which Parse hashes the plan in a
// goroutine of its own.
const parallelHashSize = 1 << 20

type parseState struct {
	opts  Options
	fm    [2]int // offsets of the front matter's content, when it has some
	path  string
	src   []byte
	base  int    // offset of body in src
	body  []byte // what goldmark parses: src after BOM and front matter
	lines []int  // offset of the first byte of every line
	diags []Diagnostic
	plan  *Plan

	breakLines map[int]bool // 0-based lines holding a top-level thematic break
	tasks      []taskBuild
	top        topBlocks // what the readers looked at, for --explain-reading
	hfacts     []headingFacts
	hknown     []bool
	readings   map[Form]reading // every reading tried, when the form was not forced

	kinds    map[string]*diagKind // diagnostics emitted so far, by format
	byNumber map[string]string    // didYouMean's index, built when first needed
}

// diagKind counts the diagnostics of one kind (one format string).
type diagKind struct {
	n    int // how many were emitted
	last int // index in diags of the last one kept
}

// taskBuild is a task while it is being parsed.
type taskBuild struct {
	Task
	kind       labelKind
	ticked     bool // its id was in backticks (label.ticked)
	underList  bool // its section's heading names the task list ("## Tasks")
	headEnd    int  // offset just past the heading (or the item's first line)
	steps      int  // checkbox items inside a heading task
	doneSteps  int
	hasBody    bool
	hasVerify  bool
	verifyLine int
	deps       []depRef
	noDeps     bool // a dependency line says "none"
}

// depRef is a dependency as written, with where it was written.
type depRef struct {
	id        string
	line, col int
	// weak: a slug ("node-18") read where prose may stand (not in
	// backticks, not in an arrow list or a dependency column): a
	// dependency when the plan has such a task, else prose, not an error.
	weak bool
	file string // a folder plan's task file, where line and col are
	// through ends a range the dependency starts ("Tareas 1.12 a 1.21"):
	// every task whose number lies between the two is a dependency.
	through string
}

// MaxDiagnosticsPerKind bounds the diagnostics of one kind a plan gets: a
// generated or corrupted plan can have a finding on every line, and
// printing (or formatting) a million of them helps no one. The last one
// kept says how many more there are.
const MaxDiagnosticsPerKind = 100

// maxArgLen bounds a string quoted in a diagnostic: a task id or a title
// can be as long as the file, and a message that repeats it for every
// finding would make the diagnostics quadratic in the file's size.
const maxArgLen = 200

// unclipped is a diagnostic argument that diag leaves whole: the caller
// has bounded it already.
type unclipped string

func (r *parseState) diag(line, col int, sev Severity, format string, args ...any) {
	if r.kinds == nil {
		r.kinds = map[string]*diagKind{}
	}
	k := r.kinds[format]
	if k == nil {
		k = &diagKind{}
		r.kinds[format] = k
	}
	k.n++
	if k.n > MaxDiagnosticsPerKind {
		return // counted; summarizeOmitted reports how many
	}
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > maxArgLen {
			args[i] = words.Clip(s, maxArgLen)
		}
	}
	k.last = len(r.diags)
	r.diags = append(r.diags, Diagnostic{Path: r.path, Line: line, Col: col, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// summarizeOmitted tells, on the last diagnostic kept of each kind that
// reached MaxDiagnosticsPerKind, how many more of that kind there are.
func (r *parseState) summarizeOmitted() {
	for _, k := range r.kinds {
		if more := k.n - MaxDiagnosticsPerKind; more > 0 {
			r.diags[k.last].Message += fmt.Sprintf(" (and %d more like this, not shown)", more)
		}
	}
}

// lineOf returns the 0-based line holding byte offset off.
func (r *parseState) lineOf(off int) int {
	return sort.Search(len(r.lines), func(i int) bool { return r.lines[i] > off }) - 1
}

// lineStartOf returns the offset of the start of the line holding off,
// or of the body when the line starts before it: a heading on the first
// line of a file with a byte order mark starts after the mark, so the
// preamble (from the body's start to the first task) is never negative.
func (r *parseState) lineStartOf(off int) int { return max(r.lines[r.lineOf(off)], r.base) }

// position returns the 1-based line and byte column of offset off.
func (r *parseState) position(off int) (int, int) {
	l := r.lineOf(off)
	return l + 1, off - r.lines[l] + 1
}

func lineStarts(src []byte) []int {
	lines := make([]int, 1, bytes.Count(src, []byte{'\n'})+1)
	for i := 0; ; {
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		lines = append(lines, i)
	}
	return lines
}

func (r *parseState) parse() {
	src := r.src
	if len(src) > MaxSize {
		r.diag(0, 0, SeverityError, "%s: %d bytes, the limit is %d (32 MiB)", ErrTooLarge, len(src), MaxSize)
		return
	}
	r.lines = lineStarts(src)
	if i := bytes.IndexByte(src, 0); i >= 0 {
		l, c := r.position(i)
		r.diag(l, c, SeverityError, "binary file (NUL byte): a plan is UTF-8 markdown text")
		return
	}
	if l, depth := deepestNesting(src, r.lines); depth > MaxNesting {
		r.diag(l+1, 1, SeverityError, "line nests lists or block quotes %d deep (the limit is %d): not a plan implloop reads", depth, MaxNesting)
		return
	}
	if !utf8.Valid(src) {
		i := firstInvalidUTF8(src)
		l, c := r.position(i)
		r.diag(l, c, SeverityError, "invalid UTF-8 (byte 0x%02x): a plan must be UTF-8 text", src[i])
	}

	start := 0
	if bytes.HasPrefix(src, utf8BOM) {
		start = len(utf8BOM)
	}
	if content, end, ok, opened := splitFrontMatter(src, start); ok {
		r.fm = content
		r.plan.FrontMatter = parseFrontMatter(src[content[0]:content[1]], r.lineOf(content[0])+1, r.diag)
		if r.plan.FrontMatter == nil {
			r.plan.FrontMatter = map[string]any{}
		}
		start = end
	} else if opened {
		r.diag(1, 1, SeverityWarning, `"---" on the first line opens YAML front matter that is never closed; reading the whole file as markdown`)
	}
	r.base, r.body = start, src[start:]
	r.plan.BodyStart = start

	doc := mdParser().Parse(text.NewReader(r.body))
	r.findTasks(doc)
	r.numberTasks()
	r.scanTaskContents(doc)
	r.finishTasks()
	if r.opts.noCheck {
		if len(r.tasks) > 0 {
			r.plan.folderDeps = r.tasks[0].deps
			r.plan.Tasks = []Task{r.tasks[0].Task}
		}
		return
	}
	r.check(doc)
	if r.opts.Explain {
		r.plan.Reading.PassedOver = r.explain()
	}
}

// MaxNesting bounds how many list and block quote markers may open on one
// line. Markdown parsers spend time quadratic in that number (goldmark
// takes seconds for a line of a few thousand "- "), and no plan needs more
// than a handful.
const MaxNesting = 100

// deepestNesting returns the 0-based line whose start opens the most
// container markers ("- ", "* ", "+ ", "1. ", "1) ", ">"), and how many.
// Only counts above MaxNesting matter, so it stops counting there.
func deepestNesting(src []byte, lines []int) (line, depth int) {
	for l, start := range lines {
		n := 0
		i := start
		for i < len(src) && n <= MaxNesting {
			for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
				i++
			}
			if i >= len(src) {
				break
			}
			c := src[i]
			if c == '>' {
				n++
				i++
				continue
			}
			j := i
			if c == '-' || c == '+' || c == '*' {
				j++
			} else {
				for j < len(src) && j-i < 10 && isDigit(src[j]) {
					j++
				}
				if j == i || j >= len(src) || (src[j] != '.' && src[j] != ')') {
					break
				}
				j++
			}
			if j < len(src) && src[j] != ' ' && src[j] != '\t' {
				break
			}
			n++
			i = j
		}
		if n > depth {
			line, depth = l, n
		}
	}
	return line, depth
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		c, n := utf8.DecodeRune(b[i:])
		if c == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b) - 1
}

// abs turns a position in body into one in src.
func (r *parseState) abs(pos int) int { return pos + r.base }

// heading is a top-level heading.
type heading struct {
	node   *ast.Heading
	level  int
	start  int // offset of its first line
	end    int // offset just past its last line (the underline of a setext heading)
	title  string
	label  label
	isTask bool   // a classic task label: "Task N", "Step N", "T001"
	box    int    // 1 for a "[ ]" (or "[~]", "[-]") before the label, 2 for "[x]"
	clean  string // title without its status marks ("✅", "[x]")
	status Status // what those marks say
	idx    int    // its index in topBlocks.hs, for parseState.facts
	// icon: the title starts with a symbol that is no status mark ("## 🔧
	// FASE 1: Setup"); leadMark: it starts with a status mark ("## 🔄
	// FASE 8"). Among headings that all start with a symbol, a status
	// mark is one more icon (see readSections).
	icon, leadMark bool
}

// headingFacts is what a heading's words say about its section, worked
// out once per heading: the readers ask for every list and item under it.
type headingFacts struct {
	aside    bool // checks or logs the work: "Acceptance criteria"
	names    bool // names the task list: "Step by Step Tasks"
	explains bool // explains the work: "Technical details", "Benefits"
	shows    bool // only shows tasks: "Task Breakdown Preview", "Template"
}

// facts returns what a heading's words say, working it out on first use:
// a plan of thousands of "### Task N" headings asks for few of them.
func (r *parseState) facts(h *heading) headingFacts {
	if r.hfacts == nil {
		r.hfacts = make([]headingFacts, len(r.top.hs))
		r.hknown = make([]bool, len(r.top.hs))
	}
	if h.idx < 0 || h.idx >= len(r.hfacts) {
		return factsOf(h.title)
	}
	if !r.hknown[h.idx] {
		r.hfacts[h.idx], r.hknown[h.idx] = factsOf(h.title), true
	}
	return r.hfacts[h.idx]
}

func factsOf(title string) headingFacts {
	w := headingWords(title)
	return headingFacts{aside: isAside(title), names: namesTaskList(title), explains: explainsWork(w), shows: showsOnly(w)}
}

// topBlocks are the document's top-level blocks the readers look at.
type topBlocks struct {
	hs     []heading
	lists  []*ast.List
	tables []ast.Node             // paragraphs whose first line starts with "|"
	code   [][2]int               // 0-based first and last lines of code blocks
	yaml   []*ast.FencedCodeBlock // top-level ```yaml blocks (a PRP's task list)
}

// collectTop makes one pass over the document's top-level blocks: it
// returns the headings, lists, table-like paragraphs and code blocks, and
// records the lines of thematic breaks.
func (r *parseState) collectTop(doc ast.Node) topBlocks {
	var top topBlocks
	var headings int // sized up front: a heading is ~100 bytes, and large plans have thousands
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if n.Kind() == ast.KindHeading {
			headings++
		}
	}
	top.hs = make([]heading, 0, headings)
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			if h, ok := r.topHeading(n); ok {
				h.idx = len(top.hs)
				top.hs = append(top.hs, h)
			}
		case *ast.List:
			top.lists = append(top.lists, n)
		case *rawParagraph, *ast.Paragraph:
			if l := n.Lines(); l.Len() > 1 && r.body[l.At(0).Start] == '|' {
				top.tables = append(top.tables, n)
			}
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			if span, ok := r.blockLines(n); ok {
				top.code = append(top.code, span)
			}
			if fc, ok := n.(*ast.FencedCodeBlock); ok && fc.Info != nil {
				if lang := string(fc.Language(r.body)); lang == "yaml" || lang == "yml" {
					top.yaml = append(top.yaml, fc)
				}
			}
		case *ast.ThematicBreak:
			if n.Pos() >= 0 {
				if r.breakLines == nil {
					r.breakLines = map[int]bool{}
				}
				r.breakLines[r.lineOf(r.abs(n.Pos()))] = true
			}
		}
	}
	return top
}

// blockLines returns the 0-based first and last lines of a code block,
// fences included.
func (r *parseState) blockLines(n ast.Node) ([2]int, bool) {
	pos := n.Pos()
	lines := n.Lines()
	if pos < 0 && lines.Len() > 0 {
		pos = lines.At(0).Start
	}
	if pos < 0 {
		return [2]int{}, false
	}
	first := r.lineOf(r.abs(pos))
	last := first
	if lines.Len() > 0 {
		last = r.lineOf(r.abs(lines.At(lines.Len() - 1).Start))
	}
	if _, fenced := n.(*ast.FencedCodeBlock); fenced {
		last++ // the closing fence
	}
	return [2]int{first, last}, true
}

func (r *parseState) topHeading(n *ast.Heading) (heading, bool) {
	h := heading{node: n, level: n.Level}
	lines := n.Lines()
	var parts []string
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		parts = append(parts, strings.TrimSpace(string(r.body[seg.Start:seg.Stop])))
	}
	h.title = strings.Join(parts, " ")
	pos := n.Pos()
	if pos < 0 && lines.Len() > 0 {
		pos = lines.At(0).Start
	}
	if pos < 0 {
		return h, false
	}
	h.start = r.lineStartOf(r.abs(pos))
	lastLine := r.lineOf(r.abs(pos))
	if lines.Len() > 0 {
		lastLine = r.lineOf(r.abs(lines.At(lines.Len() - 1).Start))
	}
	if r.src[r.abs(pos)] != '#' { // setext: the underline is the next line
		lastLine++
	}
	h.end = r.lineEnd(lastLine)
	if t := h.title; len(t) >= 3 && t[0] == '[' && t[2] == ']' && strings.ContainsRune(" xX~-/", rune(t[1])) {
		h.box = 1
		if t[1] == 'x' || t[1] == 'X' {
			h.box = 2
		}
	}
	title, st := cutStatus(h.title)
	h.clean, h.status = title, st
	if t := strings.TrimSpace(h.title); st != StatusNone && t[0] >= utf8.RuneSelf {
		n, _ := leadingMark(t)
		h.leadMark = n > 0
	}
	h.label = parseLabelWith(title, true, true)
	if h.label.kind == labelNone && title != "" && title[0] >= utf8.RuneSelf {
		// "## 🔧 FASE 1: Setup", "### 🐛 1. Fix the webhook": an icon
		// before the label.
		if t := trimLeadingSymbols(title); t != title && t != "" {
			if l := parseLabelWith(t, true, true); l.kind != labelNone {
				h.label, h.icon = l, true
			}
		}
	}
	if h.label.kind == labelCode && h.box == 0 && priorityTier(h.label.id) {
		// "## P1 — Critical Path": a priority tier holding tasks, not one.
		h.label = label{}
	}
	switch h.label.kind {
	case labelTask, labelStep, labelSpecKit:
		h.isTask = true
	}
	return h, true
}

// lineEnd returns the offset just past 0-based line l (its "\n" included).
func (r *parseState) lineEnd(l int) int {
	if l+1 < len(r.lines) {
		return r.lines[l+1]
	}
	return len(r.src)
}

// trimEnd moves end back over trailing blank lines (and, with breaks,
// thematic breaks), never past the first line of the span at start.
func (r *parseState) trimEnd(start, end int, breaks bool) int {
	for end > start {
		l := r.lineOf(end - 1)
		ls := r.lines[l]
		if ls <= start {
			break
		}
		if isBlank(r.src[ls:end]) || (breaks && r.breakLines[l]) {
			end = ls
			continue
		}
		break
	}
	return end
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// checkItem is a top-level list item with a task marker.
type checkItem struct {
	status Status // StatusDone for "[x]", StatusPending for "[ ]", and "[~]", "[-]", "[/]"
	first  []byte // the first line of its text, from "[ ]" on
	start  int
	end    int
}

// taskItem reports whether a list item starts with a task marker: GFM's
// "[ ]" and "[x]", and the marks plans write for work in progress ("[~]",
// "[/]") and dropped ("[-]"), which GFM leaves as text. first is the first
// line of its text, from the marker on.
func (r *parseState) taskItem(item ast.Node) (st Status, first []byte, ok bool) {
	para := item.FirstChild()
	if para == nil || (para.Kind() != ast.KindParagraph && para.Kind() != ast.KindTextBlock) || para.Lines().Len() == 0 {
		return StatusNone, nil, false
	}
	seg := para.Lines().At(0)
	line := r.body[seg.Start:seg.Stop]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t\r")
	if box, ok := para.FirstChild().(*extast.TaskCheckBox); ok {
		if box.IsChecked {
			return StatusDone, line, true
		}
		return StatusPending, line, true
	}
	if len(line) >= 4 && line[0] == '[' && line[2] == ']' && (line[3] == ' ' || line[3] == '\t') {
		switch line[1] {
		case '~', '/':
			return StatusInProgress, line, true
		case '-':
			return StatusCancelled, line, true
		}
	}
	return StatusNone, nil, false
}

// listTasks appends the task items of a top-level list, with their spans.
func (r *parseState) listTasks(list *ast.List, items []checkItem) []checkItem {
	after := len(r.src)
	for m := list.NextSibling(); m != nil; m = m.NextSibling() {
		if m.Pos() >= 0 {
			after = r.lineStartOf(r.abs(m.Pos()))
			break
		}
	}
	for it := list.FirstChild(); it != nil; it = it.NextSibling() {
		item, ok := it.(*ast.ListItem)
		if !ok || item.Pos() < 0 {
			continue
		}
		st, first, ok := r.taskItem(item)
		if !ok {
			continue
		}
		start := r.lineStartOf(r.abs(item.Pos()))
		end := after
		for next := item.NextSibling(); next != nil; next = next.NextSibling() {
			if next.Pos() >= 0 {
				end = r.lineStartOf(r.abs(next.Pos()))
				break
			}
		}
		if end <= start { // cannot happen with goldmark; keep spans sane anyway
			end = r.lineEnd(r.lineOf(start))
		}
		end = r.trimEnd(start, end, false)
		items = append(items, checkItem{status: st, first: first, start: start, end: end})
	}
	return items
}

func exampleHeading(t taskBuild) string {
	switch t.kind {
	case labelStep:
		return "Step N"
	case labelSpecKit:
		return "T001"
	}
	return "Task N"
}

// taskAt returns the index of the task whose span holds offset off, or -1.
func (r *parseState) taskAt(off int) int {
	i := sort.Search(len(r.tasks), func(i int) bool { return r.tasks[i].Start > off }) - 1
	if i >= 0 && off < r.tasks[i].End {
		return i
	}
	return -1
}

// scanTaskContents walks the document's blocks once and gives each task
// what its span holds: dependency lines, its verify block, its steps. Only
// container blocks are entered; inline content is never visited.
func (r *parseState) scanTaskContents(doc ast.Node) {
	var strayVerify []int
	for n := doc.FirstChild(); n != nil; {
		switch n := n.(type) {
		case *ast.Paragraph, *ast.TextBlock, *rawParagraph:
			r.scanParagraph(n)
		case *ast.FencedCodeBlock:
			if line, stray := r.scanVerify(n); stray {
				strayVerify = append(strayVerify, line)
			}
			r.checkNestedFence(n)
		case *ast.ListItem:
			r.countStep(n)
		}
		// Next block in document order: into containers, else along, else up.
		if n.HasChildren() && isContainer(n) {
			n = n.FirstChild()
			continue
		}
		for n != doc && n.NextSibling() == nil {
			n = n.Parent()
		}
		if n == doc {
			break
		}
		n = n.NextSibling()
	}
	for _, line := range strayVerify {
		r.diag(line, 1, SeverityWarning, "```verify block outside every task is ignored (a plan-wide verify command goes in the front matter: \"verify: ...\")")
	}
}

func isContainer(n ast.Node) bool {
	switch n.Kind() {
	case ast.KindList, ast.KindListItem, ast.KindBlockquote, ast.KindDocument:
		return true
	}
	return false
}

// scanParagraph reads dependency declarations from a paragraph's lines.
func (r *parseState) scanParagraph(n ast.Node) {
	lines := n.Lines()
	if lines.Len() == 0 {
		return
	}
	ti := r.taskAt(r.abs(lines.At(0).Start))
	if ti < 0 {
		return
	}
	open := false // a "(depends on" wrapped onto the next line
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		open = r.scanDeps(&r.tasks[ti], r.abs(seg.Start), r.body[seg.Start:seg.Stop], open)
	}
}

// scanVerify gives a ```verify block to the task that holds it; stray
// reports a verify block outside every task, at line.
func (r *parseState) scanVerify(n *ast.FencedCodeBlock) (line int, stray bool) {
	if n.Info == nil || string(n.Language(r.body)) != "verify" {
		return 0, false
	}
	pos := n.Pos()
	if pos < 0 {
		return 0, false
	}
	ti := r.taskAt(r.abs(pos))
	line = r.lineOf(r.abs(pos)) + 1
	if ti < 0 {
		return line, true
	}
	t := &r.tasks[ti]
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(r.body))
	}
	cmd := strings.TrimRight(normalizeNewlines(b.String()), " \t\r\n")
	switch {
	case t.hasVerify:
		r.diag(line, 1, SeverityWarning, "task %s has more than one ```verify block; the first one (line %d) is used", t.ID, t.verifyLine)
	case cmd == "":
		r.diag(line, 1, SeverityWarning, "task %s has an empty ```verify block", t.ID)
		t.hasVerify, t.verifyLine = true, line
	default:
		t.Verify = cmd
		t.hasVerify, t.verifyLine = true, line
	}
	return line, false
}

// countStep counts a checkbox item inside a heading task as one of its
// steps.
func (r *parseState) countStep(n *ast.ListItem) {
	if n.Pos() < 0 {
		return
	}
	ti := r.taskAt(r.abs(n.Pos()))
	if ti < 0 || r.tasks[ti].Level == 0 {
		return
	}
	if st, _, ok := r.taskItem(n); ok {
		r.tasks[ti].steps++
		if st.skips() {
			r.tasks[ti].doneSteps++
		}
	}
}

// numberTasks gives every task its ordinal, and its ordinal as id when it
// has no explicit one.
func (r *parseState) numberTasks() {
	for i := range r.tasks {
		t := &r.tasks[i]
		t.Ordinal = i + 1
		if t.ID == "" {
			t.ID = strconv.Itoa(t.Ordinal)
		}
	}
}

// finishTasks fills texts and lines, and decides checked and empty.
func (r *parseState) finishTasks() {
	// One copy of the file that every text is a substring of: a plan of
	// many tasks would otherwise make as many allocations.
	text := string(r.src)
	for i := range r.tasks {
		t := &r.tasks[i]
		t.Text = text[t.Start:t.End]
		if r.plan.Form != FormTodos {
			t.Title = cleanTitle(t.Title)
		}
		t.Line = r.lineOf(t.Start) + 1
		t.EndLine = r.lineOf(t.End-1) + 1
		t.hasBody = t.headEnd < t.End && !isBlank(r.src[t.headEnd:t.End])
		// A single-fix plan read whole is not done because its checkboxes
		// are: they are notes of the investigation as often as the work.
		if t.Level > 0 && t.steps > 0 && t.doneSteps == t.steps && r.plan.Form != FormWhole {
			t.Checked = true
		}
	}
	if len(r.tasks) == 0 || r.plan.Form == FormTodos {
		r.plan.Preamble = text[r.base:]
		return
	}
	r.plan.Preamble = text[r.base:r.tasks[0].Start]
	last := r.tasks[len(r.tasks)-1].End
	if r.hasText(last, len(r.src)) {
		r.plan.Trailer = text[last:]
	}
}

// hasText reports whether src[from:to], which starts at a line start,
// holds a line that is neither blank nor a thematic break.
func (r *parseState) hasText(from, to int) bool {
	for l := r.lineOf(from); l < len(r.lines) && r.lines[l] < to; l++ {
		if !isBlank(lineText(r.src, r.lines, l)) && !r.breakLines[l] {
			return true
		}
	}
	return false
}
