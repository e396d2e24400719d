package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/implloop/implloop/cache"
	"testing"
)

// goPatch is a task's patch adding a Go file of n functions.
func goPatch(path string, n int, extra string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, 3*n+2)
	b.WriteString("+package demo\n+\n")
	for i := range n {
		fmt.Fprintf(&b, "+// F%d returns %q.\n+func F%d() string { return %q }\n+\n", i, extra, i, extra)
	}
	return b.Bytes()
}

func TestHTMLSeed(t *testing.T) {
	j, a, b := seed(t)
	for _, id := range []string{a, b} {
		r, err := Build(j, id)
		if err != nil {
			t.Fatal(err)
		}
		x := &Extras{Tasks: map[string]TaskExtras{
			"2": {Why: []string{"fresh run: never ran before"}, HasEffect: true, Patch: goPatch("cli.go", 3, "x"), PatchSize: 500},
		}}
		page := HTML(r, x)
		for _, want := range []string{`id="verdict">` + r.Headline, `<rect class="bar `, `id="task-4"`, `<span class="kd">func</span>`,
			`fresh run: never ran before`, r.PlanSHA256} {
			if !bytes.Contains(page, []byte(want)) {
				t.Errorf("run %s: no %q in the page", id, want)
			}
		}
		if id == b && (!bytes.Contains(page, []byte(`href="../`+a+`/report.html"`)) || bytes.Count(page, []byte(`class="bar replayed"`)) != 3) {
			t.Errorf("the resume's page lacks its lineage or replayed bars")
		}
		if os.Getenv("IMPLLOOP_HTML_OUT") != "" {
			os.WriteFile(filepath.Join(os.Getenv("IMPLLOOP_HTML_OUT"), id+".html"), page, 0o644)
		}
	}
}

// newRun is a fixture on a new journal holding run r.
func newRun(t *testing.T, r *cache.Run) fixture {
	j, _ := newJournal(t)
	f := fixture{t, j}
	f.must(j.CreateRun(r))
	return f
}

// hostile is content an agent, a plan or a work tree may hold.
const hostile = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'"></style></title></textarea><a href="javascript:document.title='pwned'">x</a>]]><!--`

func TestHTMLHostileContentIsInert(t *testing.T) {
	r := &cache.Run{ID: "r-20251130-080000-bad1", PlanPath: "plans/" + hostile + ".md", PlanSHA256: strings.Repeat("ab", 32), StartedAt: t0}
	f := newRun(t, r)
	j := f.j
	f.live(r.ID, "1", 1, 0, 5, 10, 1, 0.001, true)
	f.must(j.PutGate(cache.Gate{RunID: r.ID, TaskID: "1", Attempt: 1, Command: "go test " + hostile, Passed: false, ExitCode: 1,
		Feedback: "FAIL " + hostile + "\n", At: at(6), Duration: time.Second}))
	f.task(r.ID, "1", 1, "Title "+hostile, cache.TaskBlocked, cache.SourceLive, 1, 6, func(tk *cache.Task) {
		tk.BlockReason = "blocked " + hostile
		tk.Concerns = []string{"concern " + hostile}
		tk.LostPaths = []string{hostile + ".txt"}
	})
	f.must(j.FinishRun(r.ID, "BLOCKED", 4, at(7)))
	rep, err := Build(j, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	path := hostile + ".go"
	patch := fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-// %s\n+const s = %q // %s\n", path, path, path, path, hostile, hostile, hostile)
	x := &Extras{Tasks: map[string]TaskExtras{"1": {Why: []string{"why " + hostile}, Restored: []string{hostile}, HasEffect: true, Patch: []byte(patch)}}}
	page := string(HTML(rep, x))

	// Only the page's own markup: one script, two style sheets, no image,
	// no handler, no javascript: URL, and every link a fragment or a
	// sibling report.
	shapes := strings.Count(page, "<rect") + strings.Count(page, "<circle") + strings.Count(page, "<path")
	for tag, want := range map[string]int{"<script": 1, "</script>": 1, "<style": 2, "</style>": 2, "<img": 0, "<title>": 1 + shapes, "<!--": 0, "<textarea": 0} {
		if got := strings.Count(page, tag); got != want {
			t.Errorf("%s occurs %d times, want %d", tag, got, want)
		}
	}
	// Every tag's attributes, read as a browser reads them: no handler,
	// and every link a fragment or a sibling report.
	z := html.NewTokenizer(strings.NewReader(page))
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		tok := z.Token()
		for _, a := range tok.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("<%s> has a handler %s=%q", tok.Data, a.Key, a.Val)
			}
			if a.Key == "href" && !strings.HasPrefix(a.Val, "#") && !strings.HasPrefix(a.Val, "../") {
				t.Errorf("<%s> links to %q", tok.Data, a.Val)
			}
		}
		if tt == html.StartTagToken && tok.Data == "script" && z.Next() == html.TextToken && strings.Contains(string(z.Text()), "pwned") {
			t.Errorf("a script runs the hostile text")
		}
	}
	// The hostile text is shown, escaped, everywhere it was put.
	if n := strings.Count(page, "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;"); n < 8 {
		t.Errorf("the hostile text is shown escaped %d times, want it in the plan path, title, why, restore, block, concern, lost path, gate and diff", n)
	}
}

// TestHTMLThousandTasks: a 1,000-task run's report stays under 5 MB, with
// every task, every bar, and diffs inlined while they fit (folded); the
// rest name the command that prints them.
func TestHTMLThousandTasks(t *testing.T) {
	r := &cache.Run{ID: "r-20251130-090000-1000", PlanPath: "plan.md", PlanSHA256: strings.Repeat("cd", 32), StartedAt: t0}
	f := newRun(t, r)
	j := f.j
	const n = 1000
	x := &Extras{Tasks: map[string]TaskExtras{}}
	long := strings.Repeat("--- FAIL: TestSomething (0.01s)\n    thing_test.go:12: want 1, got 2\n", 200)
	f.must(j.Batch(false, func(b *cache.Journal) error {
		bf := fixture{t, b}
		for i := 1; i <= n; i++ {
			id := fmt.Sprint(i)
			s := float64(i * 60)
			attempts := 1
			if i%10 == 0 { // every tenth task needed a second attempt
				bf.live(r.ID, id, 1, s, s+20, 5000, 800, 0.05, true)
				bf.must(b.PutGate(cache.Gate{RunID: r.ID, TaskID: id, Attempt: 1, Command: "go test ./...", ExitCode: 1,
					Feedback: long, Output: cache.HashBytes([]byte(long)), At: at(s + 25), Duration: 5 * time.Second}))
				attempts = 2
			}
			bf.live(r.ID, id, attempts, s+26, s+50, 5000, 800, 0.05, true)
			out := "ok  \tdemo\t0.01s\n"
			if i%10 == 0 { // and its gate said a lot
				out = long
			}
			bf.must(b.PutGate(cache.Gate{RunID: r.ID, TaskID: id, Attempt: attempts, Command: "go test ./...", Passed: true,
				Feedback: out, Output: cache.HashBytes([]byte(out)), At: at(s + 55), Duration: 5 * time.Second}))
			bf.task(r.ID, id, i, fmt.Sprintf("Task %d: add feature number %d to the demo package", i, i), cache.TaskDone,
				cache.SourceLive, attempts, 55, nil)
			x.Tasks[id] = TaskExtras{Why: []string{id + "/implement~a1 live: " + "fresh run: never ran before"},
				HasEffect: true, Patch: goPatch(fmt.Sprintf("feature%d.go", i), 12, "feature"), PatchSize: 1000}
		}
		return nil
	}))
	f.must(j.FinishRun(r.ID, "DONE", 0, at(n*60+60)))
	rep, err := Build(j, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	page := HTML(rep, x)
	took := time.Since(start)
	t.Logf("1,000 tasks: %d bytes in %v", len(page), took)
	if dir := os.Getenv("IMPLLOOP_HTML_OUT"); dir != "" { // to look at it
		f.must(os.WriteFile(filepath.Join(dir, "thousand.html"), page, 0o644))
	}
	if len(page) >= 5_000_000 {
		t.Fatalf("the report is %d bytes, want under 5 MB", len(page))
	}
	s := string(page)
	if got := strings.Count(s, `<details class="task"`); got != n {
		t.Errorf("%d tasks shown, want %d", got, n)
	}
	if got := strings.Count(s, `<rect class="bar `); got != n+n/10 {
		t.Errorf("%d bars, want %d", got, n+n/10)
	}
	inlined := strings.Count(s, `<details class="diff">`)
	named := strings.Count(s, "not included: the report keeps under")
	if inlined < n/2 || inlined+named != n || strings.Contains(s, `<details class="diff" open>`) {
		t.Errorf("%d diffs inlined (folded), %d named, want at least %d inlined, all folded, the rest named", inlined, named, n/2)
	}
	// Long gate output is cut to its tail, with the path to all of it.
	if !strings.Contains(s, "earlier lines cut; the whole output: <code>"+filepath.Join(j.Dir(), "objects")) {
		t.Error("a long gate output does not name the file that has it all")
	}
}

func TestWriteHTML(t *testing.T) {
	j, _, b := seed(t)
	r, err := Build(j, b)
	if err != nil {
		t.Fatal(err)
	}
	path, err := WriteHTML(j.Dir(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := Paths(j.Dir(), b)
	if path != filepath.Join(filepath.Dir(md), "report.html") {
		t.Errorf("report.html at %s, report.md at %s", path, md)
	}
	got, _ := os.ReadFile(path)
	if !bytes.HasPrefix(got, []byte("<!DOCTYPE html>")) || bytes.Contains(got, []byte("http://")) && !bytes.Contains(got, []byte(`xmlns="http://www.w3.org/2000/svg"`)) {
		t.Errorf("report.html: %.200s", got)
	}
}

// Attempts that overlap in time (a wave's calls, --jobs) get lanes of
// their own; attempts one after the other share lane 0.
func TestAssignLanes(t *testing.T) {
	at := func(s, e int) Attempt {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		from, to := base.Add(time.Duration(s)*time.Second), base.Add(time.Duration(e)*time.Second)
		return Attempt{Start: from, End: to, callStart: from, callEnd: to}
	}
	as := []Attempt{at(0, 1), at(1, 5), at(1, 3), at(2, 4), at(3, 6), at(6, 7)}
	assignLanes(as)
	var got []int
	for _, a := range as {
		got = append(got, a.Lane)
	}
	if fmt.Sprint(got) != "[0 0 1 2 1 0]" {
		t.Errorf("lanes %v, want [0 0 1 2 1 0]", got)
	}
}

// The page a newcomer reads: each task's row on the timeline labelled
// with it; the agent's final message and each earlier failed gate's own
// output; a replay across runs as a note, not a concern; and no rows of
// zeros where the agent reported no usage.
func TestHTMLNewcomerPage(t *testing.T) {
	j, a, _ := seed(t)
	r, err := Build(j, a)
	if err != nil {
		t.Fatal(err)
	}
	r.Tasks[1].Notes = []string{"replayed: run r-1 on box did this task from the same tree"}
	r.Totals.Live = Spend{Units: r.Totals.Live.Units} // an agent that reports no usage
	r.Totals.Saved = Spend{}
	x := &Extras{Tasks: map[string]TaskExtras{
		r.Tasks[1].ID: {FinalMessage: "Done: I wrote cli.go and its test.", FailedGates: []FailedGate{
			{Attempt: 1, Command: "go test ./...", ExitCode: 1, Summary: "--- FAIL: TestCLI (0.00s)", Output: "--- FAIL: TestCLI (0.00s)\nFAIL\n"}}},
	}}
	page := string(HTML(r, x))
	for _, want := range []string{
		`<text class="lane-label" x="6" y="8" dy="16">task ` + r.Tasks[1].ID,
		`data-task="` + r.Tasks[1].ID + `"><text class="lane-label"`,
		`<strong>the agent's final message</strong>`, `Done: I wrote cli.go and its test.`,
		`<details class="failed-gate" data-attempt="1">`, `<span class="summary">--- FAIL: TestCLI (0.00s)</span>`,
		`<ul class="notes"><li>replayed: run r-1 on box did this task from the same tree</li></ul>`,
		`id="no-usage"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in the page", want)
		}
	}
	for _, not := range []string{`<td>tokens in</td>`, `<td>cost</td>`, `guard concerns:</strong></p><ul class="concerns"><li>replayed:`} {
		if strings.Contains(page, not) {
			t.Errorf("%q in the page", not)
		}
	}
	if n := strings.Count(page, `<g class="lane"`); n != len(uniqueTasks(r.Attempts)) {
		t.Errorf("%d timeline rows, want one per task with an attempt (%d)", n, len(uniqueTasks(r.Attempts)))
	}
}
