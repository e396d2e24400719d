package cache

import (
	"database/sql"
	"fmt"
	"iter"
	"strings"
)

// Records are the durable facts of one run: its row and every row that
// belongs to it, as they travel between repositories (package travel
// writes them as git objects and reads them back). Blobs are named by
// hash; they travel beside the rows.
type Records struct {
	Run        Run        `json:"run"`
	Tasks      []Task     `json:"tasks"`
	Units      []Unit     `json:"units"`
	Gates      []Gate     `json:"gates"`
	Boundaries []Boundary `json:"boundaries"`
	Events     []Event    `json:"events"`
}

// Records reads run runID's records.
func (j *Journal) Records(runID string) (*Records, error) {
	r, err := j.GetRun(runID)
	if err != nil {
		return nil, err
	}
	rec := &Records{Run: *r}
	if rec.Tasks, err = j.Tasks(runID); err != nil {
		return nil, err
	}
	if rec.Units, err = j.queryUnits(`WHERE run_id = ? ORDER BY started_at, rowid`, runID); err != nil {
		return nil, fmt.Errorf("units of %s: %w", runID, err)
	}
	if rec.Gates, err = j.queryGates(`WHERE run_id = ? ORDER BY task_id, attempt`, runID); err != nil {
		return nil, fmt.Errorf("gates of %s: %w", runID, err)
	}
	if rec.Boundaries, err = j.Boundaries(runID); err != nil {
		return nil, err
	}
	if rec.Events, err = j.Events(runID); err != nil {
		return nil, err
	}
	return rec, nil
}

// Blobs are the blob hashes the records name, each once, in the order
// they are first named.
func (r *Records) Blobs() []string {
	var out []string
	seen := map[string]bool{}
	add := func(hs ...string) {
		for _, h := range hs {
			if h != "" && !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	for _, u := range r.Units {
		add(u.Prompt, u.Stdout, u.Stderr, u.Result)
	}
	for _, g := range r.Gates {
		add(g.Output)
	}
	return out
}

// ImportRecords adds runs written elsewhere to the journal, in one durable
// transaction: all of them or, on any error, none. recs may yield them as
// they are decoded, in any order: a run's parent is checked once every
// run is in (foreign keys are deferred to the commit), so the rows go in
// while the caller still reads the next runs. A run already in the
// journal is skipped (an import is idempotent); a run whose parent is
// neither in the journal nor in recs, or whose lineage in recs is a
// cycle, is refused. Every row must belong to its run, and every blob the
// rows name must be in the blob store before the transaction commits:
// before, when not nil, is called after the rows are written and before
// they are checked, so that the caller can finish its own checks and
// store the blobs while the rows go in (its error rolls the import back);
// it is handed the transaction's journal, to add rows of its own (how
// each run was pulled: PutPulled). It returns the ids of the runs it added, in the order recs yielded
// them.
func (j *Journal) ImportRecords(recs iter.Seq[*Records], before func(w *Journal) error) ([]string, error) {
	var added []string
	err := j.tx(true, func(w *Journal) error {
		added = added[:0]
		if _, err := w.run("PRAGMA defer_foreign_keys = ON"); err != nil {
			return err
		}
		fresh := map[string]*Records{}
		var order []*Records
		for rec := range recs {
			id := rec.Run.ID
			if _, ok := fresh[id]; ok {
				continue
			}
			if _, err := w.GetRun(id); err == nil {
				continue
			}
			if err := rec.check(); err != nil {
				return err
			}
			if err := w.insertRecords(rec); err != nil {
				return fmt.Errorf("import run %s: %w", id, err)
			}
			added, fresh[id], order = append(added, id), rec, append(order, rec)
		}
		if before != nil {
			if err := before(w); err != nil {
				return err
			}
		}
		for _, rec := range order {
			id := rec.Run.ID
			for p, n := rec.Run.ParentID, 0; p != ""; n++ {
				if n > len(order) {
					return fmt.Errorf("run %s: its lineage is a cycle", id)
				}
				r, ok := fresh[p]
				if !ok {
					if _, err := w.GetRun(p); err != nil {
						return fmt.Errorf("run %s resumes run %s, which is not in the journal", id, p)
					}
					break
				}
				p = r.Run.ParentID
			}
			for _, h := range rec.Blobs() {
				if !w.blobs.Has(h) {
					return fmt.Errorf("run %s: blob %s is not in the blob store", id, h)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return added, nil
}

// check refuses rows that do not belong to the run they travel with.
func (r *Records) check() error {
	id := r.Run.ID
	if id == "" {
		return fmt.Errorf("a run without an id")
	}
	bad := func(what, got string) error {
		return fmt.Errorf("run %s: a %s row of run %q", id, what, got)
	}
	if got, ok := otherRun(r.Tasks, id, func(t Task) string { return t.RunID }); ok {
		return bad("task", got)
	}
	if got, ok := otherRun(r.Units, id, func(u Unit) string { return u.RunID }); ok {
		return bad("unit", got)
	}
	if got, ok := otherRun(r.Gates, id, func(g Gate) string { return g.RunID }); ok {
		return bad("gate", got)
	}
	if got, ok := otherRun(r.Events, id, func(e Event) string { return e.RunID }); ok {
		return bad("event", got)
	}
	for i, b := range r.Boundaries {
		if b.RunID != id {
			return bad("boundary", b.RunID)
		}
		if b.Seq != i {
			return fmt.Errorf("run %s: boundary %d has seq %d: the sequence has a gap", id, i, b.Seq)
		}
	}
	return nil
}

// insertChunk is how many rows insertRows writes with one statement.
const insertChunk = 64

// insertRows inserts rows (values in the order of cols) into table, up
// to insertChunk rows a statement: an import writes tens of thousands of
// rows, and one statement each costs most of the time in the statement
// round trips, not in SQLite's B-trees. Only inside tx.
func (w *Journal) insertRows(table, cols string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(rows[0])), ", ") + ")"
	stmt := func(n int) string {
		return "INSERT INTO " + table + " (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
	}
	// Rows go insertChunk a statement, the rest in statements of 32, 16,
	// ... 1 rows (a run of 100 tasks: 64, 32 and 4, not 64 and 36 of
	// one), each looked up once per call: their text is long, and each
	// look hashes it.
	stmts := map[int]*sql.Stmt{}
	args := make([]any, 0, insertChunk*len(rows[0]))
	for len(rows) > 0 {
		n := insertChunk
		for n > len(rows) {
			n /= 2
		}
		st, ok := stmts[n]
		if !ok {
			var err error
			if st, err = w.stmt(stmt(n)); err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			stmts[n] = st
		}
		args = args[:0]
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		if _, err := st.Exec(args...); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
		rows = rows[n:]
	}
	return nil
}

// otherRun is the first run id of rows that is not id.
func otherRun[T any](rows []T, id string, runOf func(T) string) (string, bool) {
	for _, row := range rows {
		if got := runOf(row); got != id {
			return got, true
		}
	}
	return "", false
}

// insertRecords writes the rows as they are, timestamps and all; only
// inside tx.
func (w *Journal) insertRecords(rec *Records) error {
	r := rec.Run
	settings, err := rawOr(r.Settings, "{}")
	if err != nil {
		return fmt.Errorf("settings %w", err)
	}
	var exit any
	if r.Finished() {
		exit = r.ExitCode
	}
	if _, err := w.run(`INSERT INTO runs (id, parent_id, plan_path, plan_sha256, settings, verdict, exit_code,
			started_at, finished_at, pid, host, inputs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, nullStr(r.ParentID), r.PlanPath, r.PlanSHA256, settings, r.Verdict, exit, ms(r.StartedAt),
		ms(r.FinishedAt), r.PID, r.Host, r.Inputs); err != nil {
		return err
	}
	var rows [][]any
	for _, t := range rec.Tasks {
		if t.Source == "" {
			t.Source = SourceNone
		}
		rows = append(rows, []any{t.RunID, t.TaskID, t.Ordinal, t.Title, string(t.Status), string(t.Source), t.Attempts,
			ms(t.StartedAt), ms(t.FinishedAt), t.Duration.Milliseconds(), t.BlockReason,
			pathList(t.LostPaths), jsonList(t.Concerns)})
	}
	if err := w.insertRows("tasks", taskCols, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, u := range rec.Units {
		rows = append(rows, []any{u.RunID, u.UnitID, u.TaskID, u.Role, u.Attempt, u.Identity, []byte(u.Preimage), string(u.Status),
			u.Prompt, u.Stdout, u.Stderr, u.Result, u.TokensIn, u.TokensOut, u.CacheRead, u.CacheWrite, u.CostUSD,
			u.ExitCode, u.Error, u.ReplayedFromRun, u.ReplayedFromUnit, ms(u.StartedAt), ms(u.FinishedAt),
			u.Duration.Milliseconds()})
	}
	if err := w.insertRows("units", unitCols, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, g := range rec.Gates {
		rows = append(rows, []any{g.RunID, g.TaskID, g.Attempt, g.Command, g.Passed, g.ExitCode, g.Output, g.Feedback, g.Replayed,
			g.Duration.Milliseconds(), ms(g.At), g.StandsFor})
	}
	if err := w.insertRows("gates", gateCols, rows); err != nil {
		return err
	}
	for _, b := range rec.Boundaries {
		snap, err := rawOr(b.Snapshot, "{}")
		if err != nil {
			return fmt.Errorf("boundary %d: snapshot %w", b.Seq, err)
		}
		verdict, err := rawOr(b.Verdict, "{}")
		if err != nil {
			return fmt.Errorf("boundary %d: verdict %w", b.Seq, err)
		}
		if _, err := w.run(`INSERT INTO boundaries (run_id, seq, after_task, head, snapshot, verdict, salvage_ref, at, commit_id, tree)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, b.RunID, b.Seq, b.AfterTask, b.Head, snap, verdict, b.SalvageRef,
			ms(b.At), b.Commit, b.Tree); err != nil {
			return err
		}
	}
	for _, e := range rec.Events {
		data, err := rawOr(e.Data, "{}")
		if err != nil {
			return fmt.Errorf("event %d: data %w", e.Seq, err)
		}
		if _, err := w.run(`INSERT INTO events (run_id, seq, type, data, at) VALUES (?, ?, ?, ?, ?)`,
			e.RunID, e.Seq, e.Type, data, ms(e.At)); err != nil {
			return err
		}
	}
	return nil
}
