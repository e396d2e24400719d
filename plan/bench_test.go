package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// genPlan builds a heading-form plan of n tasks, each about size bytes, in
// the shape of a superpowers plan: a Files list, checkbox steps, fenced
// code, prose and a dependency line.
func genPlan(n, size int) []byte {
	var b strings.Builder
	b.Grow(n * (size + 200))
	b.WriteString("# Generated plan\n\n**Goal:** exercise the parser.\n\n---\n\n")
	for i := 1; i <= n; i++ {
		start := b.Len()
		fmt.Fprintf(&b, "### Task %d: Component number %d\n\n", i, i)
		fmt.Fprintf(&b, "**Files:**\n- Create: `internal/c%d/c.go`\n- Test: `internal/c%d/c_test.go`\n\n", i, i)
		if i > 1 {
			fmt.Fprintf(&b, "Depends on: %d\n\n", i-1)
		}
		for step := 1; b.Len()-start < size; step++ {
			fmt.Fprintf(&b, "- [ ] **Step %d: Write the failing test**\n\n", step)
			b.WriteString("```go\nfunc TestThing(t *testing.T) {\n\tgot := Thing(\"input\")\n\tif got != \"want\" {\n\t\tt.Fatalf(\"Thing() = %q, want %q\", got, \"want\")\n\t}\n}\n```\n\n")
			b.WriteString("Run: `go test ./internal/... -run TestThing -v` and check that it fails with\n\"undefined: Thing\", then write the *minimal* implementation and run it again.\n\n")
		}
		b.WriteString("---\n\n")
	}
	return []byte(b.String())
}

// genChecklist builds a Kiro-style checklist plan of n tasks, each about
// size bytes: a numbered item with nested subtasks and detail bullets.
func genChecklist(n, size int) []byte {
	var b strings.Builder
	b.Grow(n * (size + 200))
	b.WriteString("# Implementation Plan\n\n")
	for i := 1; i <= n; i++ {
		start := b.Len()
		fmt.Fprintf(&b, "- [ ] %d. Implement component number %d\n", i, i)
		for sub := 1; b.Len()-start < size; sub++ {
			fmt.Fprintf(&b, "  - [ ] %d.%d Write the handler for case %d\n", i, sub, sub)
			b.WriteString("    - Validate the input and return a typed error for every bad field\n")
			b.WriteString("    - Cover the happy path and two failure paths in `handler_test.go`\n")
			fmt.Fprintf(&b, "    - _Requirements: %d.1, %d.2_\n", i, i)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// BenchmarkParseChecklist is BenchmarkParse for the checklist form.
func BenchmarkParseChecklist(b *testing.B) {
	benchmarkParse(b, genChecklist(5000, 2090))
}

// BenchmarkParse parses a generated 10 MiB, 5,000-task plan. MB/s is the
// figure to watch (target: at least 50); x-goldmark-gfm is how many times
// faster Parse is than a plain goldmark parse of the same bytes with the
// GFM extensions, timed in the same run so that a busy machine slows both.
func BenchmarkParse(b *testing.B) {
	benchmarkParse(b, genPlan(5000, 2090))
}

func benchmarkParse(b *testing.B, src []byte) {
	if len(src) < 10<<20 {
		b.Fatalf("generated plan is %d bytes, want at least 10 MiB", len(src))
	}
	p, ds := Parse("bench.md", src)
	if len(p.Tasks) != 5000 || HasErrors(ds) {
		b.Fatalf("generated plan: %d tasks, diagnostics %v", len(p.Tasks), ds)
	}
	ref := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()
	var ours, theirs time.Duration
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		Parse("bench.md", src)
		ours += time.Since(t0)

		b.StopTimer()
		t0 = time.Now()
		ref.Parse(text.NewReader(src))
		theirs += time.Since(t0)
		b.StartTimer()
	}
	b.ReportMetric(float64(theirs)/float64(ours), "x-goldmark-gfm")
}
