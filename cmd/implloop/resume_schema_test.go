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

// A journal an older implloop wrote (schema 3, before runs.inputs) is read
// by resume, which upgrades it, not refused the way read-only commands
// refuse it; the upgraded parent has no inputs digest, so that first resume
// is planned in full, and the one after it is answered without a run.
func TestResumeUpgradesAnOlderJournal(t *testing.T) {
	r := gittest.New(t)
	dir := r.Dir
	t.Chdir(dir)
	for k, v := range gittest.Isolation(t.TempDir()) {
		t.Setenv(k, v)
	}
	r.Write("plan.md", "# Plan\n\n## Task 1: one\n\n```text path=out/one.txt\none\n```\n")
	r.Commit("start")
	implloop := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(args, &ioStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb, workingDir: dir})
		return code, out.String(), errb.String()
	}
	if code, _, stderr := implloop("run", "plan.md", "--agent", "builtin"); code != exitDone {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, ".git", "implloop", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	// Back to schema 3, before runs.inputs (4), the boundaries_tree
	// index (5), the pulled table (6) and the ahead table (7).
	if _, err := db.Exec(`DROP TABLE ahead; DROP TABLE pulled; DROP INDEX boundaries_tree; ALTER TABLE runs DROP COLUMN inputs; PRAGMA user_version = 3`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if code, _, stderr := implloop("show"); code == exitDone || !strings.Contains(stderr, "upgrades it") {
		t.Errorf("show on the older journal: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := implloop("resume")
	if code != exitDone || !strings.Contains(stdout, "units: 0 live, 1 replayed") || !strings.Contains(stderr, "nothing changed since") {
		t.Fatalf("resume on the older journal: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = implloop("resume")
	if code != exitDone || !strings.Contains(stdout, "DONE 1/1, and nothing changed since: no task ran") {
		t.Fatalf("the resume after: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
