package cache

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A journal written at schema 1 (before gates.stands_for) opens, migrates,
// keeps its gates (stands_for reads as "") and takes the new column.
func TestMigrateGatesStandsFor(t *testing.T) {
	root := newRepo(t)
	// In .implloop/, where implloops of that schema kept it: moved, then migrated.
	dir := filepath.Join(root, LegacyDir)
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, "state.db"), url.Values{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		migrations[0],
		"PRAGMA user_version = 1",
		`INSERT INTO runs (id, plan_path, plan_sha256, started_at) VALUES ('r1', 'plan.md', 'x', 1)`,
		`INSERT INTO gates (run_id, task_id, attempt, command, passed, exit_code, at) VALUES ('r1', '2', 1, 'true', 1, 0, 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	j := openT(t, root)
	var v int
	if err := j.st.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion() || v < 2 {
		t.Fatalf("user_version = %d, %v; want %d", v, err, SchemaVersion())
	}
	gs, err := j.Gates("r1", "2")
	if err != nil || len(gs) != 1 || !gs[0].Passed || gs[0].StandsFor != "" {
		t.Fatalf("the old gate after the migration: %+v, %v", gs, err)
	}
	if err := j.PutGate(Gate{RunID: "r1", TaskID: "2", Attempt: 2, Command: "true", Passed: true,
		At: time.UnixMilli(2), StandsFor: "u1:abc"}); err != nil {
		t.Fatal(err)
	}
	if g, ok, err := j.LastGate([]string{"r1"}, "2"); err != nil || !ok || g.StandsFor != "u1:abc" {
		t.Fatalf("LastGate: %+v %v %v, want stands_for u1:abc", g, ok, err)
	}
}

// A journal of schema 5 holds a run pulled from another host, which that
// schema could not mark as pulled: the upgrade to schema 6 marks it (not
// signed), so it does not become trusted as this machine's; a run of this
// host stays this machine's.
func TestMigrateMarksForeignRunsPulled(t *testing.T) {
	root := newRepo(t)
	dir := filepath.Join(root, ".git", "implloop")
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, "state.db"), url.Values{}))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	qs := append([]string(nil), migrations[:5]...)
	qs = append(qs, "PRAGMA user_version = 5",
		`INSERT INTO runs (id, plan_path, plan_sha256, started_at, host) VALUES ('r-mine', 'plan.md', 'x', 1, '`+host+`')`,
		`INSERT INTO runs (id, plan_path, plan_sha256, started_at, host) VALUES ('r-theirs', 'plan.md', 'x', 1, 'mallorys-laptop')`)
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	j := openT(t, root)
	if _, ok, err := j.GetPulled("r-mine"); err != nil || ok {
		t.Errorf("this host's run is marked pulled: %v, %v", ok, err)
	}
	p, ok, err := j.GetPulled("r-theirs")
	if err != nil || !ok || p.Signature != "N" {
		t.Errorf("another host's run after the upgrade: %+v, %v, %v; want pulled, not signed", p, ok, err)
	}
}
