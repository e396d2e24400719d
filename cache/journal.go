package cache

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // driver "sqlite", pure Go
)

// Errors callers branch on.
var (
	// ErrNoJournal: the repository has no journal yet (nothing ran here).
	ErrNoJournal = errors.New("no journal: nothing has run in this repository")
	// ErrReadOnly: a write through a journal opened with OpenReadOnly.
	ErrReadOnly = errors.New("journal opened read-only")
	// ErrNotFound: no such run (or other row).
	ErrNotFound = errors.New("not found")
	// ErrNewerSchema: the journal was written by a newer implloop.
	ErrNewerSchema = errors.New("journal schema is newer than this implloop")
	// ErrOlderSchema: OpenReadOnly found a journal an older implloop
	// wrote; Open upgrades it.
	ErrOlderSchema = errors.New("journal schema is older than this implloop")
)

// Journal is an open journal. A Journal is safe for concurrent use. There
// is one writing Journal per work tree (the loop's lock sees to that);
// linked worktrees of one repository share the database, and SQLite's
// locking (BEGIN IMMEDIATE under a busy timeout) takes their writers'
// transactions in turn.
//
// Durability: every write is committed before it returns, which survives a
// kill of the process. The writes after which a crash would cost an agent
// call or a fact that cannot be recomputed are also fsynced before they
// return (SQLite synchronous=FULL for that commit): CreateRun, FinishRun,
// StartUnit, FinishUnit, MarkInterrupted, PutGate of a live gate,
// PutBoundary and PutAhead. PutTask, AddReplayedUnit, replayed gates and AppendEvent
// commit with synchronous=NORMAL (WAL): an OS crash or power loss may drop
// them, never corrupt the database, and the next fsynced write (or Close)
// makes them durable too, because WAL commits are ordered. Losing one of
// those only means a resume recomputes it.
type Journal struct {
	dirs     Dirs
	dir      string // dirs.State (dirs.Legacy for a legacy journal read in place)
	dbPath   string
	st       *store
	blobs    *Blobs
	readOnly bool
	cur      *sql.Tx // set on the copy of the Journal that Batch hands out

	// What Open found, for Gone: the database file and the blob store's
	// directory (os.SameFile compares their device and inode numbers).
	dbInfo, objInfo os.FileInfo
	// movedFrom is the legacy directory Open moved the journal out of.
	movedFrom string
}

// store is what every copy of a Journal shares: the database and its
// prepared statements (preparing costs as much as running one of ours).
type store struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// Open opens (creating if needed) the journal of the work tree at repoRoot
// for writing, in the git directory (see [StateDir]), migrating its schema
// to the current version. A journal an older implloop kept in
// <repo>/.implloop is moved there first, once (see [Journal.MovedFrom]).
func Open(repoRoot string) (*Journal, error) {
	d, err := StateDir(repoRoot)
	if err != nil {
		return nil, err
	}
	return OpenDirs(d)
}

// OpenDirs is Open for the work tree whose state directories d are (as
// StateDir resolved them): a caller that opens the journal of one work
// tree run after run (a worker) resolves them once.
func OpenDirs(d Dirs) (*Journal, error) {
	dir := d.State
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	unlock, err := lockState(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer unlock()
	moved, err := moveLegacy(d)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{dirs: d, dir: dir, dbPath: filepath.Join(dir, "state.db")}
	if moved {
		j.movedFrom = d.Legacy
	}
	j.blobs = &Blobs{dir: filepath.Join(dir, "objects")}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", dsn(j.dbPath, q))
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	// Two connections: transactions run on one (tx takes it with db.Conn,
	// so the per-commit synchronous switch applies to the connection that
	// commits), while a statement seen for the first time inside a
	// transaction is prepared on the other; database/sql then re-prepares it
	// once per connection and reuses it after.
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	j.st = &store{db: db, stmts: map[string]*sql.Stmt{}}
	if err := j.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("journal %s: %w", j.dbPath, err)
	}
	if j.dbInfo, err = os.Stat(j.dbPath); err == nil {
		j.objInfo, err = os.Stat(j.blobs.dir)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	j.blobs.removeStaleTemps(time.Hour)
	return j, nil
}

// OpenReadOnly opens the journal for reading only. It creates and modifies
// no file: without a journal it returns ErrNoJournal, and it never creates
// the state directory, the database's -wal or -shm files, or blobs. A
// journal an older implloop kept in <repo>/.implloop, not moved yet, is
// read where it is. Write methods return ErrReadOnly.
func OpenReadOnly(repoRoot string) (*Journal, error) {
	d, err := StateDir(repoRoot)
	if err != nil {
		return nil, err
	}
	dir := d.State
	if !exists(filepath.Join(dir, "state.db")) && exists(filepath.Join(d.Legacy, "state.db")) {
		dir = d.Legacy
	}
	j := &Journal{dirs: d, dir: dir, dbPath: filepath.Join(dir, "state.db"), readOnly: true}
	j.blobs = &Blobs{dir: filepath.Join(dir, "objects"), readOnly: true}
	if _, err := os.Stat(j.dbPath); errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoJournal
	} else if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", dsn(j.dbPath, q))
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j.st = &store{db: db, stmts: map[string]*sql.Stmt{}}
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		db.Close()
		return nil, fmt.Errorf("journal %s: %w", j.dbPath, err)
	}
	switch {
	case v == 0:
		db.Close()
		return nil, ErrNoJournal
	case v > len(migrations):
		db.Close()
		return nil, fmt.Errorf("journal %s: schema %d > %d: %w", j.dbPath, v, len(migrations), ErrNewerSchema)
	case v < len(migrations):
		db.Close()
		return nil, fmt.Errorf("journal %s: schema %d is older than %d; any writing command (run, resume) upgrades it: %w", j.dbPath, v, len(migrations), ErrOlderSchema)
	}
	return j, nil
}

func dsn(path string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// Close closes the journal. The writer checkpoints the WAL into the main
// file and switches the file back to rollback mode, so that read-only
// openers find one self-contained file and create nothing next to it. If a
// reader is attached at that moment the switch is skipped; the WAL files
// then stay for the readers and the next writer's Close tidies up.
func (j *Journal) Close() error {
	if j.st == nil || j.st.db == nil {
		return nil
	}
	db := j.st.db
	j.st.mu.Lock()
	for _, st := range j.st.stmts {
		st.Close()
	}
	j.st.stmts, j.st.db = nil, nil
	j.st.mu.Unlock()
	if !j.readOnly {
		// Leaving WAL mode needs the only connection to the file.
		db.SetMaxIdleConns(1)
		ctx := context.Background()
		if conn, err := db.Conn(ctx); err == nil {
			_, _ = conn.ExecContext(ctx, "PRAGMA busy_timeout=0")
			_, _ = conn.ExecContext(ctx, "PRAGMA synchronous=FULL")
			_, _ = conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
			_, _ = conn.ExecContext(ctx, "PRAGMA journal_mode=DELETE")
			conn.Close()
		}
	}
	return db.Close()
}

// Root is the repository root the journal belongs to.
func (j *Journal) Root() string { return j.dirs.Root }

// Dir is the journal's directory: $(git rev-parse --git-common-dir)/implloop,
// where reports and the agents' files of a run go too (runs/<id>/). For a
// legacy journal read in place by OpenReadOnly, <repo>/.implloop.
func (j *Journal) Dir() string { return j.dir }

// Dirs are the directories the journal was opened with.
func (j *Journal) Dirs() Dirs { return j.dirs }

// MovedFrom is the directory Open moved an older implloop's journal out
// of (<repo>/.implloop), "" when it moved nothing. Open moves a journal
// once; the caller says so to the user (cache prints nothing).
func (j *Journal) MovedFrom() string { return j.movedFrom }

// Blobs is the journal's blob store.
func (j *Journal) Blobs() *Blobs { return j.blobs }

// NewBlobWriter starts a streaming blob write (see BlobWriter).
func (j *Journal) NewBlobWriter() (*BlobWriter, error) { return j.blobs.NewWriter() }

// PutBlob stores b and returns its hash.
func (j *Journal) PutBlob(b []byte) (string, error) { return j.blobs.Put(b) }

// ReadBlob reads a whole blob.
func (j *Journal) ReadBlob(h string) ([]byte, error) { return j.blobs.ReadAll(h) }

// prep returns the prepared statement for q, preparing it once on the pool.
// wait bounds how long it may wait for a free connection (0: no bound).
func (j *Journal) prep(q string, wait time.Duration) (*sql.Stmt, error) {
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	if j.st.db == nil {
		return nil, errors.New("journal is closed")
	}
	if st, ok := j.st.stmts[q]; ok {
		return st, nil
	}
	ctx := context.Background()
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	st, err := j.st.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	j.st.stmts[q] = st
	return st, nil
}

// stmt is q prepared, bound to the current transaction if there is one.
//
// Statements are prepared once on the pool and cached (re-preparing every
// write costs a third of a replay-heavy resume). Inside a transaction,
// preparing on the pool needs a second connection while the transaction
// holds one; if none comes free quickly (another reader's open rows), the
// statement is prepared on the transaction's own connection instead of
// waiting forever.
func (j *Journal) stmt(q string) (*sql.Stmt, error) {
	if j.cur == nil {
		return j.prep(q, 0)
	}
	st, err := j.prep(q, 200*time.Millisecond)
	if err != nil {
		return j.cur.Prepare(q)
	}
	return j.cur.Stmt(st), nil
}

func (j *Journal) query(q string, args ...any) (*sql.Rows, error) {
	st, err := j.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.Query(args...)
}

// scanner is what a row is read from: *sql.Rows, or row.
type scanner interface{ Scan(...any) error }

// queryAll runs q and reads every row it returns with scan, in order.
func queryAll[T any](j *Journal, q string, args []any, scan func(scanner) (T, error)) ([]T, error) {
	rows, err := j.query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// row is sql.Row for a query that may fail to prepare.
type row struct {
	rows *sql.Rows
	err  error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

func (j *Journal) queryRow(q string, args ...any) row {
	rows, err := j.query(q, args...)
	return row{rows, err}
}

// run executes a write statement; only inside tx (w.cur is set).
func (j *Journal) run(q string, args ...any) (sql.Result, error) {
	st, err := j.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.Exec(args...)
}

// exec runs one write statement in its own transaction; durable commits are
// fsynced before exec returns.
func (j *Journal) exec(durable bool, q string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := j.tx(durable, func(w *Journal) error {
		var err error
		res, err = w.run(q, args...)
		return err
	})
	return res, err
}

// Batch runs fn in one transaction: the writes fn makes through b commit
// together when fn returns nil, or not at all. Reads through b see them.
// It is for stretches of many small writes (replaying a task: its unit,
// gate, task row and events), where one commit instead of several is most
// of the cost. durable decides the commit's fsync for the whole batch.
// Use only b inside fn: the journal has one connection, which b holds.
func (j *Journal) Batch(durable bool, fn func(b *Journal) error) error {
	return j.tx(durable, fn)
}

// tx runs fn in one write transaction (BEGIN IMMEDIATE, so a second writer
// waits on the busy timeout instead of failing at upgrade). Inside a Batch
// it joins the batch's transaction.
func (j *Journal) tx(durable bool, fn func(w *Journal) error) (err error) {
	if j.readOnly {
		return ErrReadOnly
	}
	if j.cur != nil {
		return fn(j)
	}
	if j.st == nil || j.st.db == nil {
		return errors.New("journal is closed")
	}
	ctx := context.Background()
	conn, err := j.st.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// The fsync choice is per commit; SQLite refuses to change it inside a
	// transaction, so it is made before BEGIN.
	if durable {
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=FULL"); err != nil {
			return err
		}
		defer func() {
			if _, e := conn.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); e != nil && err == nil {
				err = e
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	w := *j
	w.cur = tx
	if err := fn(&w); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
