package loop

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/gittest"
)

// Preview of bytes must say exactly what a dry run of the same bytes on
// disk says: watch and check rely on it to tell what a resume will do.
func TestPreviewMatchesDryRun(t *testing.T) {
	t.Parallel()
	r := gittest.New(t)
	dir := r.Dir
	task := func(n, file, verify string) string {
		return "### Task " + n + ": T" + n + "\n\n```text path=" + file + "\n" + n + "\n```\n\n```verify\n" + verify + "\n```\n\n"
	}
	base := "# Plan\n\n" + task("1", "a.txt", "test -f a.txt") + task("2", "b.txt", "test -f c.txt") + task("3", "d.txt", "true")
	planPath := r.Path("plan.md")
	r.Write("plan.md", base)
	r.Commit("plan")

	s := DefaultSettings()
	s.Plan, s.Agent, s.MaxAttempts = "plan.md", "builtin", 1
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: dir})
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != "PARTIAL" {
		t.Fatalf("verdict %s, want PARTIAL", out.Verdict)
	}
	parent := out.RunID

	for name, src := range map[string]string{
		"unchanged":     base,
		"task 1 edited": strings.Replace(base, "path=a.txt\n1", "path=a.txt\none", 1),
		"preamble":      strings.Replace(base, "# Plan\n", "# Plan\n\nContext.\n", 1),
		"task 2 fixed":  strings.Replace(base, "path=b.txt", "path=c.txt", 1),
		"CRLF":          strings.ReplaceAll(base, "\n", "\r\n"),
	} {
		if err := os.WriteFile(planPath, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		dry, err := Run(context.Background(), Options{Settings: s, RepoRoot: dir, Parent: parent, DryRun: true})
		if err != nil {
			t.Fatalf("%s: dry run: %v", name, err)
		}
		// The file on disk now says something else: Preview must not read it.
		if err := os.WriteFile(planPath, []byte("# nothing\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		pv, err := Preview(Options{Settings: s, RepoRoot: dir, Parent: parent}, []byte(src))
		if err != nil {
			t.Fatalf("%s: preview: %v", name, err)
		}
		if !reflect.DeepEqual(pv.Plan, dry.Plan) || pv.ParentVerdict != dry.ParentVerdict {
			t.Errorf("%s: preview %+v\ndry run %+v", name, pv.Plan, dry.Plan)
		}
	}

	if _, err := Preview(Options{Settings: s, RepoRoot: dir, Parent: parent}, []byte("# no tasks\n")); err == nil {
		t.Error("a plan with no tasks previewed without error")
	} else if _, ok := err.(*PlanError); !ok {
		t.Errorf("a plan with no tasks: %T %v, want a *PlanError", err, err)
	}
}
