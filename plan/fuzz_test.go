package plan

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic and that every parse
// keeps the span invariants: inside the file, in source order, never
// overlapping, text byte-exact. The seeds are the example and broken plans
// and a few shapes that are easy to get wrong.
func FuzzParse(f *testing.F) {
	addFileSeeds(f, filepath.Join("..", "testdata", "plans", "*.md"), filepath.Join("..", "testdata", "plans", "broken", "*.md"))
	addSeeds(f,
		"",
		"- [ ]",
		"- [ ]*",
		"- [x] 1.\n  - [ ] 1.1\n",
		"### Task 1\n### Task 1\n",
		"Task 1\n---\n",
		"---\n---\n",
		"---\nx: [\n---\n- [ ] a\n",
		"\xEF\xBB\xBF---\ntitle: x\n---\n- [ ] a\r\n",
		"## Task 1: a\r\n\r\nDepends on: 1, 2\r\n",
		"> ### Task 1\n- [ ] a\n",
		"```\n### Task 1\n",
		"1. [ ] ordered\n",
		"- [ ] a\n[ref]: /url\n",
		"## Task 1: a\n\n```verify\n```\n```verify\nx\n```\n",
		"- [ ] `t-1` a → depends: t-1\n",
		"# Fix\n\n## Changes\n\nx\n",
	)
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) < 1<<16 {
			assertSameStructure(t, src)
		}
		p, ds := Parse("fuzz.md", src)
		checkInvariants(t, src, p)
		for _, d := range ds {
			if d.Message == "" || d.Line < 0 || d.Col < 0 {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		if len(p.Tasks) == 0 && len(src) <= MaxSize && !HasErrors(ds) {
			t.Fatalf("no tasks and no error")
		}
	})
}

// FuzzForms runs every reader, forced in turn, on the same input: each
// must keep the span invariants, and a forced form that finds nothing
// must say so. The seeds are the small plans of each convention.
func FuzzForms(f *testing.F) {
	addFileSeeds(f, filepath.Join("testdata", "forms", "*.md"))
	addSeeds(f,
		"<task>\n",
		"<task id=\"a\">x</task>\n<task>",
		"| ID | T |\n|--|--|\n| 1 | a |\n| 1 | b |\n",
		"| # |\n|-|\n| S1 |\n",
		"---\ntodos:\n  - id: a\n  - 3\n  - id: a\n---\n",
		"---\ntodos: []\nform: todos\n---\n",
		"## Tasks\n1. a\n\n```\n2. b\n```\n3. c\n",
		"### 1. a\n### 1.1 b\n## Phase 2\n",
		"#### [ ] x\n#### [x]\n",
		"- [ ] 1. a\n- [ ] 1.1 b\n- [ ] 1.1.1 c\n- [ ] 10 d\n",
		"```markdown\n```bash\n```\n```\n",
		"- [ ] `a-1` x\n- [ ] `a-2` y → depends: a-1\n  - [ ] `a-2.1` z\n- [ ] `a-2.2` -> depends: a-2, b\n",
		"- [ ] `\n- [ ] ``\n- [ ] `a-1\n- [ ] `a-1`→ depends:\n",
		"# Fix: x\n\n## Problem\n\ny\n\n## Fix\n\n### Changes to `z`\n\nw\n",
		"## Fix\n",
		"\n\n---\n",
		// Issue 31's readers: status marks, languages, yaml task lists,
		// bold-id bullets, lookalike sections, folder bundles.
		"- [~] 1. a\n- [-] 2. b\n- [/] 3\n- [~]\n",
		"### ✅ **Task 1:** a\n### 🚧 Task 2 b ⏳\n### ❌\n",
		"### 任务 1.1: 创建\n**依赖**: 无\n### 任务 1.2: 实现\n**工作量**: 半天 | **依赖**: Task 1.1\n",
		"```yaml\nTask 1:\nMODIFY a:\nTask 2: b\n  - x\nTask 2:\n```\n",
		"```yaml\nTask 1:\n",
		"- **1.1** ✅ a\n- Files: x\n- **1.2** b\n- Depends: 1.1\n- **1.2**\n",
		"## Implementation Plan\n### Phase 1: a\n## Step by Step Tasks\n### 1. b\n### c\n### 1. d\n",
		"## 1. A\n#### 1) x\n#### 2) y\n## 2. B\n#### 1) z\n",
		"| ID | Tarea | Depende de | Completed |\n|---|---|---|---|\n| TASK-001 | a | ✅ | Yes |\n| TASK-002 | b | TASK-001 | ❌ |\n",
		"- [ ] [#13](u) - a (parallel: true, 2h)\n- [ ] #14 - \"b\" (parallel: false)\n",
		// Dependency ranges, dotted spec ids, icons before section labels.
		"- **1.1** a\n- **Dependencias**: Tareas 1.1 a 9.9\n- **1.2** b\n- Depends on: tasks 1 to 1.1, 3 a\n",
		"- [ ] **T1.1**: a\n- [ ] **T1.1.2** b\n- [ ] T9.: c\n",
		"---\nform: sections\n---\n## 🔧 Phase 1\n- [ ] a\n## 🔄 Phase 2\n- [x] b\n## ✅ 3. c\n",
		"\x00implloop folder plan v1\n\x00file epic.md 3\nabc\n\x00file 1.md 9\n---\nx: [\n\n\x00file 2.md 2\nhi\n",
		"\x00implloop folder plan v1\n\x00file a 99\n",
		"\x00implloop folder plan v1\n\x00file 1.md -1\n",
	)
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, form := range append([]Form{FormNone}, Forms...) {
			p, ds := ParseWith("fuzz.md", src, Options{Form: form})
			checkInvariants(t, src, p)
			if len(p.Tasks) == 0 && len(src) <= MaxSize && !HasErrors(ds) {
				t.Fatalf("form %q: no tasks and no error", form)
			}
			if form != FormNone && len(p.Tasks) > 0 && p.Form != form && !IsBundle(src) { // a folder's files are read one task each, whatever the form
				t.Fatalf("forced form %q, read as %q", form, p.Form)
			}
		}
	})
}

// addFileSeeds adds the files matching each pattern to f's corpus.
func addFileSeeds(f *testing.F, patterns ...string) {
	for _, pattern := range patterns {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
}

// addSeeds adds each string to f's corpus.
func addSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
}
