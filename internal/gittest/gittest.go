// Package gittest makes real git repositories in temporary directories for
// the module's tests, and runs git in them isolated from the developer's
// configuration: an empty HOME, no system or global config, a fixed author
// and committer, and main as the default branch.
//
// Only tests import it. It does not import package testing: its helpers take
// the small TB interface, which *testing.T and *testing.B satisfy.
package gittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// TB is the part of testing.TB the helpers need.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	TempDir() string
}

// The fixed identity every isolated git commits as.
const (
	Name  = "implloop test"
	Email = "test@example.com"
)

// leaky are the variables that point git at another repository (as they are
// set when the tests run inside a git hook); the isolated environment drops
// them.
var leaky = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_CEILING_DIRECTORIES"}

// Isolation is the variables that isolate git, with home as HOME.
func Isolation(home string) map[string]string {
	return map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME":     Name,
		"GIT_AUTHOR_EMAIL":    Email,
		"GIT_COMMITTER_NAME":  Name,
		"GIT_COMMITTER_EMAIL": Email,
		"GIT_CONFIG_COUNT":    "1",
		"GIT_CONFIG_KEY_0":    "init.defaultBranch",
		"GIT_CONFIG_VALUE_0":  "main",
	}
}

// Isolate isolates every git the process starts from now on, the code under
// test's included: it sets Isolation's variables with a new empty directory
// as HOME, and unsets the ones that point git elsewhere. It is for TestMain,
// which removes the returned HOME when the tests are done.
func Isolate(prefix string) (home string, err error) {
	home, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	for k, v := range Isolation(home) {
		if err := os.Setenv(k, v); err != nil {
			return home, err
		}
	}
	for _, k := range leaky {
		if err := os.Unsetenv(k); err != nil {
			return home, err
		}
	}
	return home, nil
}

// Repo is a git repository in a directory, and the isolated environment git
// runs in there.
type Repo struct {
	Dir  string
	t    TB
	home string
}

// New makes an empty repository on branch main in a new temporary directory.
func New(t TB) *Repo {
	t.Helper()
	r := At(t, t.TempDir())
	r.Git("init", "-q", "-b", "main")
	return r
}

// At is a handle on the repository (or the directory to run git in) at dir.
func At(t TB, dir string) *Repo {
	return &Repo{Dir: dir, t: t, home: t.TempDir()}
}

// Env is the process's environment with git isolated: Isolation's
// variables, and none of those that would point git at another repository.
func (r *Repo) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !isLeaky(k) {
			env = append(env, kv)
		}
	}
	for k, v := range Isolation(r.home) {
		env = append(env, k+"="+v)
	}
	return env
}

func isLeaky(k string) bool {
	for _, l := range leaky {
		if k == l {
			return true
		}
	}
	return false
}

// Git runs git with args in the repository and returns its standard output;
// it fails the test if git fails.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	out, err := r.GitErr(args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// GitErr is Git that returns git's failure (with its standard error) instead
// of failing the test.
func (r *Repo) GitErr(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = r.Env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// Path is the absolute path of the slash-separated path in the repository.
func (r *Repo) Path(path string) string {
	return filepath.Join(r.Dir, filepath.FromSlash(path))
}

// Write writes content to path in the repository (mode 0644), making the
// directories it needs.
func (r *Repo) Write(path, content string) {
	r.t.Helper()
	full := r.Path(path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Remove removes path from the worktree.
func (r *Repo) Remove(path string) {
	r.t.Helper()
	if err := os.Remove(r.Path(path)); err != nil {
		r.t.Fatal(err)
	}
}

// Commit stages everything and commits it (even nothing) with msg, and
// returns the new HEAD.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(r.Git("rev-parse", "HEAD"))
}
