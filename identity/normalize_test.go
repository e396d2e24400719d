package identity

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every row of the table does what its example says, alone and as part of
// the whole table.
func TestRuleExamples(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.Name] {
			t.Errorf("rule name %q used twice", r.Name)
		}
		seen[r.Name] = true
		if r.Matches == "" || r.Becomes == "" || r.Example.In == r.Example.Out {
			t.Errorf("rule %s: empty description or an example that changes nothing", r.Name)
		}
		if got := r.Apply(r.Example.In, ExampleEnv()); got != r.Example.Out {
			t.Errorf("rule %s alone: %q -> %q, want %q", r.Name, r.Example.In, got, r.Example.Out)
		}
		if got := Normalize(r.Example.In, ExampleEnv()); got != r.Example.Out {
			t.Errorf("Normalize(example of %s): %q -> %q, want %q", r.Name, r.Example.In, got, r.Example.Out)
		}
	}
}

// The table holds exactly the rules issue 3 asks for, in its order.
func TestRuleOrder(t *testing.T) {
	t.Parallel()
	var names []string
	for _, r := range Rules() {
		names = append(names, r.Name)
	}
	want := []string{"line-endings", "trailing-space", "trailing-blank-lines", "project-root", "home", "temp", "date-time", "uuid", "run-id", "task-marker"}
	if !slices.Equal(names, want) {
		t.Fatalf("rules %v, want %v", names, want)
	}
}

var normalizeEnv = Env{
	ProjectRoots: []string{"/home/ann/src/shop", "/data/ann/src/shop/"},
	Home:         "/home/ann",
	TempRoots:    []string{"/tmp", "/var/folders/zz/abc123/T", "/home/ann/.cache/tmp"},
}

// normalizeCases pin Normalize's behaviour; their outputs are also part of
// the tables' fingerprint (doc_test.go).
var normalizeCases = []struct{ name, in, want string }{
	{"empty", "", ""},
	{"plain", "add a login page", "add a login page"},
	{"crlf and cr", "a\r\n\r\nb\r", "a\n\nb"},
	{"trailing tabs, not inner", "a \t b\t\n c ", "a \t b\n c"},
	{"leading blank lines kept", "\n\n  a", "\n\n  a"},
	{"only blank", " \n\t\n\n", ""},
	{"project root", "cd /home/ann/src/shop && make", "cd <PROJECT> && make"},
	{"resolved root, trailing slash in env", "/data/ann/src/shop/x", "<PROJECT>/x"},
	{"root at sentence end", "work in /home/ann/src/shop.", "work in <PROJECT>."},
	{"root before a dotted name is another dir", "/home/ann/src/shop.old/x", "<HOME>/src/shop.old/x"},
	{"root glued on the left", "x/home/ann/src/shop", "x/home/ann/src/shop"},
	{"root in a file URL", "file:///home/ann/src/shop/a", "file://<PROJECT>/a"},
	{"root in quotes", `"/home/ann/src/shop"`, `"<PROJECT>"`},
	{"root with longer sibling", "/home/ann/src/shopping", "<HOME>/src/shopping"},
	{"home", "~ is /home/ann", "~ is <HOME>"},
	{"other home kept", "/home/anna/x", "/home/anna/x"},
	{"temp random dir", "/tmp/tmp.k3J9xq/out", "<TMP>/out"},
	{"temp dir with a digit", "log at /tmp/implloop-77", "log at <TMP>"},
	{"temp file name kept", "/tmp/notes.txt", "<TMP>/notes.txt"},
	{"temp root alone", "cd /tmp; ls", "cd <TMP>; ls"},
	{"macOS temp dir", "/var/folders/zz/abc123/T/TestX42/001/f", "<TMP>/001/f"},
	{"not a temp root", "/tmpfs/a1", "/tmpfs/a1"},
	{"temp root under home wins", "/home/ann/.cache/tmp/go12/f and /home/ann/.cache/x", "<TMP>/f and <HOME>/.cache/x"},
	{"rfc3339", "at 2026-11-30T05:40:12Z.", "at <TIME>."},
	{"rfc3339 offset and fraction", "2026-11-30T05:40:12.123456+01:00 x", "<TIME> x"},
	{"space separated, minutes only", "2026-11-30 05:40 done", "<TIME> done"},
	{"iso basic", "backup-20261130T054012Z.tar", "backup-<TIME>.tar"},
	{"date only kept", "due 2026-11-30", "due 2026-11-30"},
	{"time only kept", "took 05:40:12", "took 05:40:12"},
	{"bad month kept", "2026-13-30T05:40", "2026-13-30T05:40"},
	{"glued date-time kept", "v2026-11-30T05:40", "v2026-11-30T05:40"},
	{"uuid counters", "a 0f8fad5b-d9cb-469f-a165-70867728950e b 7c9e6679-7425-40de-944b-e07fc1f90ae7 c 0f8fad5b-d9cb-469f-a165-70867728950e", "a <UUID-1> b <UUID-2> c <UUID-1>"},
	{"undashed uuid is hex, kept", "0f8fad5bd9cb469fa16570867728950e", "0f8fad5bd9cb469fa16570867728950e"},
	{"uuid glued kept", "x0f8fad5b-d9cb-469f-a165-70867728950e", "x0f8fad5b-d9cb-469f-a165-70867728950e"},
	{"run ids", "r-20261130-054012-3f9a r-20261130-054013-0000 r-20261130-054012-3f9a", "<RUN-1> <RUN-2> <RUN-1>"},
	{"run id in path", ".implloop/runs/r-20261130-054012-3f9a/x", ".implloop/runs/<RUN-1>/x"},
	{"not a run id", "r-20261130-054012-3f9ab xr-20261130-054012-3f9a", "r-20261130-054012-3f9ab xr-20261130-054012-3f9a"},
	{"markers", "- [x] a\n  * [X] b\n1. [x] c\n> - [x] d\n- [x]", "- [ ] a\n  * [ ] b\n1. [ ] c\n> - [ ] d\n- [ ]"},
	{"not a marker", "a [x] b\n-[x] c\n- [x]d\nm[x]", "a [x] b\n-[x] c\n- [x]d\nm[x]"},
	{"hex sha kept", "plan sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "plan sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	{"templates are content", "${{ x }} and {{item}}", "${{ x }} and {{item}}"},
	{"unicode as given", "cafe\u0301 café", "cafe\u0301 café"},
	{"numbers kept", "retry 3 times, 0.5 s, 1e9", "retry 3 times, 0.5 s, 1e9"},
	{"tokens stay", "<PROJECT> <UUID-1> <TIME>", "<PROJECT> <UUID-1> <TIME>"},
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	env := normalizeEnv
	for _, tt := range normalizeCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Normalize(tt.in, env)
			if got != tt.want {
				t.Errorf("Normalize(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := Normalize(got, env); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

// Roots that would match everything are ignored.
func TestNormalizeIgnoresDegenerateRoots(t *testing.T) {
	t.Parallel()
	env := Env{ProjectRoots: []string{"", "/", "."}, Home: "/", TempRoots: []string{"//", "C:"}}
	in := "/usr/bin and C:\\x and ./a"
	if got := Normalize(in, env); got != in {
		t.Fatalf("got %q", got)
	}
}

func TestNormalizeWindowsPaths(t *testing.T) {
	t.Parallel()
	env := Env{ProjectRoots: []string{`C:\src\shop`}, TempRoots: []string{`C:\Users\ann\AppData\Local\Temp`}}
	got := Normalize(`C:\src\shop\main.go C:\Users\ann\AppData\Local\Temp\go-build12\x`, env)
	if want := `<PROJECT>\main.go <TMP>\x`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestEnvForResolvesSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	env := EnvFor(link)
	realResolved, _ := filepath.EvalSymlinks(real)
	if !slices.Contains(env.ProjectRoots, link) || !slices.Contains(env.ProjectRoots, realResolved) {
		t.Fatalf("ProjectRoots %v, want %s and %s", env.ProjectRoots, link, realResolved)
	}
	if len(env.TempRoots) == 0 || !slices.Contains(env.TempRoots, "/tmp") {
		t.Fatalf("TempRoots %v", env.TempRoots)
	}
	a := Normalize("edit "+link+"/a.go", env)
	b := Normalize("edit "+realResolved+"/a.go", env)
	if a != "edit <PROJECT>/a.go" || a != b {
		t.Fatalf("got %q and %q", a, b)
	}
}

// Inside a project reached through a symlink, git reports the resolved
// root while prompts built from $PWD hold the symlinked one: both are the
// project.
func TestEnvForWorkingDirThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	t.Chdir(filepath.Join(link, "sub"))
	realRoot, _ := filepath.EvalSymlinks(real)
	env := EnvFor(realRoot)
	if !slices.Contains(env.ProjectRoots, link) {
		t.Fatalf("ProjectRoots %v, want %s among them", env.ProjectRoots, link)
	}
	if got := Normalize(link+"/sub/a.go", env); got != "<PROJECT>/sub/a.go" {
		t.Fatalf("got %q", got)
	}
}

func TestEnvForRelative(t *testing.T) {
	t.Parallel()
	env := EnvFor(".")
	wd, _ := os.Getwd()
	if !slices.Contains(env.ProjectRoots, wd) {
		t.Fatalf("ProjectRoots %v, want %s", env.ProjectRoots, wd)
	}
}

func TestRunID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 6, 40, 12, 999, time.FixedZone("CET", 3600))
	id := NewRunID(at, [2]byte{0x3f, 0x9a})
	if id != "r-20261130-054012-3f9a" {
		t.Fatalf("NewRunID = %q", id)
	}
	if is := RunIDRegexp.MatchString; !is(id) || is(id+"0") || is("x"+id) || is("r-20261130-054012-3F9A") {
		t.Fatal("RunIDRegexp disagrees with the format")
	}
	if got := Normalize("run "+id, Env{}); got != "run <RUN-1>" {
		t.Fatalf("run id not normalized: %q", got)
	}
	later := NewRunID(at.Add(time.Second), [2]byte{0, 0})
	if !(later > id) || strings.Compare(NewRunID(at.Add(time.Hour), [2]byte{0, 0}), later) != 1 {
		t.Fatal("run ids do not sort by start time")
	}
}
