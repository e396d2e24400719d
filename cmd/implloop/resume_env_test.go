package main

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// An --env that is not a variable name is a usage error (exit 2) before a
// run is journaled, on run and on resume; a bad name a resume would inherit
// (journaled by an older implloop, which then left the run unfinished)
// is one too, with the way out: pass --env again.
func TestResumeBadEnv(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // plan paths are relative to the process's directory
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
		"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
	} {
		t.Setenv(k, v)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte("# Plan\n\n## Task 1: one\n\n```text path=out/one.txt\none\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		c := exec.Command("git", args...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	implloop := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(args, &ioStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb, workingDir: dir})
		return code, errb.String()
	}
	runs := func() int {
		db, err := sql.Open("sqlite", filepath.Join(dir, ".implloop", "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM runs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if code, stderr := implloop("run", "plan.md", "--agent", "builtin", "--env", "1BAD"); code != exitUsage || !strings.Contains(stderr, `--env "1BAD": not a variable name`) {
		t.Fatalf("run --env 1BAD: exit %d\n%s", code, stderr)
	}
	if code, stderr := implloop("run", "plan.md", "--agent", "builtin"); code != exitDone {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	if code, stderr := implloop("resume", "--env", "1BAD"); code != exitUsage || !strings.Contains(stderr, `not a variable name`) {
		t.Fatalf("resume --env 1BAD: exit %d\n%s", code, stderr)
	}

	// What an older implloop journaled for `run --env 1BAD`.
	db, err := sql.Open("sqlite", filepath.Join(dir, ".implloop", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE runs SET settings = json_set(settings, '$.env', json('["1BAD"]'))`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, stderr := implloop("resume")
	if code != exitUsage || !strings.Contains(stderr, `--env "1BAD" is not a variable name`) ||
		!strings.Contains(stderr, "inherited from run r-") || !strings.Contains(stderr, "hint: pass --env again") {
		t.Fatalf("resume inheriting --env 1BAD: exit %d\n%s", code, stderr)
	}
	if n := runs(); n != 1 {
		t.Fatalf("%d runs journaled, want 1: a refused resume journals nothing", n)
	}
	if code, stderr := implloop("resume", "--env", "GOOD"); code != exitDone {
		t.Fatalf("resume --env GOOD: exit %d\n%s", code, stderr)
	}
}
