// Package scaffold writes a first plan for the repository at hand
// (`implloop init`): it guesses the project's gate from the files at its
// root (go.mod: go test ./..., Cargo.toml: cargo test, a package.json with
// a test script: npm test, pyproject.toml and friends: pytest, a Makefile
// with a test target: make test) and lays out a three-task plan in the
// form docs/plan-format.md recommends: task headings, a dependency line,
// the gate in the front matter.
//
// Every task of the sample is fully specified (each fenced block with
// path=FILE holds a whole file), so the builtin agent carries it out with
// no model, and a real agent reads the same text as any other task. Its
// files go into one new directory, implloop-example/, so trying it
// touches nothing of the project; for Go and Python the example is code
// with a test the project's own gate runs, elsewhere it is documentation.
//
// Detect reads the root directory and nothing else; Plan is pure.
package scaffold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Project is what Detect found at a repository's root.
type Project struct {
	// Kind is go, rust, node, python, make, or "" when nothing was
	// recognised.
	Kind string
	// Gate is the command that checks the project ("" when none was
	// found: tasks are then done when the agent's call completes).
	Gate string
	// Why names the file the guess came from: "go.mod".
	Why string
}

// Detect guesses the project's kind and gate from the files in root.
func Detect(root string) Project {
	has := func(name string) bool {
		fi, err := os.Stat(filepath.Join(root, name))
		return err == nil && !fi.IsDir()
	}
	switch {
	case has("go.mod"):
		return Project{Kind: "go", Gate: "go test ./...", Why: "go.mod"}
	case has("Cargo.toml"):
		return Project{Kind: "rust", Gate: "cargo test", Why: "Cargo.toml"}
	case has("package.json") && npmTestScript(filepath.Join(root, "package.json")):
		return Project{Kind: "node", Gate: "npm test", Why: "package.json's test script"}
	}
	for _, name := range []string{"pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini"} {
		if has(name) {
			return Project{Kind: "python", Gate: "pytest", Why: name}
		}
	}
	for _, name := range []string{"Makefile", "makefile", "GNUmakefile"} {
		if has(name) && makeTestTarget(filepath.Join(root, name)) {
			return Project{Kind: "make", Gate: "make test", Why: name + "'s test target"}
		}
	}
	return Project{}
}

// npmTestScript reports whether package.json has a test script other than
// the one `npm init` writes ("no test specified", which always fails).
func npmTestScript(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return false
	}
	t := strings.TrimSpace(pkg.Scripts["test"])
	return t != "" && !strings.Contains(t, "no test specified")
}

var makeTest = regexp.MustCompile(`(?m)^test\s*:`)

func makeTestTarget(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && makeTest.Match(b)
}

// Dir is where the sample plan's tasks write their files.
const Dir = "implloop-example"

// TaskCount is how many tasks the sample plan has.
const TaskCount = 3

// Plan is the sample plan for project p: front matter with its gate (none
// when p has none), a preamble that says how to make it one's own, and
// three fully specified tasks, the third depending on the first two.
func Plan(p Project) []byte {
	var b bytes.Buffer
	if p.Gate != "" {
		fmt.Fprintf(&b, "---\n# The gate: run after each task (implloop guessed it from %s).\nverify: %s\n---\n", p.Why, p.Gate)
	}
	b.WriteString(`# Plan: a first run of implloop

implloop's sample plan for this repository, written by ` + "`implloop init`" + `.
Each ` + "`### Task N: Title`" + ` heading is a task; its text, down to the next
heading, is what the agent is asked to do. A ` + "`Depends on:`" + ` line names tasks
whose work it builds on. `)
	if p.Gate != "" {
		fmt.Fprintf(&b, "After each task the gate (`verify:` above, `%s`) must pass, or\nthe task gets another attempt, told what failed.", p.Gate)
	} else {
		b.WriteString("No test command was found, so there is no gate: a task is done when\nthe agent's call completes. To have one, start the plan with front\nmatter: a `---` line, `verify: <command>`, and another `---` line.")
	}
	b.WriteString(`

Every task below is fully specified: each fenced block with ` + "`path=FILE`" + ` holds
that whole file, so ` + "`--agent builtin`" + ` runs the plan with no model. A real
agent reads the same text. Everything goes into ` + "`" + Dir + "/`" + `; delete it
when you are done, and replace these tasks with your own
(docs/plan-format.md lists every form implloop reads).

`)
	for _, t := range tasks(p.Kind) {
		b.WriteString(t)
	}
	return b.Bytes()
}

// fence is a fenced block writing path.
func fence(lang, path, body string) string {
	return "```" + lang + " path=" + path + "\n" + body + "```\n"
}

func tasks(kind string) []string {
	readme := func(what string) string {
		return "### Task 3: Say what it is\n\nDepends on: 1, 2\n\nA README for the example, naming what the first two tasks wrote.\n\n" +
			fence("markdown", Dir+"/README.md", "# implloop example\n\nWritten by the sample plan of `implloop init`: "+what+
				"\nDelete this directory when you are done with it.\n")
	}
	switch kind {
	case "go":
		return []string{
			"### Task 1: A greeting package\n\nAdd a package with one function, `Hello`, that greets a name (the world\nwhen the name is empty).\n\n" +
				fence("go", Dir+"/greet/greet.go", `// Package greet is implloop's example: the first task of the sample plan.
package greet

// Hello returns a greeting for name, or for the world when name is empty.
func Hello(name string) string {
	if name == "" {
		name = "world"
	}
	return "Hello, " + name + "!"
}
`) + "\n",
			"### Task 2: Test it\n\nDepends on: 1\n\nA table test of `Hello`, which the gate runs.\n\n" +
				fence("go", Dir+"/greet/greet_test.go", `package greet

import "testing"

func TestHello(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "Hello, world!"},
		{"Ada", "Hello, Ada!"},
	} {
		if got := Hello(tc.in); got != tc.want {
			t.Errorf("Hello(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
`) + "\n",
			readme("the package `greet/` (task 1) and its test (task 2)."),
		}
	case "python":
		return []string{
			"### Task 1: A greeting module\n\nAdd a module with one function, `hello`, that greets a name (the world\nwhen the name is empty).\n\n" +
				fence("python", Dir+"/greet.py", `"""implloop's example: the first task of the sample plan."""


def hello(name=""):
    """Return a greeting for name, or for the world when name is empty."""
    return "Hello, " + (name or "world") + "!"
`) + "\n",
			"### Task 2: Test it\n\nDepends on: 1\n\nA test of `hello` that pytest finds, however the project imports.\n\n" +
				fence("python", Dir+"/test_implloop_example_greet.py", `import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "implloop_example_greet", pathlib.Path(__file__).with_name("greet.py"))
greet = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(greet)


def test_hello():
    assert greet.hello() == "Hello, world!"
    assert greet.hello("Ada") == "Hello, Ada!"
`) + "\n",
			readme("the module `greet.py` (task 1) and its test (task 2)."),
		}
	}
	return []string{
		"### Task 1: Notes\n\nWrite the notes file.\n\n" +
			fence("markdown", Dir+"/NOTES.md", "# Notes\n\nWhat this repository is for, in a sentence or two: to be written.\n") + "\n",
		"### Task 2: A checklist\n\nWrite a checklist for a change to this repository.\n\n" +
			fence("markdown", Dir+"/CHECKLIST.md", "# Checklist\n\n- The tests pass.\n- The docs say what changed.\n") + "\n",
		readme("`NOTES.md` (task 1) and `CHECKLIST.md` (task 2)."),
	}
}
