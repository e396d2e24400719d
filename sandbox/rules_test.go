package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/gittest"
)

// Rules apply deeper after shallower, whatever order they were made in,
// and a read-only rule wins at its own path over a writable one.
func TestOrder(t *testing.T) {
	t.Parallel()
	got := order([]Rule{
		{Path: "/r/.git/implloop/worktrees/x/w1", Write: true, Pin: true},
		{Path: "/r/.git/implloop"},
		{Path: "/r", Write: true, Pin: true},
		{Path: "/r/.git", Write: true, Pin: true},
		{Path: "/r/.git/config", Write: true}, // asked writable (an allowed path)
		{Path: "/r/.git/config"},
		{Path: "/home/u/.claude", Write: true},
		{Path: "/r/", Write: true}, // a repeat: merged
	})
	want := []Rule{
		{Path: "/r", Write: true, Pin: true},
		{Path: "/r/.git", Write: true, Pin: true},
		{Path: "/home/u/.claude", Write: true},
		{Path: "/r/.git/config"},
		{Path: "/r/.git/implloop"},
		{Path: "/r/.git/implloop/worktrees/x/w1", Write: true, Pin: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
}

// The rules of a call in the main tree and in a linked worktree (as
// --jobs makes them, inside implloop's state directory): the tree and
// git's directories writable and pinned; implloop's state and refs, the
// config, hooks and info read-only; a linked worktree's .git file, the
// main tree's index and HEAD and the other worktrees' git directories
// read-only, its own writable.
func TestRulesFor(t *testing.T) {
	t.Parallel()
	root := resolved(t, t.TempDir())
	if err := os.Mkdir(filepath.Join(root, "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := gittest.At(t, filepath.Join(root, "repo"))
	r.Git("init", "-q")
	r.Write("a.txt", "a\n")
	r.Commit("start")
	state := filepath.Join(root, "repo", ".git", "implloop")
	wt := filepath.Join(state, "worktrees", "r-1", "w1")
	if err := os.MkdirAll(filepath.Dir(wt), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Git("worktree", "add", "-q", "--detach", wt)
	r.Git("worktree", "add", "-q", "--detach", filepath.Join(root, "other"))
	o := Options{State: []string{state}, Refs: []string{"refs/implloop", "refs/implloop-pull"}}
	git := filepath.Join(root, "repo", ".git")

	main, err := readLayout(t.Context(), filepath.Join(root, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	if err := main.prepare(o.Refs); err != nil {
		t.Fatal(err)
	}
	got := rulesFor(main, o, nil)
	want := []string{
		"write,pin " + filepath.Join(root, "repo"),
		"write,pin " + git,
		"read " + git + "/config",
		"read " + git + "/hooks",
		"read " + git + "/implloop",
		"read " + git + "/info",
		"write,pin " + git + "/objects",
		"write,pin " + git + "/refs",
		"read " + git + "/worktrees",
		"read " + git + "/refs/implloop",
		"read " + git + "/refs/implloop-pull",
	}
	checkRules(t, "main tree", got, want)

	linked, err := readLayout(t.Context(), wt)
	if err != nil {
		t.Fatal(err)
	}
	got = rulesFor(linked, o, nil)
	want = []string{
		"write,pin " + git,
		"read " + git + "/HEAD",
		"read " + git + "/config",
		"read " + git + "/hooks",
		"read " + git + "/implloop",
		"read " + git + "/index",
		"read " + git + "/info",
		"write,pin " + git + "/objects",
		"write,pin " + git + "/refs",
		"read " + git + "/worktrees",
		"read " + git + "/refs/implloop",
		"read " + git + "/refs/implloop-pull",
		"write,pin " + git + "/worktrees/w1",
		"read " + git + "/worktrees/w1/commondir",
		"read " + git + "/worktrees/w1/gitdir",
		"write,pin " + wt,
		"read " + wt + "/.git",
	}
	checkRules(t, "task worktree", got, want)
}

func checkRules(t *testing.T, what string, got []Rule, want []string) {
	t.Helper()
	var s []string
	for _, r := range got {
		s = append(s, r.String())
	}
	if !slices.Equal(s, want) {
		t.Errorf("%s: rules\n got %s\nwant %s", what, strings.Join(s, "\n     "), strings.Join(want, "\n     "))
	}
}

func resolved(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The Seatbelt profile opens writes rule by rule in order, denies a
// pinned path's own removal or rename (not what is inside it), keeps
// signals inside the sandbox, and cuts the network when asked; paths are
// quoted.
func TestSeatbeltProfile(t *testing.T) {
	t.Parallel()
	rules := []Rule{
		{Path: "/Users/u/repo", Write: true, Pin: true},
		{Path: "/Users/u/repo/.git/implloop"},
		{Path: `/Users/u/we"ird\dir`, Write: true},
	}
	got := seatbeltProfile(rules, false)
	want := `(version 1)
(allow default)
; Read-only everywhere but where the rules below allow.
(deny file-write*)
(allow file-write* (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper") (regex #"^/dev/tty") (regex #"^/dev/fd/"))
(allow file-write* (subpath "/Users/u/repo"))
(deny file-write-unlink (literal "/Users/u/repo"))
(deny file-write* (subpath "/Users/u/repo/.git/implloop"))
(allow file-write* (subpath "/Users/u/we\"ird\\dir"))
; No signals to processes outside the sandbox (implloop's among them).
(deny signal)
(allow signal (target same-sandbox))
(deny network*)
`
	if got != want {
		t.Errorf("profile:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(seatbeltProfile(rules, true), "network") {
		t.Error("the network is denied with --sandbox-network on")
	}
	argv := seatbeltArgs("/usr/bin/sandbox-exec", rules, true, "/Users/u/repo", []string{"claude", "-p"})
	if argv[0] != "/usr/bin/sandbox-exec" || argv[1] != "-p" || !slices.Equal(argv[3:], []string{"claude", "-p"}) {
		t.Errorf("argv %q", argv)
	}
}

// bwrap gets the base (PID namespace, no capabilities, read-only root,
// fresh /dev, /proc, /tmp and /run) before the rules, in order, then the
// command after "--".
func TestBwrapArgs(t *testing.T) {
	t.Parallel()
	rules := []Rule{{Path: "/r", Write: true, Pin: true}, {Path: "/r/.git/implloop"}}
	got := strings.Join(bwrapArgs("/usr/bin/bwrap", rules, true, "/r", []string{"claude", "-p"}), " ")
	user := ""
	if os.Geteuid() == 0 {
		user = "--unshare-user --uid 1000 --gid 1000 "
	}
	for _, want := range []string{
		"/usr/bin/bwrap --die-with-parent --new-session --unshare-pid --as-pid-1 --unshare-ipc --cap-drop ALL " + user + "--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run ",
		" --bind /r /r --ro-bind /r/.git/implloop /r/.git/implloop --setenv TMPDIR /tmp --chdir /r -- claude -p",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("argv\n%s\nlacks\n%s", got, want)
		}
	}
	if strings.Contains(got, "--unshare-net") {
		t.Error("--unshare-net with the network on")
	}
	if !strings.Contains(strings.Join(bwrapArgs("bwrap", nil, false, "/r", []string{"x"}), " "), " --unshare-net ") {
		t.Error("no --unshare-net with --sandbox-network none")
	}
}

// Without bwrap on PATH, New says so and how to install it.
func TestBwrapMissing(t *testing.T) {
	t.Parallel()
	_, err := lookBwrap(func(string) (string, error) { return "", errors.New("not found") })
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "bubblewrap") || !strings.Contains(ue.Hint, "apt-get install bubblewrap") {
		t.Fatalf("err %v", err)
	}
}

// implloop's refs that only packed-refs holds are written out as loose
// files of the same value; a ref whose lock someone holds, a loose one,
// other namespaces and names that climb out of refs/ are left alone.
func TestPinLooseRefs(t *testing.T) {
	t.Parallel()
	common := t.TempDir()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 64)
	packed := "# pack-refs with: peeled fully-peeled sorted \n" +
		a + " refs/heads/main\n" +
		a + " refs/implloop/runs/r-1\n" +
		"^" + b[:40] + "\n" +
		b + " refs/implloop/records/r-1\n" +
		a + " refs/implloop/runs/held\n" +
		a + " refs/implloop/runs/loose\n" +
		a + " refs/implloop/../../escape\n" +
		a + " refs/implloop-pull/o/runs/r-2\n"
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(common, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("packed-refs", packed)
	write("refs/implloop/runs/held.lock", "")
	write("refs/implloop/runs/loose", b+"\n")
	if err := pinLooseRefs(common, []string{"refs/implloop", "refs/implloop-pull/"}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"refs/implloop/runs/r-1":         a + "\n",
		"refs/implloop/records/r-1":      b + "\n",
		"refs/implloop-pull/o/runs/r-2":  a + "\n",
		"refs/implloop/runs/loose":       b + "\n",
		"refs/implloop/runs/held":        "",
		"refs/heads/main":                "",
		"escape":                         "",
		"refs/implloop/runs/r-1.lock":    "",
		"refs/implloop/runs/held.lock":   "(exists)",
		"refs/implloop/records/r-1.lock": "",
	} {
		got, err := os.ReadFile(filepath.Join(common, p))
		switch {
		case want == "(exists)" && err != nil:
			t.Errorf("%s: %v", p, err)
		case want == "" && err == nil:
			t.Errorf("%s was written", p)
		case want != "" && want != "(exists)" && string(got) != want:
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
}

// Caches follow the variables that move them.
func TestCaches(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GOMODCACHE": "/mod", "CARGO_HOME": "/cargo", "XDG_CACHE_HOME": "/xdg"}
	got := Caches(func(k string) string { return env[k] }, "/home/u")
	want := []string{"/mod", "/home/u/.npm", "/cargo/registry", "/cargo/git"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("caches %q lack %s", got, w)
		}
	}
	env = map[string]string{"GOCACHE": "off", "GOPATH": "/gp" + string(filepath.ListSeparator) + "/gp2"}
	got = Caches(func(k string) string { return env[k] }, "/home/u")
	if !slices.Contains(got, "/gp/pkg/mod") || slices.ContainsFunc(got, func(p string) bool { return strings.HasSuffix(p, "go-build") }) {
		t.Errorf("caches %q", got)
	}
}

// A repository whose refs are in a reftable is refused: implloop's refs
// cannot be read-only apart from the others there.
func TestReftableRefused(t *testing.T) {
	t.Parallel()
	dir := resolved(t, t.TempDir())
	r := gittest.At(t, dir)
	r.Git("init", "-q")
	if err := os.Mkdir(filepath.Join(dir, ".git", "reftable"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := readLayout(t.Context(), dir); !errors.Is(err, ErrReftable) {
		t.Fatalf("err %v, want ErrReftable", err)
	}
}
