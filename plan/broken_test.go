package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantBroken is every diagnostic of every plan in testdata/plans/broken,
// with the directory left out of the path.
var wantBroken = map[string][]string{
	"binary.md": {
		"binary.md:4:1: error: binary file (NUL byte): a plan is UTF-8 markdown text",
	},
	"cycle.md": {
		"cycle.md:3:1: error: dependency cycle: 1 -> 3 -> 2 -> 1",
		"cycle.md:5:13: warning: task 1 depends on task 3, which comes later in the plan (tasks run in plan order)",
		"cycle.md:17:13: error: dependency cycle: task 4 depends on itself",
	},
	"duplicate-id.md": {
		"duplicate-id.md:11:1: error: duplicate task id \"10\" (first at line 3)",
	},
	"empty-heading-task.md": {
		"empty-heading-task.md:7:1: error: task 2 is empty: it has neither a title nor a body",
		"empty-heading-task.md:9:1: warning: task 3 has a title but no body",
	},
	"empty-task.md": {
		"empty-task.md:4:1: error: task 2 is empty: it has neither a title nor a body",
		"empty-task.md:6:1: warning: task at line 6 has no id and takes its ordinal \"4\"; the other tasks have explicit ids",
		"empty-task.md:6:1: error: task 4 is empty: it has neither a title nor a body",
	},
	"frontmatter-invalid.md": {
		"frontmatter-invalid.md:2:1: error: front matter is not valid YAML: did not find expected ',' or ']'",
	},
	"frontmatter-unknown-key.md": {
		"frontmatter-unknown-key.md:3:1: warning: unknown front matter key \"max_attempt\": did you mean \"max_attempts\"?",
		"frontmatter-unknown-key.md:4:1: warning: unknown front matter key \"agnet\": did you mean \"agent\"?",
	},
	"frontmatter-foreign-keys.md": {
		"frontmatter-foreign-keys.md:2:1: warning: 6 unknown front matter keys, ignored: \"phase\", \"plan\", \"type\", \"wave\", \"depends_on\", \"autonomous\" (known: title, description, agent, agent_cmd, model, verify, max_attempts, jobs, timeout, on_blocked, plan_context, env, params, form, todos, name, overview, notify, sandbox, sandbox_allow, sandbox_network, s…)",
	},
	"frontmatter-wrong-type.md": {
		"frontmatter-wrong-type.md:2:1: error: front matter \"max_attempts\" must be a positive integer, got \"many\"",
		"frontmatter-wrong-type.md:3:1: error: front matter \"timeout\" must be a duration like \"20m\" or \"90s\", or a number of seconds, got \"soon\"",
		"frontmatter-wrong-type.md:4:1: error: front matter \"env\" must be a list of environment variable names (\"not a name\" is not one)",
	},
	"invalid-utf8.md": {
		"invalid-utf8.md:3:21: error: invalid UTF-8 (byte 0xe9): a plan must be UTF-8 text",
	},
	"mixed-ids.md": {
		"mixed-ids.md:4:1: warning: task at line 4 has no id and takes its ordinal \"2\"; the other tasks have explicit ids",
	},
	"nested-only.md": {
		"nested-only.md:1:1: error: no tasks: write task headings (\"### Task 1: Title\") or top-level checklist items (\"- [ ] Title\"), or run the whole plan as one task with --form whole",
		"nested-only.md:4:3: warning: checklist item is not a task: only top-level checklist items are (this one is nested or quoted)",
	},
	"no-tasks.md": {
		"no-tasks.md:1:1: error: no tasks: write task headings (\"### Task 1: Title\") or top-level checklist items (\"- [ ] Title\"), or run the whole plan as one task with --form whole",
	},
	"unknown-dep.md": {
		"unknown-dep.md:6:21: error: task T003 depends on unknown task \"T02\" (did you mean \"T002\"?)",
		"unknown-dep.md:6:26: error: task T003 depends on unknown task \"T9\"",
	},
	"warnings.md": {
		"warnings.md:5:1: warning: checklist item outside every task heading is not a task (this plan's tasks are its \"Task N\" headings)",
		"warnings.md:7:1: warning: ```verify block outside every task is ignored (a plan-wide verify command goes in the front matter: \"verify: ...\")",
		"warnings.md:13:13: warning: task 1 depends on task 3, which comes later in the plan (tasks run in plan order)",
		"warnings.md:19:1: warning: task 1 has more than one ```verify block; the first one (line 15) is used",
		"warnings.md:25:1: warning: dependency line in task 3 names no task id (write \"Depends on: 3, 5\" or \"Depends on: none\")",
		"warnings.md:27:1: warning: task 3 has an empty ```verify block",
		"warnings.md:30:1: warning: task id \"2\" comes after \"3\"; task ranges select by number, so keep ids increasing",
		"warnings.md:32:1: warning: heading \"Task 2.1: Nested by mistake\" is nested under task 2 (level 3 inside level 2) and is part of it, not a task; use the same heading level for every task",
		"warnings.md:38:1: warning: fenced code block is never closed: everything after line 38 is code, tasks included",
	},
}

func TestBrokenPlans(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "plans", "broken")
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no broken plans: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		want, ok := wantBroken[name]
		if !ok {
			t.Errorf("%s: broken plan without expected diagnostics in this test", name)
			continue
		}
		src := mustRead(t, f)
		p, ds := Parse(name, src)
		checkInvariants(t, src, p)
		var got []string
		for _, d := range ds {
			got = append(got, d.String())
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: diagnostics\n got: %s\nwant: %s", name, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
		}
	}
}

func TestReadFileFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.md")
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing.md"), "missing.md: error: cannot read plan: no such file or directory"},
		{dir, ": error: cannot read plan: is a directory with no task files (a folder plan holds one task per numbered file: task-01.md, 02-setup.md)"},
		{big, "big.md: error: plan file too large: 33554433 bytes, the limit is 33554432 (32 MiB)"},
	} {
		p, ds, err := ReadFile(tc.path)
		if err == nil || p != nil || len(ds) != 1 || !strings.HasSuffix(ds[0].String(), tc.want) {
			t.Errorf("ReadFile(%s) = %v, %v, %v; want a diagnostic ending %q", tc.path, p, ds, err, tc.want)
		}
	}
	if _, _, err := ReadFile(big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too large: %v is not ErrTooLarge", err)
	}
	// Parse checks the size too, for callers that read the bytes themselves.
	if _, ds := Parse("big.md", make([]byte, MaxSize+1)); len(ds) != 1 || !strings.Contains(ds[0].Message, "too large") {
		t.Errorf("Parse of an oversized plan: %v", ds)
	}
}

// TestNearestKey: a typo of a known front matter key is named; another
// tool's metadata is not mistaken for one.
func TestNearestKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"agnet": "agent", "max_attempt": "max_attempts", "mode": "model", "timout": "timeout",
		"wave": "", "plan": "", "type": "", "status": "", "depends_on": "", "phase": "", "author": "",
	} {
		if got := nearestKey(key); got != want {
			t.Errorf("nearestKey(%q) = %q, want %q", key, got, want)
		}
	}
}
