package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// contextFor is a minimal attached context holding the task text.
func contextFor(t testing.TB, text string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"task": map[string]any{"id": "1", "text": text}, "attempt": 1})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func runBuiltin(t *testing.T, repo, text string) (Result, error) {
	t.Helper()
	a, err := New("builtin", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a.Run(context.Background(), Request{Dir: repo, Context: contextFor(t, text), Prompt: []byte("ignored")})
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// demoTasks splits testdata/demo/plan.md at its task headings.
func demoTasks(t *testing.T) []string {
	t.Helper()
	plan := readFile(t, filepath.Join("..", "testdata", "demo", "plan.md"))
	starts := regexp.MustCompile(`(?m)^### Task \d+`).FindAllStringIndex(plan, -1)
	if len(starts) != 5 {
		t.Fatalf("demo plan has %d tasks, want 5", len(starts))
	}
	var tasks []string
	for i, s := range starts {
		end := len(plan)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		tasks = append(tasks, plan[s[0]:end])
	}
	return tasks
}

// The builtin agent carries out the demo plan: the files it writes are the
// plan's blocks byte for byte, and the result builds and passes its tests.
func TestBuiltinDemoPlan(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module example.com/textstats\n\ngo 1.21\n"), 0o644)
	for i, task := range demoTasks(t) {
		res, err := runBuiltin(t, repo, task)
		if err != nil {
			t.Fatalf("task %d: %v", i+1, err)
		}
		if res.ExitCode != 0 || res.IsError || res.InputTokens+res.OutputTokens != 0 || res.CostUSD != 0 {
			t.Fatalf("task %d: %+v", i+1, res)
		}
	}
	words := readFile(t, filepath.Join(repo, "textstats", "words.go"))
	if !strings.HasPrefix(words, "// Package textstats counts words and lines in text.\n") || !strings.HasSuffix(words, "\treturn len(strings.Fields(s))\n}\n") {
		t.Errorf("words.go = %q", words)
	}
	if got := readFile(t, filepath.Join(repo, "README.md")); got != "# textstats\n\nCounts words and lines. `go run ./cmd/wc < file.txt` prints both.\n" {
		t.Errorf("README.md = %q", got)
	}
	for _, f := range []string{"textstats/words_test.go", "textstats/lines.go", "textstats/lines_test.go", "cmd/wc/main.go"} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			t.Error(err)
		}
	}
	if testing.Short() {
		return
	}
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test in the demo repo: %v\n%s", err, out)
	}
}

func TestBuiltinReadsThePromptContext(t *testing.T) {
	repo := t.TempDir()
	text := "### Task 1: X\n\n```go path=a.go\npackage a\n```\n"
	ctx := contextFor(t, text)
	prompt := append([]byte("Instructions.\n\n````json\n"), ctx...)
	prompt = append(prompt, "\n````\n"...)
	a, _ := New("builtin", Options{})
	if _, err := a.Run(context.Background(), Request{Dir: repo, Prompt: prompt}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(repo, "a.go")); got != "package a\n" {
		t.Errorf("a.go = %q", got)
	}
}

func TestBuiltinDeleteAndModes(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "old.txt"), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(repo, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	text := "### Task 1\n\n- step one:\n\n  ```sh path=\"run.sh\"\n  #!/bin/sh\n  echo hi\n  ```\n\n" +
		"```text delete=old.txt\n```\n\n```text delete=never-existed.txt\n```\n\n```go\nnot a file block\n```\n"
	res, err := runBuiltin(t, repo, text)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "old.txt")); !os.IsNotExist(err) {
		t.Errorf("old.txt still there: %v", err)
	}
	if got := readFile(t, filepath.Join(repo, "run.sh")); got != "#!/bin/sh\necho hi\n" {
		t.Errorf("run.sh = %q (the list item's indentation must be stripped)", got)
	}
	if fi, _ := os.Stat(filepath.Join(repo, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh lost its mode: %v", fi.Mode())
	}
	if !strings.Contains(res.Text, "wrote run.sh") || !strings.Contains(res.Text, "deleted old.txt") {
		t.Errorf("text = %q", res.Text)
	}
}

func TestBuiltinNothingToDo(t *testing.T) {
	res, err := runBuiltin(t, t.TempDir(), "### Task 1: Think hard\n\nNo files here.\n")
	if err != nil || res.ExitCode != 1 || !res.IsError || !strings.Contains(res.Text, "path=") {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestBuiltinRefusals(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct{ name, block, want string }{
		{"absolute", "```go path=/etc/x.go\nx\n```", "absolute"},
		{"dotdot", "```go path=../x.go\nx\n```", ".."},
		{"dotdot inside", "```go path=a/../../x.go\nx\n```", ".."},
		{"delete dotdot", "```text delete=../x\n```", ".."},
		{"git", "```text path=.git/hooks/pre-commit\nx\n```", ".git"},
		{"implloop", "```text delete=.implloop/state.db\n```", ".implloop"},
		{"dir symlink", "```go path=out/x.go\nx\n```", "leaves the repository"},
		{"file symlink", "```go path=link.go\nx\n```", "leaves the repository"},
		{"symlink into git", "```text path=g/config\nx\n```", ".git"},
		{"root", "```text path=.\nx\n```", "root"},
		{"both", "```text path=a delete=b\n```", "both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			os.Mkdir(filepath.Join(repo, ".git"), 0o755)
			os.Symlink(outside, filepath.Join(repo, "out"))
			os.Symlink(filepath.Join(outside, "victim.go"), filepath.Join(repo, "link.go"))
			os.Symlink(".git", filepath.Join(repo, "g"))
			// A good block before the bad one: nothing is written at all.
			text := "### Task 1\n\n```go path=good.go\npackage good\n```\n\n" + tc.block + "\n"
			_, err := runBuiltin(t, repo, text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(repo, "good.go")); !os.IsNotExist(err) {
				t.Errorf("good.go was written before the refusal")
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("wrote outside the repository: %v", entries)
			}
		})
	}
}

// Symlinks that stay inside the repository are followed.
func TestBuiltinSymlinkInside(t *testing.T) {
	repo := t.TempDir()
	os.Mkdir(filepath.Join(repo, "real"), 0o755)
	os.Symlink("real", filepath.Join(repo, "alias"))
	os.WriteFile(filepath.Join(repo, "real", "t.txt"), []byte("old"), 0o644)
	os.Symlink(filepath.Join("real", "t.txt"), filepath.Join(repo, "t-link"))
	os.Symlink(filepath.Join(repo, "real", "later.txt"), filepath.Join(repo, "dangling"))
	if _, err := runBuiltin(t, repo, "```text path=alias/new.txt\nnew\n```\n\n```text path=t-link\nvia link\n```\n\n```text path=dangling\nlater\n```\n"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(repo, "real", "later.txt")); got != "later\n" {
		t.Errorf("later.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(repo, "real", "new.txt")); got != "new\n" {
		t.Errorf("new.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(repo, "real", "t.txt")); got != "via link\n" {
		t.Errorf("t.txt = %q", got)
	}
	// Deleting a symlink removes the link, not its target.
	if _, err := runBuiltin(t, repo, "```text delete=t-link\n```\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(repo, "t-link")); !os.IsNotExist(err) {
		t.Errorf("t-link still there")
	}
	if _, err := os.Stat(filepath.Join(repo, "real", "t.txt")); err != nil {
		t.Errorf("the link's target went too: %v", err)
	}
}

func TestBuiltinNeedsContext(t *testing.T) {
	a, _ := New("builtin", Options{})
	_, err := a.Run(context.Background(), Request{Dir: t.TempDir(), Prompt: []byte("just prose")})
	if err == nil || !strings.Contains(err.Error(), "context") {
		t.Fatalf("err = %v", err)
	}
	_, err = a.Run(context.Background(), Request{Dir: t.TempDir(), Context: []byte(`{"task":{}}`)})
	if err == nil || !strings.Contains(err.Error(), "task.text") {
		t.Fatalf("err = %v", err)
	}
	if !bytes.Equal(promptContext([]byte("x\n```json\n{}\n```\n")), []byte("{}\n")) {
		t.Errorf("promptContext")
	}
}
