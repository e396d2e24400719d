package scaffold

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/implloop/implloop/plan"
)

// The gate is guessed from the files at the root, in a fixed order.
func TestDetect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		files map[string]string
		kind  string
		gate  string
	}{
		{"go", map[string]string{"go.mod": "module x\n", "package.json": `{"scripts":{"test":"jest"}}`}, "go", "go test ./..."},
		{"rust", map[string]string{"Cargo.toml": "[package]\n"}, "rust", "cargo test"},
		{"node", map[string]string{"package.json": `{"scripts":{"test":"jest"}}`}, "node", "npm test"},
		{"node, npm init's script", map[string]string{"package.json": `{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`}, "", ""},
		{"python", map[string]string{"pyproject.toml": "[project]\n"}, "python", "pytest"},
		{"make", map[string]string{"Makefile": "all:\n\ttrue\ntest: all\n\ttrue\n"}, "make", "make test"},
		{"make without test", map[string]string{"Makefile": "all:\n\ttrue\n"}, "", ""},
		{"nothing", map[string]string{"README.md": "# x\n"}, "", ""},
		{"a directory named go.mod", map[string]string{"go.mod/x": ""}, "", ""},
	} {
		dir := t.TempDir()
		for name, content := range c.files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := Detect(dir); got.Kind != c.kind || got.Gate != c.gate || (c.gate != "") != (got.Why != "") {
			t.Errorf("%s: %+v, want kind %q gate %q", c.name, got, c.kind, c.gate)
		}
	}
}

// Every kind's sample is a clean plan of three task headings, task 3
// depending on the first two, every task fully specified (a fenced
// path= block under implloop-example/), the gate in the front matter.
func TestPlanLintsClean(t *testing.T) {
	t.Parallel()
	block := regexp.MustCompile("(?m)^```\\w+ path=(\\S+)$")
	for _, p := range []Project{{}, {Kind: "go", Gate: "go test ./...", Why: "go.mod"}, {Kind: "python", Gate: "pytest", Why: "pyproject.toml"},
		{Kind: "rust", Gate: "cargo test", Why: "Cargo.toml"}, {Kind: "node", Gate: "npm test", Why: "package.json"}} {
		src := Plan(p)
		pl, diags := plan.Parse("plan.md", src)
		if len(diags) > 0 || pl == nil {
			t.Fatalf("%q: diagnostics %v", p.Kind, diags)
		}
		if pl.Form != plan.FormHeadings || len(pl.Tasks) != TaskCount {
			t.Fatalf("%q: form %v, %d tasks", p.Kind, pl.Form, len(pl.Tasks))
		}
		if got := strings.Join(pl.Tasks[2].Deps, ","); got != "1,2" {
			t.Errorf("%q: task 3 depends on %q", p.Kind, got)
		}
		if got, _ := pl.FrontMatter["verify"].(string); got != p.Gate {
			t.Errorf("%q: front matter verify %q, want %q", p.Kind, got, p.Gate)
		}
		for _, tk := range pl.Tasks {
			m := block.FindAllStringSubmatch(tk.Text, -1)
			if len(m) == 0 {
				t.Errorf("%q: task %s has no path= block", p.Kind, tk.ID)
			}
			for _, b := range m {
				if !strings.HasPrefix(b[1], Dir+"/") {
					t.Errorf("%q: task %s writes %s, outside %s/", p.Kind, tk.ID, b[1], Dir)
				}
			}
		}
	}
}

// The Python sample's test passes under pytest, where pytest is here.
func TestPythonSamplePasses(t *testing.T) {
	if _, err := exec.LookPath("pytest"); err != nil {
		t.Skip("pytest is not installed")
	}
	dir := t.TempDir()
	src := string(Plan(Project{Kind: "python", Gate: "pytest", Why: "pyproject.toml"}))
	files := regexp.MustCompile("(?ms)^```python path=(\\S+)\n(.*?)^```$").FindAllStringSubmatch(src, -1)
	for _, f := range files {
		p := filepath.Join(dir, f[1])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f[2]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("pytest", "-q")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
}
