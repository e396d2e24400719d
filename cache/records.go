package cache

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// AgentFailed is the Command of the gate row an attempt records when its
// agent call itself failed (non-zero exit, timeout): no gate ran, and
// Feedback says why the call failed. The row carries that feedback to the
// next attempt, also across a resume; reports do not count it as a gate.
const AgentFailed = "(agent)"

// Gate is one run of a task's verify command after an attempt.
type Gate struct {
	RunID    string        `json:"run_id"`
	TaskID   string        `json:"task_id"`
	Attempt  int           `json:"attempt"`
	Command  string        `json:"command"`
	Passed   bool          `json:"passed"`
	ExitCode int           `json:"exit_code"`
	Output   string        `json:"output,omitempty"`   // blob hash of the combined output
	Feedback string        `json:"feedback,omitempty"` // what the next attempt is told (the output's tail)
	Replayed bool          `json:"replayed"`           // journaled result carried over, not re-run
	Duration time.Duration `json:"duration_ns"`
	At       time.Time     `json:"at"`
	// StandsFor is set on a recheck gate that passed (a blocked task fixed
	// outside the loop, no agent call): the identity of the unit that
	// would have run next, computed when it passed. A later resume replays
	// the fix only while the task still computes that identity.
	StandsFor string `json:"stands_for,omitempty"`
}

// PutGate inserts or replaces the gate of (run, task, attempt). A zero At
// means now. A live gate is durable; a replayed one is not fsynced on its
// own (see Journal).
func (j *Journal) PutGate(g Gate) error {
	if g.At.IsZero() {
		g.At = time.Now()
	}
	_, err := j.exec(!g.Replayed, `INSERT INTO gates (run_id, task_id, attempt, command, passed, exit_code,
			output, feedback, replayed, duration_ms, at, stands_for) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, task_id, attempt) DO UPDATE SET command = excluded.command,
			passed = excluded.passed, exit_code = excluded.exit_code, output = excluded.output,
			feedback = excluded.feedback, replayed = excluded.replayed,
			duration_ms = excluded.duration_ms, at = excluded.at, stands_for = excluded.stands_for`,
		g.RunID, g.TaskID, g.Attempt, g.Command, g.Passed, g.ExitCode, g.Output, g.Feedback, g.Replayed,
		g.Duration.Milliseconds(), ms(g.At), g.StandsFor)
	if err != nil {
		return fmt.Errorf("put gate %s/%s~a%d: %w", g.RunID, g.TaskID, g.Attempt, err)
	}
	return nil
}

const gateCols = `run_id, task_id, attempt, command, passed, exit_code, output, feedback, replayed, duration_ms, at, stands_for`

func (j *Journal) queryGates(where string, args ...any) ([]Gate, error) {
	return queryAll(j, `SELECT `+gateCols+` FROM gates `+where, args, scanGate)
}

func scanGate(sc scanner) (Gate, error) {
	var g Gate
	var dur int64
	var at sql.NullInt64
	err := sc.Scan(&g.RunID, &g.TaskID, &g.Attempt, &g.Command, &g.Passed, &g.ExitCode, &g.Output,
		&g.Feedback, &g.Replayed, &dur, &at, &g.StandsFor)
	g.Duration = time.Duration(dur) * time.Millisecond
	g.At = fromMS(at)
	return g, err
}

// Gates returns a task's gates in a run by attempt; every task's (in run
// order of time) when taskID is "".
func (j *Journal) Gates(runID, taskID string) ([]Gate, error) {
	var gs []Gate
	var err error
	if taskID == "" {
		gs, err = j.queryGates(`WHERE run_id = ? ORDER BY at, rowid`, runID)
	} else {
		gs, err = j.queryGates(`WHERE run_id = ? AND task_id = ? ORDER BY attempt`, runID, taskID)
	}
	if err != nil {
		return nil, fmt.Errorf("gates of %s/%s: %w", runID, taskID, err)
	}
	return gs, nil
}

// LastGate returns the task's gate from the nearest run of the lineage
// that has one, its highest attempt.
func (j *Journal) LastGate(lineage []string, taskID string) (*Gate, bool, error) {
	for _, runID := range lineage {
		gs, err := j.queryGates(`WHERE run_id = ? AND task_id = ? ORDER BY attempt DESC, at DESC LIMIT 1`, runID, taskID)
		if err != nil {
			return nil, false, fmt.Errorf("last gate of %s: %w", taskID, err)
		}
		if len(gs) > 0 {
			return &gs[0], true, nil
		}
	}
	return nil, false, nil
}

// Boundary is a git snapshot taken between tasks, and the guard's verdict
// on it. Seq 0 is the boundary before the first task.
type Boundary struct {
	RunID     string `json:"run_id"`
	Seq       int    `json:"seq"`
	AfterTask string `json:"after_task,omitempty"` // "" for the first boundary
	Head      string `json:"head"`
	// Commit is the boundary commit (on refs/implloop/runs/<run>) and Tree
	// its tree: the whole work tree at that moment. "" in rows journaled
	// before boundaries were commits, whose Snapshot holds the dirty set.
	Commit   string          `json:"commit,omitempty"`
	Tree     string          `json:"tree,omitempty"`
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
	Verdict  json.RawMessage `json:"verdict"`
	// SalvageRef is where rows from before boundary commits kept
	// discarded content (refs/implloop/salvage/<run>).
	SalvageRef string    `json:"salvage_ref,omitempty"`
	At         time.Time `json:"at"`
}

func rawOr(b json.RawMessage, def string) (string, error) {
	if len(b) == 0 {
		return def, nil
	}
	if !json.Valid(b) {
		return "", fmt.Errorf("not JSON: %.40q", b)
	}
	return string(b), nil
}

// PutBoundary appends a boundary to its run, assigning the next Seq (0 for
// the first) so that a run's boundaries are contiguous, and returns it as
// stored. Durable.
func (j *Journal) PutBoundary(b Boundary) (Boundary, error) {
	if b.At.IsZero() {
		b.At = time.Now()
	}
	b.At = b.At.UTC().Truncate(time.Millisecond)
	snap, err := rawOr(b.Snapshot, "{}")
	if err != nil {
		return b, fmt.Errorf("put boundary of %s: snapshot %w", b.RunID, err)
	}
	verdict, err := rawOr(b.Verdict, "{}")
	if err != nil {
		return b, fmt.Errorf("put boundary of %s: verdict %w", b.RunID, err)
	}
	err = j.tx(true, func(w *Journal) error {
		if err := w.queryRow(`SELECT coalesce(max(seq) + 1, 0) FROM boundaries WHERE run_id = ?`, b.RunID).Scan(&b.Seq); err != nil {
			return err
		}
		_, err := w.run(`INSERT INTO boundaries (run_id, seq, after_task, head, snapshot, verdict, salvage_ref, at, commit_id, tree)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, b.RunID, b.Seq, b.AfterTask, b.Head, snap, verdict, b.SalvageRef, ms(b.At), b.Commit, b.Tree)
		return err
	})
	if err != nil {
		return b, fmt.Errorf("put boundary of %s: %w", b.RunID, err)
	}
	b.Snapshot, b.Verdict = json.RawMessage(snap), json.RawMessage(verdict)
	return b, nil
}

func (j *Journal) queryBoundaries(where string, args ...any) ([]Boundary, error) {
	return queryAll(j, `SELECT run_id, seq, after_task, head, snapshot, verdict, salvage_ref, at, commit_id, tree
		FROM boundaries `+where, args, func(sc scanner) (Boundary, error) {
		var b Boundary
		var snap, verdict string
		var at sql.NullInt64
		err := sc.Scan(&b.RunID, &b.Seq, &b.AfterTask, &b.Head, &snap, &verdict, &b.SalvageRef, &at, &b.Commit, &b.Tree)
		b.Snapshot, b.Verdict, b.At = json.RawMessage(snap), json.RawMessage(verdict), fromMS(at)
		return b, err
	})
}

// Boundaries returns a run's boundaries in order.
func (j *Journal) Boundaries(runID string) ([]Boundary, error) {
	bs, err := j.queryBoundaries(`WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("boundaries of %s: %w", runID, err)
	}
	return bs, nil
}

// LastBoundary returns a run's latest boundary.
func (j *Journal) LastBoundary(runID string) (*Boundary, bool, error) {
	bs, err := j.queryBoundaries(`WHERE run_id = ? ORDER BY seq DESC LIMIT 1`, runID)
	if err != nil {
		return nil, false, fmt.Errorf("last boundary of %s: %w", runID, err)
	}
	if len(bs) == 0 {
		return nil, false, nil
	}
	return &bs[0], true, nil
}

// Event is one entry of a run's event stream (the NDJSON events of --json).
type Event struct {
	RunID string          `json:"run_id"`
	Seq   int             `json:"seq"`
	Type  string          `json:"type"`
	Data  json.RawMessage `json:"data"`
	At    time.Time       `json:"at"`
}

// AppendEvent appends an event to a run and returns its seq (from 0). data
// is marshalled to JSON unless it already is JSON ([]byte or
// json.RawMessage); nil becomes {}. Not fsynced on its own (see Journal).
func (j *Journal) AppendEvent(runID, typ string, data any) (int, error) {
	var raw []byte
	switch d := data.(type) {
	case nil:
		raw = []byte("{}")
	case json.RawMessage:
		raw = d
	case []byte:
		raw = d
	default:
		var err error
		if raw, err = json.Marshal(d); err != nil {
			return 0, fmt.Errorf("event %s of %s: %w", typ, runID, err)
		}
	}
	if !json.Valid(raw) {
		return 0, fmt.Errorf("event %s of %s: data is not JSON", typ, runID)
	}
	var seq int
	err := j.tx(false, func(w *Journal) error {
		if err := w.queryRow(`SELECT coalesce(max(seq) + 1, 0) FROM events WHERE run_id = ?`, runID).Scan(&seq); err != nil {
			return err
		}
		_, err := w.run(`INSERT INTO events (run_id, seq, type, data, at) VALUES (?, ?, ?, ?, ?)`,
			runID, seq, typ, string(raw), time.Now().UnixMilli())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("event %s of %s: %w", typ, runID, err)
	}
	return seq, nil
}

// Events returns a run's events in order.
func (j *Journal) Events(runID string) ([]Event, error) {
	es, err := queryAll(j, `SELECT run_id, seq, type, data, at FROM events WHERE run_id = ? ORDER BY seq`, []any{runID}, func(sc scanner) (Event, error) {
		var e Event
		var data string
		var at sql.NullInt64
		err := sc.Scan(&e.RunID, &e.Seq, &e.Type, &data, &at)
		e.Data, e.At = json.RawMessage(data), fromMS(at)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", runID, err)
	}
	return es, nil
}
