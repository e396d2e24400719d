//go:build browser

// The HTML report in a real browser: headless Chromium (Debian's chromium,
// installed by scripts/install-chromium.sh) loads the report.html of real
// runs of the real binary, and the test reads the DOM Chromium ends with
// and keeps a screenshot (an artifact, not compared). Run it with `make
// browser` (part of `make e2e`), or
//
//	go test -tags browser -count=1 ./e2e/ -run Browser
//
// IMPLLOOP_SCREENSHOTS=DIR also writes DIR/report.png, the README's picture
// (`make screenshots`).
package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/implloop/implloop/internal/gittest"
)

// pwned is what hostile content sets the page's title to if it runs.
const pwned = "pwned"

// hostileTitle is a task title (and file content, and gate output) that
// would change the page's title if any of it ran.
const hostileTitle = `Break it <img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script></style><a href="javascript:document.title='pwned'">x</a>`

func TestBrowserReport(t *testing.T) {
	chromium := findChromium(t)
	bin := buildImplloop(t)

	t.Run("demo", func(t *testing.T) {
		repo := demoRepo(t)
		run(t, repo, bin, 0, "run", "plan.md", "--agent", "builtin", "--verify", "go test ./...")
		page, doc := loadReport(t, chromium, repo, bin)
		if got := text(find(doc, "title", "")[0]); !strings.HasPrefix(got, "implloop run r-") || !strings.HasSuffix(got, ": DONE 5/5") {
			t.Errorf("title %q", got)
		}
		checkCounts(t, doc, count{"g", "lane", 5}, count{"rect", "bar live", 5}, count{"circle", "gate pass", 5},
			count{"details", "task", 5})
		// Each bar's row is labelled with its task, in plan order.
		var labels []string
		for _, l := range find(doc, "text", "lane-label") {
			labels = append(labels, text(l))
		}
		if want := []string{"task 1 · Count words", "task 2 · Test the word count", "task 3 · Count lines", "task 4 · The wc command",
			"task 5 · Document it"}; strings.Join(labels, "|") != strings.Join(want, "|") {
			t.Errorf("timeline labels %q, want %q", labels, want)
		}
		// The builtin agent's own words, and no rows of zeros for the
		// usage it does not report.
		if msgs := find(doc, "div", "final-message"); len(msgs) != 5 || !strings.Contains(text(msgs[0]), "wrote textstats/words.go") {
			t.Errorf("final messages: %d, want 5, the first naming the file the builtin agent wrote", len(msgs))
		}
		if strings.Contains(text(find(doc, "section", "")[0]), "tokens in") || len(find(doc, "p", "note")) == 0 {
			t.Error("the totals show token rows though the builtin agent reports none")
		}
		var paths []string
		for _, f := range find(doc, "div", "file") {
			paths = append(paths, attr(f, "data-path"))
		}
		if want := "textstats/words.go textstats/words_test.go textstats/lines.go textstats/lines_test.go"; !strings.HasPrefix(strings.Join(paths, " "), want) {
			t.Errorf("diffs of %v, want them to start with %s", paths, want)
		}
		// Highlighted by chroma: Go keywords in their class.
		if len(find(doc, "span", "kd")) == 0 {
			t.Error("no highlighted Go keyword in the diffs")
		}
		screenshot(t, chromium, page, "demo.png", true)
	})

	t.Run("blocked", func(t *testing.T) {
		repo := gittest.New(t)
		repo.Write("plan.md", "# Plan\n\n### Task 1: First\n\nWrite out-1.txt.\n\n### Task 2: "+hostileTitle+"\n\nWrite out-2.txt.\n")
		repo.Git("add", "-A")
		repo.Git("commit", "-q", "-m", "start")
		agent := filepath.Join(t.TempDir(), "agent.sh")
		writeFile(t, agent, "#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '"+strings.ReplaceAll(hostileTitle, "'", `'"'"'`)+"' > \"out-$IMPLLOOP_TASK_ID.txt\"\n", 0o755)
		gate := `if [ "$IMPLLOOP_TASK_ID" = 2 ]; then cat out-2.txt; exit 1; fi`
		run(t, repo, bin, 3, "run", "plan.md", "--agent-cmd", agent, "--verify", gate, "--max-attempts", "2")
		page, doc := loadReport(t, chromium, repo, bin)
		if got := text(find(doc, "title", "")[0]); strings.Contains(got, pwned) || !strings.HasSuffix(got, ": PARTIAL 1/2") {
			t.Errorf("title %q: the hostile content ran, or the verdict is wrong", got)
		}
		// No markup from the task: no <img>, only the page's own script;
		// task 1's bar and task 2's two, their gates, task 2's block.
		checkCounts(t, doc, count{"img", "", 0}, count{"script", "", 1}, count{"rect", "bar live", 3},
			count{"circle", "gate fail", 2}, count{"path", "block", 1}, count{"g", "lane", 2})
		// The hostile title labels task 2's row as text, cut short.
		if labels := find(doc, "text", "lane-label"); len(labels) != 2 || !strings.HasPrefix(text(labels[1]), "task 2 · Break it <img") {
			t.Errorf("timeline labels: task 2's is not its title as text")
		}
		// Task 2's first failed gate, its own output shown; the second is
		// the task's last gate, shown with the block.
		if fg := find(doc, "details", "failed-gate"); len(fg) != 1 || attr(fg[0], "data-attempt") != "1" || !strings.Contains(text(fg[0]), "Break it <img") {
			t.Errorf("failed gates: %d, want attempt 1's with its output as text", len(fg))
		}
		blocked := find(doc, "details", "task")
		if len(blocked) != 2 || attr(blocked[1], "data-status") != "blocked" || !strings.Contains(text(blocked[1]), hostileTitle) {
			t.Errorf("task 2 is not shown blocked with its title as text")
		}
		if files := find(doc, "div", "file"); len(files) != 2 || !strings.Contains(text(files[1]), hostileTitle) {
			t.Errorf("the hostile file content is not shown as text in task 2's diff")
		}
		screenshot(t, chromium, page, "blocked.png", false)
	})
}

func findChromium(t *testing.T) string {
	t.Helper()
	if c := os.Getenv("CHROMIUM"); c != "" {
		return c
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: `make browser` installs it (scripts/install-chromium.sh), or set CHROMIUM")
	return ""
}

// demoRepo is testdata/demo in a new repository, as `make demo` sets it up.
func demoRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	repo := gittest.New(t)
	if err := os.CopyFS(repo.Dir, os.DirFS("../testdata/demo")); err != nil {
		t.Fatal(err)
	}
	repo.Git("add", "-A")
	repo.Git("commit", "-q", "-m", "demo: starting point")
	return repo
}

// run runs implloop in the repository, git isolated but Go's caches the
// developer's (the demo's gate is go test), and checks its exit code.
func run(t *testing.T, repo *gittest.Repo, bin string, code int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repo.Dir
	cmd.Env = repo.Env()
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if err == nil {
			cmd.Env = append(cmd.Env, v+"="+strings.TrimSpace(string(out)))
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if got := cmd.ProcessState.ExitCode(); got != code {
		t.Fatalf("implloop %s: exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, err, code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func chromiumArgs(extra ...string) []string {
	args := []string{"--headless", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars", "--no-first-run",
		"--virtual-time-budget=3000"}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // Chromium refuses root otherwise
	}
	return append(args, extra...)
}

func chromiumRun(t *testing.T, chromium string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, chromiumArgs(args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // its profile
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// dumpDOM is the DOM Chromium ends with after loading the page and
// running its scripts (and any that should not run).
func dumpDOM(t *testing.T, chromium, page string) *html.Node {
	t.Helper()
	out := chromiumRun(t, chromium, "--dump-dom", "file://"+page)
	doc, err := html.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// loadReport rewrites the latest run's report.html with show --html and
// loads it in Chromium: its path and the DOM Chromium ended with, script
// on.
func loadReport(t *testing.T, chromium string, repo *gittest.Repo, bin string) (string, *html.Node) {
	t.Helper()
	page := strings.TrimSpace(run(t, repo, bin, 0, "show", "--html"))
	doc := dumpDOM(t, chromium, page)
	checkJSRan(t, doc)
	return page, doc
}

// count is how many elements named tag with class attribute class ("":
// any) a page should have.
type count struct {
	tag, class string
	want       int
}

func checkCounts(t *testing.T, doc *html.Node, counts ...count) {
	t.Helper()
	for _, c := range counts {
		if n := len(find(doc, c.tag, c.class)); n != c.want {
			t.Errorf("%d <%s class=%q> elements, want %d", n, c.tag, c.class, c.want)
		}
	}
}

// checkJSRan makes the other checks mean something: the page's own script
// ran (it marks <html class="js">), so script was on.
func checkJSRan(t *testing.T, doc *html.Node) {
	t.Helper()
	if h := find(doc, "html", ""); len(h) != 1 || !strings.Contains(" "+attr(h[0], "class")+" ", " js ") {
		t.Fatal("the page's own script did not run: JavaScript is off, and the checks would prove nothing")
	}
}

// screenshot keeps a picture of the page as a test artifact (go test
// -artifacts keeps it), and as the README's when asked.
func screenshot(t *testing.T, chromium, page, name string, readme bool) {
	t.Helper()
	png := filepath.Join(t.ArtifactDir(), name)
	chromiumRun(t, chromium, "--window-size=1200,1500", "--screenshot="+png, "file://"+page)
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %v", png, err)
	}
	t.Logf("screenshot: %s (%d bytes)", png, len(b))
	if dir := os.Getenv("IMPLLOOP_SCREENSHOTS"); dir != "" && readme {
		writeFile(t, filepath.Join(dir, "report.png"), string(b), 0o644)
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// find lists the elements named tag whose class attribute is class ("":
// any), in document order.
func find(n *html.Node, tag, class string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag && (class == "" || attr(n, "class") == class) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// text is the text content of n.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}
