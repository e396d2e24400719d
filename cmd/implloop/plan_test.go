package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/plans/golden/*.json from `implloop plan --json`")

func testIO() (*ioStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &ioStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

// TestPlanGolden compares `implloop plan --json` on every example plan with
// its golden file; -update rewrites them (review the diff by eye: every
// plan must parse to the tasks a person would count).
func TestPlanGolden(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	plans, err := filepath.Glob("testdata/plans/*.md")
	if err != nil || len(plans) == 0 {
		t.Fatalf("no example plans: %v", err)
	}
	want := map[string]bool{}
	for _, p := range plans {
		io, out, errOut := testIO()
		if code := run([]string{"plan", "--json", p}, io); code != 0 || errOut.Len() != 0 {
			t.Errorf("implloop plan --json %s: exit %d, stderr %q", p, code, errOut)
			continue
		}
		golden := filepath.Join("testdata", "plans", "golden", strings.TrimSuffix(filepath.Base(p), ".md")+".json")
		want[golden] = true
		if *updateGolden {
			if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		g, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%s: %v (run go test ./cmd/implloop -run TestPlanGolden -update)", p, err)
			continue
		}
		if !bytes.Equal(g, out.Bytes()) {
			t.Errorf("%s: output differs from %s (rerun with -update and review the diff):\n%s", p, golden, out.String())
		}
	}
	goldens, _ := filepath.Glob("testdata/plans/golden/*.json")
	for _, g := range goldens {
		if !want[g] {
			t.Errorf("%s has no plan in testdata/plans", g)
		}
	}
}

func TestPlanFlags(t *testing.T) {
	t.Parallel()
	io, _, _ := testIO()
	var got *planOptions
	cmd := newPlanCmdWith(io, func(o *planOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--json", "--task-range", "T010:T013", "plan.md"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.path != "plan.md" || !got.json || got.taskRange != "T010:T013" {
		t.Fatalf("options %+v", got)
	}
}

func TestLintFlags(t *testing.T) {
	t.Parallel()
	io, _, _ := testIO()
	var got *lintOptions
	cmd := newLintCmdWith(io, func(o *lintOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--strict", "a.md", "b.md"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.strict || strings.Join(got.paths, ",") != "a.md,b.md" {
		t.Fatalf("options %+v", got)
	}
}
