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
	benchmarkParse(b, genChecklist(5000, 2090), FormChecklist, 5000)
}

// genRepeated builds a plan of n tasks: head, then for each task what
// open writes, filler repeated until the task is about size bytes, and
// what close writes.
func genRepeated(head string, n, size int, open func(b *strings.Builder, i int), filler string, close func(b *strings.Builder, i int)) []byte {
	var b strings.Builder
	b.Grow(n * (size + 200))
	b.WriteString(head)
	for i := 1; i <= n; i++ {
		start := b.Len()
		open(&b, i)
		for b.Len()-start < size {
			b.WriteString(filler)
		}
		close(&b, i)
	}
	return []byte(b.String())
}

// genNumbered builds a numbered-list plan under a "## Tasks" heading: n
// items with a bold title, indented prose and code, about size bytes each.
func genNumbered(n, size int) []byte {
	return genRepeated("# Plan\n\nContext.\n\n## Tasks\n\n", n, size,
		func(b *strings.Builder, i int) { fmt.Fprintf(b, "%d. **Component number %d**\n", i, i) },
		"   Edit `internal/c/c.go` so that the handler validates its input and returns a typed error.\n\n"+
			"   ```go\n   func Thing() error { return nil }\n   ```\n\n",
		func(*strings.Builder, int) {})
}

// genSections builds a plan of numbered headings ("### 12.1 — Title"), each
// ending in a status checkbox: the reading that must give way.
func genSections(n, size int) []byte {
	return genRepeated("# Fixes\n\n", n, size,
		func(b *strings.Builder, i int) { fmt.Fprintf(b, "### %d.%d — Fix number %d\n\n", i/10+1, i%10+1, i) },
		"Handle a trailing comma in `parseArgs` (`cmd/parse.go`) and add a test for it, with the CRLF fixture.\n\n",
		func(b *strings.Builder, i int) { fmt.Fprintf(b, "- [x] **%d.%d COMPLETE**\n\n", i/10+1, i%10+1) })
}

// genTable builds a table of n stories with a Depends column.
func genTable(n int) []byte {
	var b strings.Builder
	b.WriteString("# Stories\n\n| ID | Story | Role | Depends |\n|----|-------|------|---------|\n")
	b.WriteString("| S00001 | The first story | Developer | none |\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "| **S%05d** | Story number %d: the protocol view shows every message with its timing, sender and the decoded payload, %s | Developer | S%05d |\n", i, i, strings.Repeat("x", 70), max(i-1, 1))
	}
	return []byte(b.String())
}

// genXML builds n <task> blocks of about size bytes, in the shape GSD
// planners write them: tags on their own lines, an <action> of paragraphs
// and numbered steps separated by blank lines (so that, as in real plans,
// most of the text is markdown between HTML lines).
func genXML(n, size int) []byte {
	src := genRepeated("# Phase 1\n\n<tasks>\n\n", n, size,
		func(b *strings.Builder, i int) {
			fmt.Fprintf(b, "<task type=\"auto\">\n  <name>Task %d: Component %d</name>\n  <files>src/api/c%d.ts</files>\n  <action>\n", i, i, i)
		},
		"Add the handler in `src/api/thing.ts`; validate the body and return 400 on a bad field.\n\n"+
			"1. **Parse** the request with `zod` and keep the schema next to the route.\n2. Return the created row as JSON.\n\n",
		func(b *strings.Builder, _ int) {
			b.WriteString("  </action>\n  <verify>npm test -- thing</verify>\n</task>\n\n")
		})
	return append(src, "</tasks>\n"...)
}

// The new forms, each against goldmark+GFM on the same bytes.
func BenchmarkParseNumbered(b *testing.B) {
	benchmarkParse(b, genNumbered(5000, 2090), FormNumbered, 5000)
}
func BenchmarkParseSections(b *testing.B) {
	benchmarkParse(b, genSections(5000, 2090), FormSections, 5000)
}
func BenchmarkParseTable(b *testing.B) { benchmarkParse(b, genTable(50000), FormTable, 50000) }
func BenchmarkParseXML(b *testing.B)   { benchmarkParse(b, genXML(5000, 2090), FormXML, 5000) }

// BenchmarkParse parses a generated 10 MiB, 5,000-task plan. MB/s is the
// figure to watch (target: at least 50); x-goldmark-gfm is how many times
// faster Parse is than a plain goldmark parse of the same bytes with the
// GFM extensions, timed in the same run so that a busy machine slows both.
func BenchmarkParse(b *testing.B) {
	benchmarkParse(b, genPlan(5000, 2090), FormHeadings, 5000)
}

func benchmarkParse(b *testing.B, src []byte, form Form, tasks int) {
	if len(src) < 10<<20 {
		b.Fatalf("generated plan is %d bytes, want at least 10 MiB", len(src))
	}
	p, ds := Parse("bench.md", src)
	if len(p.Tasks) != tasks || p.Form != form || HasErrors(ds) {
		b.Fatalf("generated plan: %d tasks in form %q, diagnostics %v", len(p.Tasks), p.Form, ds[:min(len(ds), 5)])
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

// The readers of issue 31, each against goldmark+GFM on the same bytes.

// genBullets builds n bold-id bullets ("- **12.3** ✅ Title") with their
// detail bullets.
func genBullets(n, size int) []byte {
	return genRepeated("# Steps\n\n## Slice 1\n\n", n, size,
		func(b *strings.Builder, i int) { fmt.Fprintf(b, "- **%d.%d** ✅ Step number %d\n", i/10+1, i%10, i) },
		"- Files: `internal/c/c.go`, `internal/c/c_test.go`, and the handler that validates its input\n",
		func(*strings.Builder, int) {})
}

// genYAML builds a PRP in the shape the PRP template gives: a yaml block
// listing n tasks (a fifth of the bytes), then per-task pseudocode
// sections of prose and code. (A plan that is nothing but one 10 MiB
// yaml block parses about three times slower than goldmark, which does
// next to nothing per byte of a fenced block, while implloop hashes,
// checks UTF-8 and keeps every byte.)
func genYAML(n, size int) []byte {
	var b strings.Builder
	b.Grow(n * (size + 200))
	b.WriteString("# PRP\n\n## Goal\n\nRetry everything.\n\n### list of tasks to be completed\n\n```yaml\n")
	for i := 1; i <= n; i++ {
		start := b.Len()
		fmt.Fprintf(&b, "Task %d:\nMODIFY src/module_%d.py:\n", i, i)
		for b.Len()-start < size/5 {
			b.WriteString("  - FIND pattern: \"class OldImplementation\" and INJECT the new handler after it\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("```\n\n### Per task pseudocode\n\n")
	for i := 1; i <= n; i++ {
		start := b.Len()
		fmt.Fprintf(&b, "#### Pseudocode for module_%d.py\n\n", i)
		for b.Len()-start < size*4/5 {
			b.WriteString("The handler validates its input and returns a typed error; keep the schema next to the route.\n\n```python\ndef handle(req):\n    return validate(req)\n```\n\n")
		}
	}
	return []byte(b.String())
}

// genSteps builds a TAC/ADW plan: an overview of phases, then n numbered
// headings under "## Step by Step Tasks".
func genSteps(n, size int) []byte {
	return genRepeated("# Feature: generated\n\n## Implementation Plan\n\n### Phase 1: Foundation\n\nx\n\n### Phase 2: Core\n\ny\n\n## Step by Step Tasks\n\n", n, size,
		func(b *strings.Builder, i int) { fmt.Fprintf(b, "### %d. Create component number %d\n\n", i, i) },
		"- Edit `internal/c/c.go` so that the handler validates its input and returns a typed error.\n",
		func(b *strings.Builder, _ int) { b.WriteString("\n") })
}

func BenchmarkParseBullets(b *testing.B) {
	benchmarkParse(b, genBullets(5000, 2090), FormBullets, 5000)
}
func BenchmarkParseYAML(b *testing.B) { benchmarkParse(b, genYAML(5000, 2090), FormYAML, 5000) }
func BenchmarkParseSteps(b *testing.B) {
	benchmarkParse(b, genSteps(5000, 2090), FormSections, 5000)
}
