package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/implloop/implloop/internal/bytepath"
	"github.com/implloop/implloop/internal/words"
)

// Extras are what the HTML report shows that the journal's rows alone do
// not say. The loop supplies them: it owns the words of its decisions and
// reads the boundary commits.
type Extras struct {
	Tasks map[string]TaskExtras
	// DiffNote says why no task has a diff (the repository could not be
	// read); "" normally.
	DiffNote string
}

// TaskExtras are one task's.
type TaskExtras struct {
	// Why it ran live or replayed, in the words of `implloop explain`.
	Why []string
	// Restored lists the paths a resume wrote back from the boundary
	// commits before it replayed the task: its bar is "restored".
	Restored []string
	// HasEffect: the task took a boundary of its own in the run, so Patch
	// is its effect (empty when it changed nothing).
	HasEffect bool
	Patch     []byte
	PatchSize int  // the whole patch's size
	PatchCut  bool // Patch holds only its first PatchLimit bytes
	// FinalMessage is the agent's final message on the task's last
	// attempt ("" when it reported none).
	FinalMessage string
	// FailedGates are the task's attempts whose gate failed, each with its
	// output (the page shows its last lines).
	FailedGates []FailedGate
}

// FailedGate is one attempt's failed gate, in its own words.
type FailedGate struct {
	Attempt  int
	Command  string
	ExitCode int
	Summary  string // the line that says why (loop.GateSummary)
	Output   string
	Replayed bool
}

// failedGateView is a FailedGate as the page shows it.
type failedGateView struct {
	FailedGate
	Tail text
}

// Size limits of the HTML report: a 1,000-task run's stays under
// MaxHTMLSize and opens without freezing.
const (
	// PatchLimit is the most of one task's patch the report inlines.
	PatchLimit = 64 << 10
	// MaxHTMLSize bounds the report; diffs fill what the rest leaves,
	// in task order, and the others name the command that prints them.
	MaxHTMLSize = 5_000_000
	// htmlHeadroom is kept free of diffs under MaxHTMLSize.
	htmlHeadroom = 256 << 10
	// Long texts (a gate's output tail, a block reason) keep their last
	// (first) lines and name the file that has them all.
	maxTextLines = 40
	maxTextBytes = 4 << 10
	// Diffs of a small run are unfolded; a longer one folds them all.
	openDiffsUpTo = 12
	// A run with few tasks shows every task unfolded; a longer one only
	// the tasks that did not end done.
	openTasksUpTo = 50
)

//go:embed report.html.tmpl
var pageSource string

// pageTemplate parses the page's template (its "diff" template writes a
// task's patch). Parsed for each page rather than at package init, which
// every implloop process would pay (about 0.4 ms) for the one command
// that writes a page.
func pageTemplate() (*template.Template, error) {
	t, err := template.New("page").Funcs(template.FuncMap{
		"dur": dur, "lower": strings.ToLower, "stamp": stamp, "usd": usd, "commas": words.Thousands, "tokens": tokens, "cost": costOf, "short": words.Short,
	}).Parse(pageSource)
	if err != nil {
		return nil, fmt.Errorf("report template: %w", err)
	}
	return t, nil
}

// HTMLPath is where WriteHTML puts a run's report.html.
func HTMLPath(stateDir, runID string) string {
	return filepath.Join(stateDir, "runs", runID, "report.html")
}

// WriteHTML stores the report as runs/<id>/report.html in the state
// directory, beside report.md and report.json, replaced atomically, and
// returns its path.
func WriteHTML(stateDir string, r *Report, x *Extras) (string, error) {
	md, _ := Paths(stateDir, r.RunID)
	path := HTMLPath(stateDir, r.RunID)
	b, err := htmlPage(r, x, md)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return path, writeAtomic(path, bytes.NewReader(b), true)
}

func htmlPage(r *Report, x *Extras, mdPath string) ([]byte, error) {
	if x == nil {
		x = &Extras{}
	}
	tmpl, err := pageTemplate()
	if err != nil {
		return nil, err
	}
	p := newPage(r, x, mdPath)
	// First without diffs: what the rest weighs is what the diffs may not.
	var b bytes.Buffer
	if err := tmpl.Execute(&b, p); err != nil {
		return nil, err
	}
	budget := MaxHTMLSize - htmlHeadroom - b.Len()
	if err := p.addDiffs(tmpl.Lookup("diff"), x, budget); err != nil {
		return nil, err
	}
	b.Reset()
	if err := tmpl.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// page is what the template shows.
type page struct {
	R         *Report
	ChromaCSS template.CSS
	Verdict   string // lower case, a CSS class
	Lineage   []ancestorView
	Timeline  timeline
	Tasks     []taskView
	DiffNote  string
	Fold      bool // diffs start folded
}

type ancestorView struct {
	Ancestor
	Href string
}

type taskView struct {
	Task
	Open        bool
	Why         []string
	Restored    []string
	Lost        []string
	Block       text
	GateTail    text
	Gate        *GateMark
	AgentError  text
	HasEffect   bool
	Final       text
	FailedGates []failedGateView
	Diff        template.HTML
	DiffFiles   int
	DiffAdd     int
	DiffDel     int
	DiffNote    string // why the diff is not (all) here
	DiffCommand string
	extra       TaskExtras
}

// text is a long text as shown: Cut when lines were left out, and where
// the whole is.
type text struct {
	Text  string
	Cut   int // lines left out
	Whole string
}

// cutTail keeps s's last lines; cutHead its first.
func cutTail(s, whole string) text { return cutText(s, whole, true) }
func cutHead(s, whole string) text { return cutText(s, whole, false) }

func cutText(s, whole string, tail bool) text {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	n := len(lines)
	if n > maxTextLines {
		if tail {
			lines = lines[n-maxTextLines:]
		} else {
			lines = lines[:maxTextLines]
		}
	}
	out := strings.Join(lines, "\n")
	if len(out) > maxTextBytes {
		if tail {
			out = out[len(out)-maxTextBytes:]
		} else {
			out = out[:maxTextBytes]
		}
		out = strings.ToValidUTF8(out, "")
	}
	t := text{Text: out}
	if kept := strings.Count(out, "\n") + 1; kept < n || len(out) < len(s) {
		t.Cut = max(1, n-kept)
		t.Whole = whole
	}
	return t
}

func newPage(r *Report, x *Extras, mdPath string) *page {
	p := &page{R: r, ChromaCSS: template.CSS(chromaCSS), Verdict: strings.ToLower(string(r.Outcome.Verdict)),
		DiffNote: x.DiffNote, Fold: len(r.Tasks) > openDiffsUpTo}
	for _, a := range r.Lineage {
		// Sibling directories: runs/<id>/report.html. A run id is
		// implloop's own (r-YYYYMMDD-...); html/template still checks
		// the URL.
		p.Lineage = append(p.Lineage, ancestorView{Ancestor: a, Href: "../" + a.ID + "/report.html"})
	}
	last := map[string]Attempt{}
	for _, a := range r.Attempts {
		last[a.Task] = a
	}
	for _, t := range r.Tasks {
		e := x.Tasks[t.ID]
		v := taskView{Task: t, Why: e.Why, Restored: e.Restored, HasEffect: e.HasEffect, extra: e,
			Open:        len(r.Tasks) <= openTasksUpTo || (t.Status != "done" && t.Status != "skipped"),
			DiffCommand: fmt.Sprintf("implloop show %s --task %s --diff", r.RunID, t.ID)}
		for _, lp := range t.LostPaths {
			v.Lost = append(v.Lost, bytepath.Display(lp))
		}
		if t.BlockReason != "" {
			v.Block = cutHead(t.BlockReason, mdPath)
		}
		if e.FinalMessage != "" {
			v.Final = cutTail(e.FinalMessage, "implloop show "+r.RunID+" --task "+t.ID+" --log")
		}
		for _, g := range e.FailedGates {
			v.FailedGates = append(v.FailedGates, failedGateView{FailedGate: g,
				Tail: cutTail(g.Output, "implloop show "+r.RunID+" --task "+t.ID+" --log")})
		}
		if a, ok := last[t.ID]; ok {
			v.Gate = a.Gate
			if a.AgentError != "" {
				v.AgentError = cutTail(a.AgentError, mdPath)
			}
		}
		if t.GateTail != "" && v.Gate != nil {
			v.GateTail = cutTail(t.GateTail, t.GateOutput)
		}
		p.Tasks = append(p.Tasks, v)
	}
	p.Timeline = newTimeline(r, x)
	return p
}

// addDiffs renders each task's patch while the budget lasts.
func (p *page) addDiffs(diffTmpl *template.Template, x *Extras, budget int) error {
	var b bytes.Buffer
	for i := range p.Tasks {
		v := &p.Tasks[i]
		e := v.extra
		if !e.HasEffect || len(e.Patch) == 0 {
			continue
		}
		files := parsePatch(e.Patch, budget > 0)
		for _, f := range files {
			v.DiffAdd += f.Add
			v.DiffDel += f.Del
		}
		v.DiffFiles = len(files)
		if e.PatchCut {
			v.DiffNote = fmt.Sprintf("cut at %s of %s", kib(len(e.Patch)), kib(e.PatchSize))
		}
		b.Reset()
		if err := diffTmpl.Execute(&b, files); err != nil {
			return err
		}
		if b.Len() > budget {
			v.DiffNote = fmt.Sprintf("not included: the report keeps under %d MB", MaxHTMLSize/1_000_000)
			budget = 0
			continue
		}
		budget -= b.Len()
		v.Diff = template.HTML(b.String()) // html/template wrote it
	}
	return nil
}

func kib(n int) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// timeline is the SVG: a lane per worker, a bar per attempt, marks for
// gates, blocks and concerns.
type timeline struct {
	Width, Height int
	Lanes         []lane
	Bars          []bar
	Marks         []mark
	Ticks         []tick
}

type lane struct {
	ID    int
	Label string
	Task  string // the task whose row it is ("" for a worker's lane)
	Y, DY int
}

// uniqueTasks are the distinct tasks of as.
func uniqueTasks(as []Attempt) map[string]bool {
	m := map[string]bool{}
	for _, a := range as {
		m[a.Task] = true
	}
	return m
}

type bar struct {
	Class, Task, Title string
	Attempt, Lane      int
	X, Y, W, H         string
}

type mark struct {
	Class, Title, Shape string // Shape: circle or path
	CX, CY, D           string
}

type tick struct {
	X, Label, Anchor string
}

const (
	tlGutter     = 64  // lane labels ("lane 2")
	tlTaskGutter = 190 // task labels ("task 3 · Count lines")
	tlLane       = 34
	tlTaskRow    = 24
	tlBar        = 14
	tlAxis       = 22
	tlMinBarW    = 2
	// tlTaskRows: up to this many tasks on the timeline, each task has a
	// row of its own, labelled; beyond it, a row per worker (lane).
	tlTaskRows = 200
)

// taskLabel is a task's row label: its id and the start of its title.
func taskLabel(t Task) string {
	label := "task " + t.ID
	if title := oneLine(t.Title); title != "" {
		label += " · " + title
	}
	if r := []rune(label); len(r) > 30 {
		label = string(r[:29]) + "…"
	}
	return label
}

func newTimeline(r *Report, x *Extras) timeline {
	tl := timeline{Width: max(960, min(24000, tlGutter+6*len(r.Attempts)+20))}
	if len(r.Attempts) == 0 {
		return tl
	}
	s := newTLScale(r)
	if s.perTask {
		tl.Width += tlTaskGutter - tlGutter
	}
	s.spanOver(r, tl.Width)
	maxLane := 0
	for _, a := range r.Attempts {
		maxLane = max(maxLane, s.row(a))
	}
	for l := 0; l <= maxLane; l++ {
		ln := lane{ID: l, Label: fmt.Sprintf("lane %d", l+1), Y: 8 + l*s.rowH, DY: (s.rowH + 8) / 2}
		if s.perTask {
			ln.Label, ln.Task = taskLabel(s.rowTasks[l]), s.rowTasks[l].ID
		}
		tl.Lanes = append(tl.Lanes, ln)
	}
	tasks := map[string]Task{}
	for _, t := range r.Tasks {
		tasks[t.ID] = t
	}
	lastOf := map[string]int{}
	for i, a := range r.Attempts {
		lastOf[a.Task] = i
	}
	for i, a := range r.Attempts {
		tl.addAttempt(s, a, tasks[a.Task], x, lastOf[a.Task] == i)
	}
	axisY := 8 + (maxLane+1)*s.rowH
	tl.Height = axisY + tlAxis
	// A tick every 200 pixels or so, however wide the run made it.
	ticks := max(4, tl.Width/200)
	for i := 0; i <= ticks; i++ {
		at := s.start.Add(s.span * time.Duration(i) / time.Duration(ticks))
		anchor := "start"
		if i == ticks {
			anchor = "end" // the last label ends at its line
		}
		tl.Ticks = append(tl.Ticks, tick{X: px(s.x(at)), Label: "+" + dur(at.Sub(s.start).Milliseconds()), Anchor: anchor})
	}
	return tl
}

// tlScale places a run's attempts on the timeline: a row for each, and an
// x for each instant.
type tlScale struct {
	// perTask: a row per task, labelled with it (plan order), while there
	// are few enough; else a row per worker.
	perTask      bool
	rowOf        map[string]int
	rowTasks     []Task
	gutter, rowH int
	start        time.Time
	span         time.Duration
	inner        float64
}

func newTLScale(r *Report) tlScale {
	s := tlScale{rowOf: map[string]int{}}
	for _, t := range r.Tasks {
		for _, a := range r.Attempts {
			if a.Task == t.ID {
				s.rowOf[t.ID] = len(s.rowTasks)
				s.rowTasks = append(s.rowTasks, t)
				break
			}
		}
	}
	s.perTask = len(s.rowTasks) <= tlTaskRows && len(s.rowOf) == len(uniqueTasks(r.Attempts))
	s.gutter, s.rowH = tlGutter, tlLane
	if s.perTask {
		s.gutter, s.rowH = tlTaskGutter, tlTaskRow
	}
	return s
}

// spanOver sets the time axis: from the run's (or its first attempt's)
// start to its last end, over a timeline width wide.
func (s *tlScale) spanOver(r *Report, width int) {
	start, end := r.StartedAt, r.EndedAt
	for _, a := range r.Attempts {
		if start.IsZero() || (!a.Start.IsZero() && a.Start.Before(start)) {
			start = a.Start
		}
		if a.End.After(end) {
			end = a.End
		}
	}
	s.start, s.span = start, max(end.Sub(start), time.Millisecond)
	s.inner = float64(width - s.gutter - 16)
}

func (s tlScale) row(a Attempt) int {
	if s.perTask {
		return s.rowOf[a.Task]
	}
	return a.Lane
}

func (s tlScale) x(t time.Time) float64 {
	return float64(s.gutter) + s.inner*float64(t.Sub(s.start))/float64(s.span)
}

// px is a coordinate as the SVG takes it.
func px(v float64) string { return fmt.Sprintf("%.1f", v) }

// addAttempt draws one attempt: its bar, its gate's mark under the bar's
// end, and, on a task's last attempt, the marks of its block and concerns.
func (tl *timeline) addAttempt(s tlScale, a Attempt, t Task, x *Extras, last bool) {
	src := a.Source
	if len(x.Tasks[a.Task].Restored) > 0 && src == "replayed" {
		src = "restored"
	}
	x0, x1 := s.x(a.Start), s.x(a.End)
	w := max(x1-x0, tlMinBarW)
	y := float64(8 + s.row(a)*s.rowH + (s.rowH-tlBar)/2)
	tl.Bars = append(tl.Bars, bar{Class: src, Task: a.Task, Attempt: a.Attempt, Lane: a.Lane, Title: attemptTitle(a, t, src),
		X: px(x0), Y: px(y), W: px(w), H: px(tlBar)})
	cy := y + tlBar/2 // the bar's middle; gate marks sit under the bar
	if g := a.Gate; g != nil {
		class, verdict := "gate pass", "passed"
		if !g.Passed {
			class, verdict = "gate fail", fmt.Sprintf("failed (exit %d)", g.ExitCode)
		}
		how := dur(g.DurationMS)
		if g.Replayed {
			class += " replayed"
			how = "replayed"
		}
		tl.Marks = append(tl.Marks, mark{Class: class, Shape: "circle", CX: px(x0 + w), CY: px(cy + tlBar/2 + 4),
			Title: fmt.Sprintf("task %s attempt %d gate %s at %s (%s): %s", a.Task, a.Attempt, verdict, clock(g.At), how, g.Command)})
	}
	if !last {
		return
	}
	top := y - 2
	if t.BlockReason != "" || t.Status == "blocked" {
		tl.Marks = append(tl.Marks, mark{Class: "block", Shape: "path",
			D:     fmt.Sprintf("M%s %sl-5 -8h10z", px(x0+w), px(top)),
			Title: fmt.Sprintf("task %s blocked: %s", a.Task, firstLine(t.BlockReason))})
	}
	if len(t.Concerns) > 0 || len(t.LostPaths) > 0 {
		why := strings.Join(t.Concerns, "; ")
		if len(t.LostPaths) > 0 {
			why = strings.TrimPrefix(why+fmt.Sprintf("; %d path(s) lost", len(t.LostPaths)), "; ")
		}
		tl.Marks = append(tl.Marks, mark{Class: "concern", Shape: "path",
			D:     fmt.Sprintf("M%s %sl4 -5l-4 -5l-4 5z", px(x0), px(top)),
			Title: fmt.Sprintf("task %s guard: %s", a.Task, why)})
	}
}

// attemptTitle is an attempt bar's tooltip: what ran, when, what it cost
// or saved, and how its agent call failed.
func attemptTitle(a Attempt, t Task, src string) string {
	title := fmt.Sprintf("task %s attempt %d (%s): %s\n%s – %s, %s", a.Task, a.Attempt, src, oneLine(t.Title),
		clock(a.Start), clock(a.End), dur(a.End.Sub(a.Start).Milliseconds()))
	if a.Live.Units > 0 {
		title += "\nspent " + spendLine(a.Live)
	}
	if a.Saved.Units > 0 {
		title += "\nreplayed: saved " + costOf(a.Saved)
	}
	if a.AgentError != "" {
		title += "\nagent call failed: " + firstLine(a.AgentError)
	}
	return title
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05.000")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// CopyGateOutput writes the whole gate output of task r.Tasks[i] from src
// beside the run's report.html (runs/<id>/gate-output/), replaced
// atomically (once), for the page to name: a gate output that came with a
// pull is kept in a pack of the blob store, not in a file of its own.
func CopyGateOutput(stateDir string, r *Report, i int, src io.Reader) (string, error) {
	safe := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			return c
		}
		return '_'
	}, r.Tasks[i].ID)
	dir := filepath.Join(filepath.Dir(HTMLPath(stateDir, r.RunID)), "gate-output")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	// Named by its blob too: a page written while the run ran may have
	// had an earlier attempt's output.
	path := filepath.Join(dir, fmt.Sprintf("%03d-%.60s-%.12s.txt", i+1, safe, r.Tasks[i].GateOutputBlob))
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return path, nil // written for an earlier page
	}
	// Not fsynced: a copy a crash left empty is written again next time.
	if err := writeAtomic(path, src, false); err != nil {
		return "", err
	}
	return path, nil
}
