package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

// These tests run real bubblewrap. Without it they fail (make test
// installs it: scripts/install-bwrap.sh); where the system does not let
// it make namespaces, they skip and say why.

// newSandbox is a sandbox for o, probed.
func newSandbox(t testing.TB, o Options) *Sandbox {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatalf("%v (scripts/install-bwrap.sh installs it; make test runs it)", err)
	}
	if err := s.Probe(t.Context()); err != nil {
		t.Skipf("no sandbox on this system (user namespaces off?): %v", err)
	}
	return s
}

// repo is a repository with one commit and implloop's state as a run
// leaves it: a journal file in .git/implloop and a boundary commit that
// only refs/implloop/runs/r-1 keeps, packed (as a `git gc` outside the
// sandbox leaves it).
type repo struct {
	*gittest.Repo
	dir, state, boundary string
}

func newRepo(t testing.TB) repo {
	t.Helper()
	dir := filepath.Join(resolved(t, t.TempDir()), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := repo{Repo: gittest.At(t, dir), dir: dir, state: filepath.Join(dir, ".git", "implloop")}
	r.Git("init", "-q")
	r.Write("a.txt", "a\n")
	r.Commit("start")
	if err := os.MkdirAll(r.state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.state, "state.db"), []byte("journal"), 0o644); err != nil {
		t.Fatal(err)
	}
	blob := strings.TrimSpace(r.gitIn(t, "boundary only\n", "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(r.gitIn(t, "100644 blob "+blob+"\tonly.txt\n", "mktree"))
	r.boundary = r.git("commit-tree", "-m", "boundary", tree)
	r.Git("update-ref", "refs/implloop/runs/r-1", r.boundary)
	r.Git("pack-refs", "--all", "--prune")
	return r
}

// git is r.Git's output without its newline.
func (r repo) git(args ...string) string { return strings.TrimSpace(r.Git(args...)) }

func (r repo) gitIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env, cmd.Stdin = r.dir, r.Env(), strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

func (r repo) options(extra Options) Options {
	extra.State = append(extra.State, r.state)
	extra.Refs = []string{"refs/implloop", "refs/implloop-pull"}
	return extra
}

// run runs script with sh in dir inside a sandboxed call, with env added
// to the repository's isolated git environment; it returns what the
// script printed.
func run(t *testing.T, s *Sandbox, env []string, dir, script string) string {
	t.Helper()
	c, err := s.Call(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	argv, err := c.Wrap([]string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(env, fmt.Sprintf("TMPDIR=%s", c.Env["TMPDIR"]))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("sandboxed script: %v\n%s", err, out.String())
	}
	t.Logf("sandboxed script said:\n%s", out.String())
	return out.String()
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("the script did not print %s", l)
		}
	}
}

// An agent commits in the sandbox, then goes for implloop's state: it
// removes the journal, deletes implloop's refs and collects the garbage,
// moves git's directories away, plants config, a hook, and a commondir
// that would send git elsewhere. Its commit stands; the rest is refused,
// and the boundary commit is still there.
func TestSandboxGit(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	s := newSandbox(t, r.options(Options{}))
	out := run(t, s, r.Env(), r.dir, `
echo b > b.txt && git add b.txt && git commit -qm b && echo COMMITTED
rm -rf .git/implloop; test -f .git/implloop/state.db && echo STATE-KEPT
git for-each-ref --format='%(refname)' refs/implloop/ | while read ref; do git update-ref -d "$ref" || echo REF-KEPT; done
sed -i /implloop/d .git/packed-refs 2>/dev/null
git reflog expire --expire=now --all; git gc -q --prune=now; echo GC-RAN
mv .git/refs .git/refs-moved || echo REFS-PINNED
mv .git/objects .git/objects-moved || echo OBJECTS-PINNED
git config core.fsmonitor 'touch /tmp/pwned' || echo CONFIG-REFUSED
echo evil > .git/hooks/post-checkout || echo HOOKS-REFUSED
echo evil > .git/info/exclude || echo INFO-REFUSED
echo ../evil > .git/commondir || echo COMMONDIR-REFUSED
git branch topic && git branch -D topic && echo BRANCHES-OK
`)
	wantLines(t, out, "COMMITTED", "STATE-KEPT", "REF-KEPT", "GC-RAN", "REFS-PINNED", "OBJECTS-PINNED",
		"CONFIG-REFUSED", "HOOKS-REFUSED", "INFO-REFUSED", "COMMONDIR-REFUSED", "BRANCHES-OK")
	if _, err := os.Lstat(filepath.Join(r.dir, ".git", "commondir")); err == nil {
		t.Error(".git/commondir is left after the call")
	}
	if got := r.git("rev-parse", "refs/implloop/runs/r-1"); got != r.boundary {
		t.Errorf("refs/implloop/runs/r-1 = %q, want %s", got, r.boundary)
	}
	if _, err := r.GitErr("cat-file", "-e", r.boundary+":only.txt"); err != nil {
		t.Errorf("the boundary's content is gone: %v", err)
	}
	if got := r.git("log", "-1", "--format=%s"); got != "b" {
		t.Errorf("HEAD is %q, want the agent's commit b", got)
	}
	if b, err := os.ReadFile(filepath.Join(r.state, "state.db")); err != nil || string(b) != "journal" {
		t.Errorf("the journal: %q, %v", b, err)
	}
	if cfg, _ := os.ReadFile(filepath.Join(r.dir, ".git", "config")); bytes.Contains(cfg, []byte("fsmonitor")) {
		t.Errorf("config was written:\n%s", cfg)
	}
}

// Writes outside the tree are refused (the host's files are read-only) or
// go to the sandbox's own /tmp, which goes with the call; the paths the
// user allows and the agent's own directories are written.
func TestSandboxOutside(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	home := resolved(t, t.TempDir())
	allowed := filepath.Join(resolved(t, t.TempDir()), "allowed")
	if err := os.Mkdir(allowed, 0o755); err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, r.options(Options{Home: home, AgentDirs: []string{"~/.agent/", "~/.agent.json", "~/.missing.json"}, Allow: []string{allowed}}))
	if err := os.WriteFile(filepath.Join(home, ".agent.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := run(t, s, r.Env(), r.dir, fmt.Sprintf(`
echo x > /etc/implloop-sandbox-test || echo ETC-REFUSED
echo x > ../outside.txt && echo SIBLING-WRITTEN-INSIDE
echo x > /tmp/private.txt && cat /tmp/private.txt >/dev/null && echo TMP-PRIVATE
echo x > %[1]s/.agent/state && echo AGENT-DIR-OK
echo '{"a":1}' > %[1]s/.agent.json && echo AGENT-FILE-OK
echo x > %[1]s/.missing.json || echo UNLISTED-REFUSED
echo x > %[2]s/ok.txt && echo ALLOWED-OK
`, home, allowed))
	wantLines(t, out, "ETC-REFUSED", "SIBLING-WRITTEN-INSIDE", "TMP-PRIVATE", "AGENT-DIR-OK", "AGENT-FILE-OK", "ALLOWED-OK")
	for _, p := range []string{"/etc/implloop-sandbox-test", filepath.Join(filepath.Dir(r.dir), "outside.txt"), "/tmp/private.txt", filepath.Join(home, ".missing.json")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written outside the sandbox", p)
			os.Remove(p)
		}
	}
	for _, p := range []string{filepath.Join(home, ".agent", "state"), filepath.Join(allowed, "ok.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// Nothing the call starts outlives it, a setsid daemon included, and the
// processes outside its PID namespace are out of its sight and reach.
func TestSandboxProcesses(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	s := newSandbox(t, r.options(Options{}))
	marker := fmt.Sprintf("%d.%d", 30+os.Getpid()%60, time.Now().UnixNano()%1000)
	out := run(t, s, r.Env(), r.dir, fmt.Sprintf(`
setsid sh -c 'sleep 0.3; echo late > late.txt; exec sleep %s' >/dev/null 2>&1 </dev/null &
kill -9 %d || echo KILL-REFUSED
kill -0 1 && echo SEES-ITS-INIT
n=$(ls /proc | grep -c '^[0-9]'); [ "$n" -lt 10 ] && echo FEW-PROCESSES
`, marker, os.Getpid()))
	wantLines(t, out, "KILL-REFUSED", "SEES-ITS-INIT", "FEW-PROCESSES")
	// The namespace's processes are gone once its bwrap has exited: none
	// is left to write late.txt.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(marker)) {
			t.Errorf("a process of the call outlived it: %s %q", p, b)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "late.txt")); err == nil {
		t.Error("a daemon the call started wrote after the call")
	}
}

// A call in a task worktree (--jobs) commits there, and cannot write the
// main tree, its index or HEAD, nor point its .git file elsewhere. (The
// main tree's files are read-only in its view, or, for a tree under /tmp
// as here, not in its view at all: what it writes there stays in the
// call's own /tmp.)
func TestSandboxWorktree(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	wt := filepath.Join(r.state, "worktrees", "r-1", "w1")
	if err := os.MkdirAll(filepath.Dir(wt), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Git("worktree", "add", "-q", "--detach", wt)
	s := newSandbox(t, r.options(Options{}))
	head := r.git("rev-parse", "HEAD")
	out := run(t, s, r.Env(), wt, fmt.Sprintf(`
echo w > w.txt && git add w.txt && git commit -qm w && echo COMMITTED
echo x > %[1]s/stolen.txt
echo x > %[1]s/a.txt
git -C %[1]s update-ref HEAD HEAD~0 2>/dev/null; echo junk > %[1]s/.git/HEAD || echo MAIN-HEAD-REFUSED
echo junk > %[1]s/.git/index || echo MAIN-INDEX-REFUSED
echo "gitdir: /elsewhere" > .git || echo GITFILE-REFUSED
echo ../evil > %[1]s/.git/commondir || echo COMMONDIR-REFUSED
`, r.dir))
	wantLines(t, out, "COMMITTED", "MAIN-HEAD-REFUSED", "MAIN-INDEX-REFUSED", "GITFILE-REFUSED", "COMMONDIR-REFUSED")
	if _, err := os.Lstat(filepath.Join(r.dir, ".git", "commondir")); err == nil {
		t.Error(".git/commondir is left after the call")
	}
	if _, err := os.Stat(filepath.Join(r.dir, "stolen.txt")); err == nil {
		t.Error("the worktree's call wrote the main tree")
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, "a.txt")); string(b) != "a\n" {
		t.Errorf("the worktree's call rewrote the main tree's a.txt: %q", b)
	}
	if got := r.git("rev-parse", "HEAD"); got != head {
		t.Errorf("the main tree's HEAD moved: %s -> %s", head, got)
	}
	if got := strings.TrimSpace(gittest.At(t, wt).Git("log", "-1", "--format=%s")); got != "w" {
		t.Errorf("the worktree's HEAD is %q, want its commit w", got)
	}
}

// --sandbox-network none: the call has a network namespace of its own,
// with only a loopback device.
func TestSandboxNetworkNone(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	const count = `echo devices=$(tail -n +3 /proc/net/dev | wc -l)`
	none := run(t, newSandbox(t, r.options(Options{NoNetwork: true})), r.Env(), r.dir, count)
	if !strings.Contains(none, "devices=1\n") {
		t.Errorf("with no network: %s", none)
	}
	host, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("devices=%d\n", len(strings.Split(strings.TrimSpace(string(host)), "\n"))-2)
	if on := run(t, newSandbox(t, r.options(Options{})), r.Env(), r.dir, count); !strings.Contains(on, want) {
		t.Errorf("with the network on: %s, want %s", on, want)
	}
}

// An agent run by a name on PATH whose directory is in the host's /tmp
// (which the sandbox hides) is still found, and, through the symlink
// there, finds its own files beside it (as an npm-installed CLI does).
func TestSandboxExecutableInTmp(t *testing.T) {
	r := newRepo(t)
	s := newSandbox(t, r.options(Options{}))
	real, err := os.MkdirTemp("/var/tmp", "implloop-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(real) })
	real = resolved(t, real)
	script := filepath.Join(real, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat \"$(dirname \"$(readlink -f \"$0\")\")/data.txt\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "data.txt"), []byte("found beside it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := resolved(t, t.TempDir())
	if err := os.Symlink(script, filepath.Join(bin, "my-agent")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	c, err := s.Call(t.Context(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	argv, err := c.Wrap([]string{"my-agent"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.dir, r.Env()
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "found beside it\n" {
		t.Errorf("my-agent: %v\n%s", err, out)
	}
}

// TestSandboxExecutableInTmpClone: an agent CLI installed inside a clone
// under /tmp (node_modules/.bin/agent, a symlink to its package's script,
// which reads the package's other files) runs in the sandbox, whose own
// /tmp hides the host's: the clone's directory is shown, read-only.
func TestSandboxExecutableInTmpClone(t *testing.T) {
	r := newRepo(t)
	s := newSandbox(t, r.options(Options{}))
	clone, err := os.MkdirTemp("/tmp", "implloop-sandbox-clone-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(clone) })
	clone = resolved(t, clone)
	pkg := filepath.Join(clone, ".e2e", "node_modules", "pkg")
	binDir := filepath.Join(clone, ".e2e", "node_modules", ".bin")
	for _, d := range []string{filepath.Join(pkg, "bin"), filepath.Join(pkg, "lib"), binDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(pkg, "bin", "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat \"$(dirname \"$(readlink -f \"$0\")\")/../lib/data.txt\"\n(echo x > \"$(dirname \"$(readlink -f \"$0\")\")/written\") 2>/dev/null && echo wrote\ntrue\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "lib", "data.txt"), []byte("from its package\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../pkg/bin/agent.sh", filepath.Join(binDir, "clone-agent")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", binDir+string(filepath.ListSeparator)+os.Getenv("PATH"))
	c, err := s.Call(t.Context(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	argv, err := c.Wrap([]string{"clone-agent"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.dir, r.Env()
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "from its package\n" {
		t.Errorf("clone-agent: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(pkg, "bin", "written")); err == nil {
		t.Error("the clone's directory was writable in the sandbox")
	}
}
