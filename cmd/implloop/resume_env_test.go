package main

import (
	"bytes"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/implloop/implloop/internal/gittest"
)

// An --env that is not a variable name is a usage error (exit 2) before a
// run is journaled, on run and on resume; a bad name a resume would inherit
// (journaled by an older implloop, which then left the run unfinished)
// is one too, with the way out: pass --env again.
func TestResumeBadEnv(t *testing.T) {
	r := gittest.New(t)
	dir := r.Dir
	t.Chdir(dir) // plan paths are relative to the process's directory
	// The git implloop runs is isolated too.
	for k, v := range gittest.Isolation(t.TempDir()) {
		t.Setenv(k, v)
	}
	r.Write("plan.md", "# Plan\n\n## Task 1: one\n\n```text path=out/one.txt\none\n```\n")
	r.Commit("start")
	implloop := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(args, &ioStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb, workingDir: dir})
		return code, errb.String()
	}
	runs := func() int {
		db, err := sql.Open("sqlite", filepath.Join(dir, ".git", "implloop", "state.db"))
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
	db, err := sql.Open("sqlite", filepath.Join(dir, ".git", "implloop", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE runs SET settings = json_set(settings, '$.env', json('["1BAD"]'))`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, stderr := implloop("resume")
	if code != exitUsage || !strings.Contains(stderr, `--env "1BAD": not a variable name`) ||
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
