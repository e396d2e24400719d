package plan

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateForms = flag.Bool("update", false, "rewrite the golden files in plan/testdata/forms and testdata/plans/wild")

// formGolden is what a reading golden file records: what a person checks
// when reading the plan themselves.
type formGolden struct {
	Form        Form         `json:"form"`
	Reading     string       `json:"reading"`
	Notes       []string     `json:"notes,omitempty"`
	Diagnostics []string     `json:"diagnostics,omitempty"`
	Trailer     string       `json:"trailer,omitempty"` // its first non-blank line
	Tasks       []goldenTask `json:"tasks"`
}

type goldenTask struct {
	File    string   `json:"file,omitempty"`
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Lines   [2]int   `json:"lines"`
	Checked bool     `json:"checked,omitempty"`
	Status  Status   `json:"status,omitempty"`
	Deps    []string `json:"deps,omitempty"`
	Labels  []string `json:"labels,omitempty"`
}

func goldenOf(p *Plan, ds []Diagnostic) []byte {
	g := formGolden{Form: p.Form, Reading: p.Reading.String(), Notes: p.Reading.Notes, Tasks: []goldenTask{}}
	for _, d := range ds {
		g.Diagnostics = append(g.Diagnostics, d.String())
	}
	for _, l := range strings.Split(p.Trailer, "\n") {
		if strings.TrimSpace(l) != "" {
			g.Trailer = l
			break
		}
	}
	for _, t := range p.Tasks {
		g.Tasks = append(g.Tasks, goldenTask{t.File, t.ID, t.Title, [2]int{t.Line, t.EndLine}, t.Checked, t.Status, t.Deps, t.Labels})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(g); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// compareGoldens parses every plan in dir and compares its reading with
// the .json beside it; -update rewrites them (review the diff by reading
// each plan as a person would).
func compareGoldens(t *testing.T, dir string, minPlans int) {
	t.Helper()
	plans, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	folders, _ := filepath.Glob(filepath.Join(dir, "*", "")) // folder plans: a directory of task files
	for _, f := range folders {
		if fi, err := os.Stat(f); err == nil && fi.IsDir() {
			plans = append(plans, f)
		}
	}
	if len(plans) < minPlans {
		t.Fatalf("%s: %d plans, want at least %d", dir, len(plans), minPlans)
	}
	for _, f := range plans {
		src, err := ReadBytes(f)
		if err != nil {
			t.Fatal(err)
		}
		p, ds := Parse(filepath.Base(f), src)
		checkInvariants(t, src, p)
		got := goldenOf(p, ds)
		golden := strings.TrimSuffix(f, ".md") + ".json"
		if *updateForms {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%s: %v (go test ./plan -run %s -update)", f, err, t.Name())
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: reading differs from %s (rerun with -update and review the diff):\n%s", f, golden, got)
		}
	}
}

// TestFormGoldens covers the conventions of issue 14, one small plan each.
func TestFormGoldens(t *testing.T) {
	t.Parallel()
	compareGoldens(t, filepath.Join("testdata", "forms"), 20)
}

// TestWildPlans reads real plans from public repositories (see
// testdata/plans/wild/SOURCES) and compares each reading with the golden
// file a person reviewed.
func TestWildPlans(t *testing.T) {
	t.Parallel()
	compareGoldens(t, filepath.Join("..", "testdata", "plans", "wild"), 69)
}
