package cache

import (
	"fmt"
	"os"
	"time"
)

// migrations are applied in order; the database's PRAGMA user_version is
// the number applied. Never edit one that has shipped: append a new one.
var migrations = []string{
	// 1: the initial schema. Times are Unix milliseconds (UTC); JSON columns
	// hold JSON text; blob columns hold a blob-store hash ("" when absent).
	`
CREATE TABLE runs (
	id          TEXT PRIMARY KEY,
	parent_id   TEXT REFERENCES runs(id),
	plan_path   TEXT NOT NULL,
	plan_sha256 TEXT NOT NULL,
	settings    TEXT NOT NULL DEFAULT '{}',
	verdict     TEXT NOT NULL DEFAULT '',
	exit_code   INTEGER,
	started_at  INTEGER NOT NULL,
	finished_at INTEGER,
	pid         INTEGER NOT NULL DEFAULT 0,
	host        TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX runs_started ON runs(started_at);

CREATE TABLE tasks (
	run_id       TEXT NOT NULL REFERENCES runs(id),
	task_id      TEXT NOT NULL,
	ordinal      INTEGER NOT NULL,
	title        TEXT NOT NULL DEFAULT '',
	status       TEXT NOT NULL CHECK (status IN ('pending','running','done','blocked','skipped','interrupted')),
	source       TEXT NOT NULL DEFAULT 'none' CHECK (source IN ('live','replayed','mixed','none')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	started_at   INTEGER,
	finished_at  INTEGER,
	duration_ms  INTEGER NOT NULL DEFAULT 0,
	block_reason TEXT NOT NULL DEFAULT '',
	lost_paths   TEXT NOT NULL DEFAULT '[]',
	concerns     TEXT NOT NULL DEFAULT '[]',
	PRIMARY KEY (run_id, task_id)
) STRICT;

CREATE TABLE units (
	run_id             TEXT NOT NULL REFERENCES runs(id),
	unit_id            TEXT NOT NULL,
	task_id            TEXT NOT NULL,
	role               TEXT NOT NULL,
	attempt            INTEGER NOT NULL,
	identity           TEXT NOT NULL,
	preimage           BLOB NOT NULL,
	status             TEXT NOT NULL CHECK (status IN ('running','completed','failed','interrupted')),
	prompt             TEXT NOT NULL DEFAULT '',
	stdout             TEXT NOT NULL DEFAULT '',
	stderr             TEXT NOT NULL DEFAULT '',
	result             TEXT NOT NULL DEFAULT '',
	tokens_in          INTEGER NOT NULL DEFAULT 0,
	tokens_out         INTEGER NOT NULL DEFAULT 0,
	cache_read         INTEGER NOT NULL DEFAULT 0,
	cache_write        INTEGER NOT NULL DEFAULT 0,
	cost_usd           REAL NOT NULL DEFAULT 0,
	exit_code          INTEGER,
	error              TEXT NOT NULL DEFAULT '',
	replayed_from_run  TEXT NOT NULL DEFAULT '',
	replayed_from_unit TEXT NOT NULL DEFAULT '',
	started_at         INTEGER NOT NULL,
	finished_at        INTEGER,
	duration_ms        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, unit_id)
) STRICT;
CREATE INDEX units_identity ON units(identity, status);
CREATE INDEX units_task ON units(task_id, role, attempt);

CREATE TABLE gates (
	run_id      TEXT NOT NULL REFERENCES runs(id),
	task_id     TEXT NOT NULL,
	attempt     INTEGER NOT NULL,
	command     TEXT NOT NULL,
	passed      INTEGER NOT NULL,
	exit_code   INTEGER NOT NULL,
	output      TEXT NOT NULL DEFAULT '',
	feedback    TEXT NOT NULL DEFAULT '',
	replayed    INTEGER NOT NULL DEFAULT 0,
	duration_ms INTEGER NOT NULL DEFAULT 0,
	at          INTEGER NOT NULL,
	PRIMARY KEY (run_id, task_id, attempt)
) STRICT;

CREATE TABLE boundaries (
	run_id      TEXT NOT NULL REFERENCES runs(id),
	seq         INTEGER NOT NULL,
	after_task  TEXT NOT NULL DEFAULT '',
	head        TEXT NOT NULL DEFAULT '',
	snapshot    TEXT NOT NULL DEFAULT '{}',
	verdict     TEXT NOT NULL DEFAULT '{}',
	salvage_ref TEXT NOT NULL DEFAULT '',
	at          INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq)
) STRICT;

CREATE TABLE events (
	run_id TEXT NOT NULL REFERENCES runs(id),
	seq    INTEGER NOT NULL,
	type   TEXT NOT NULL,
	data   TEXT NOT NULL DEFAULT '{}',
	at     INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq)
) STRICT;
`,
	// 2: gates.stands_for, the identity a passing recheck gate stands in
	// for (see Gate.StandsFor). Rows from before it read as "".
	`ALTER TABLE gates ADD COLUMN stands_for TEXT NOT NULL DEFAULT '';`,
	// 3: boundaries are commits (refs/implloop/runs/<run>): a row keeps the
	// commit and its tree, and its snapshot column no longer holds the
	// dirty set ('{}'). Rows from before keep their snapshot JSON and read
	// commit_id = ''.
	`ALTER TABLE boundaries ADD COLUMN commit_id TEXT NOT NULL DEFAULT '';
ALTER TABLE boundaries ADD COLUMN tree TEXT NOT NULL DEFAULT '';`,
	// 4: runs.inputs, the digest of everything a run's unit identities are
	// computed from (see Run.Inputs). Rows from before it read as "": such
	// a run is never taken as up to date without a full resume.
	`ALTER TABLE runs ADD COLUMN inputs TEXT NOT NULL DEFAULT '';`,
	// 5: boundaries by tree, for a replay across runs: which runs did a
	// task from the tree this run is at, in one indexed look
	// (LiveElsewhereFrom), however many runs the journal holds.
	`CREATE INDEX boundaries_tree ON boundaries(tree);`,
	// 6: pulled, one row per run a pull imported: where from, the records
	// commit, and what git's verification of its signature said (see
	// Pulled). A run without a row was made here. The upgrade marks
	// every run another host made (markForeignRuns): before it, a pull
	// recorded no origin.
	`CREATE TABLE pulled (
	run_id    TEXT PRIMARY KEY REFERENCES runs(id),
	remote    TEXT NOT NULL DEFAULT '',
	commit_id TEXT NOT NULL,
	author    TEXT NOT NULL DEFAULT '',
	signature TEXT NOT NULL DEFAULT 'N',
	signer    TEXT NOT NULL DEFAULT '',
	key       TEXT NOT NULL DEFAULT '',
	at        INTEGER NOT NULL
) STRICT;`,
	// 7: calls made ahead (--jobs), journaled the moment they return,
	// before their task's turn (see AheadCall): what a crash or an
	// interrupt leaves unsettled, a resume takes instead of paying again.
	`CREATE TABLE ahead (
	run_id      TEXT NOT NULL REFERENCES runs(id),
	unit_id     TEXT NOT NULL,
	task_id     TEXT NOT NULL,
	role        TEXT NOT NULL,
	attempt     INTEGER NOT NULL,
	identity    TEXT NOT NULL,
	preimage    BLOB NOT NULL,
	prompt      TEXT NOT NULL DEFAULT '',
	stdout      TEXT NOT NULL DEFAULT '',
	stderr      TEXT NOT NULL DEFAULT '',
	result      TEXT NOT NULL,
	run_error   TEXT NOT NULL DEFAULT '',
	tokens_in   INTEGER NOT NULL DEFAULT 0,
	tokens_out  INTEGER NOT NULL DEFAULT 0,
	cost_usd    REAL NOT NULL DEFAULT 0,
	base        TEXT NOT NULL,
	tree        TEXT NOT NULL,
	commit_id   TEXT NOT NULL DEFAULT '',
	worktree    TEXT NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL,
	settled_by  TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, unit_id)
) STRICT;
CREATE INDEX ahead_identity ON ahead(identity, settled_by);`,
}

// afterMigration are the steps a migration needs beyond its SQL, by the
// version it brings the journal to, run in its transaction.
var afterMigration = map[int]func(w *Journal) error{
	6: markForeignRuns,
}

// markForeignRuns gives every run another host made a pulled row saying
// nothing of a signature: before schema 6 a pull recorded no origin, and
// a run without a row counts as made on this machine, which is trusted.
// A run that came through a pull before then must not become trusted by
// the upgrade; the host it names is the one sign of where it came from.
// (A run of this machine under an earlier host name is then untrusted
// too: it stays readable, and resume --run takes it with a warning.)
func markForeignRuns(w *Journal) error {
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("host name: %w", err)
	}
	_, err = w.cur.Exec(`INSERT INTO pulled (run_id, commit_id, signature, at)
		SELECT id, '', 'N', ? FROM runs WHERE host != ?`, ms(time.Now()), host)
	return err
}

// SchemaVersion is the schema version this implloop writes.
func SchemaVersion() int { return len(migrations) }

// migrate applies the migrations the database lacks, each in its own
// transaction together with its user_version bump, so a crash mid-way
// leaves a database at a well-defined version.
func (j *Journal) migrate() error {
	var v int
	if err := j.st.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("schema %d > %d: %w", v, len(migrations), ErrNewerSchema)
	}
	for i := v; i < len(migrations); i++ {
		err := j.tx(true, func(w *Journal) error {
			// Another writer may have migrated since we looked.
			var now int
			if err := w.queryRow("PRAGMA user_version").Scan(&now); err != nil {
				return err
			}
			if now > i {
				return nil
			}
			if _, err := w.cur.Exec(migrations[i]); err != nil {
				return err
			}
			if step := afterMigration[i+1]; step != nil {
				if err := step(w); err != nil {
					return err
				}
			}
			_, err := w.cur.Exec(fmt.Sprintf("PRAGMA user_version = %d", i+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	return nil
}
