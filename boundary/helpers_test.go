package boundary

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gittest"
)

// TestMain isolates git from the developer's configuration: every git the
// tests and the code under test start sees an empty HOME, no system config
// and a fixed identity.
func TestMain(m *testing.M) {
	home, err := gittest.Isolate("boundary-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// A global excludes file, the ignore source go-git v5 misses.
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\texcludesFile = "+filepath.Join(home, "global-ignore")+"\n"), 0o644)
	os.WriteFile(filepath.Join(home, "global-ignore"), []byte("*.gignored\n"), 0o644)
	code := m.Run()
	cleanupBench()
	os.RemoveAll(home)
	os.Exit(code)
}

// testRepo is a real repository in a temporary directory.
type testRepo struct {
	t   tb
	dir string
}

// tb is the part of testing.TB (and rapid.T) the helpers need.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	r := &testRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	return r
}

// git runs git in the repository and returns stdout; it fails the test on
// error.
func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	out, err := r.gitErr(nil, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *testRepo) gitIn(stdin []byte, args ...string) string {
	r.t.Helper()
	out, err := r.gitErr(stdin, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *testRepo) gitErr(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (r *testRepo) write(path, content string) {
	r.t.Helper()
	r.writeMode(path, content, 0o644)
}

func (r *testRepo) writeMode(path, content string, perm os.FileMode) {
	r.t.Helper()
	full := filepath.Join(r.dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), perm); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(full, perm); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) read(path string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(path)))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

func (r *testRepo) remove(path string) {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.dir, filepath.FromSlash(path))); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) commitAll(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(r.git("rev-parse", "HEAD"))
}

func (r *testRepo) take(opts ...Option) Snapshot {
	r.t.Helper()
	s, err := Take(context.Background(), r.dir, opts...)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// hashObject is `git hash-object PATH`.
func (r *testRepo) hashObject(path string) string {
	r.t.Helper()
	return strings.TrimSpace(r.gitIn([]byte(gitcmd.QuotePath(path)+"\n"), "hash-object", "--stdin-paths"))
}
