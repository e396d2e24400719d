package cache

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// UnitStatus is where one agent call stands.
type UnitStatus string

// Unit statuses. Only completed units are ever replayed.
const (
	UnitRunning     UnitStatus = "running"     // written before dispatch
	UnitCompleted   UnitStatus = "completed"   // the call returned and its result is stored
	UnitFailed      UnitStatus = "failed"      // the call could not complete (error, timeout, non-zero exit)
	UnitInterrupted UnitStatus = "interrupted" // stopped by a signal
)

// Unit is one agent call (live or replayed) in a run. Prompt, Stdout,
// Stderr and Result are blob-store hashes ("" when absent); Result holds
// the parsed result JSON.
type Unit struct {
	RunID      string          `json:"run_id"`
	UnitID     string          `json:"unit_id"` // e.g. "10/implement~a2"
	TaskID     string          `json:"task_id"`
	Role       string          `json:"role"`
	Attempt    int             `json:"attempt"`
	Identity   string          `json:"identity"`
	Preimage   json.RawMessage `json:"preimage"` // canonical JSON bytes, exactly as hashed
	Status     UnitStatus      `json:"status"`
	Prompt     string          `json:"prompt,omitempty"`
	Stdout     string          `json:"stdout,omitempty"`
	Stderr     string          `json:"stderr,omitempty"`
	Result     string          `json:"result,omitempty"`
	TokensIn   int64           `json:"tokens_in"`
	TokensOut  int64           `json:"tokens_out"`
	CacheRead  int64           `json:"cache_read"`
	CacheWrite int64           `json:"cache_write"`
	CostUSD    float64         `json:"cost_usd"`
	ExitCode   int             `json:"exit_code"`
	Error      string          `json:"error,omitempty"`
	// ReplayedFromRun/Unit name the original live unit this row replays
	// (never another replay): empty for a live unit.
	ReplayedFromRun  string        `json:"replayed_from_run,omitempty"`
	ReplayedFromUnit string        `json:"replayed_from_unit,omitempty"`
	StartedAt        time.Time     `json:"started_at"`
	FinishedAt       time.Time     `json:"finished_at,omitzero"`
	Duration         time.Duration `json:"duration_ns"`
}

// Replayed reports whether the row stands for a replayed call.
func (u *Unit) Replayed() bool { return u.ReplayedFromRun != "" }

// Outcome is what FinishUnit records about a call that returned.
type Outcome struct {
	Status     UnitStatus // UnitCompleted or UnitFailed
	Stdout     string     // blob hashes
	Stderr     string
	Result     string // required for UnitCompleted, and must be in the blob store
	TokensIn   int64
	TokensOut  int64
	CacheRead  int64
	CacheWrite int64
	CostUSD    float64
	ExitCode   int
	Error      string    // why a failed call failed
	FinishedAt time.Time // zero means now
}

// StartUnit records a unit as running, before its agent is dispatched.
// Status is forced to running; a zero StartedAt means now. Durable.
func (j *Journal) StartUnit(u Unit) error {
	if u.StartedAt.IsZero() {
		u.StartedAt = time.Now()
	}
	if u.Identity == "" || len(u.Preimage) == 0 {
		return fmt.Errorf("start unit %s/%s: identity and preimage are required", u.RunID, u.UnitID)
	}
	_, err := j.exec(true, `INSERT INTO units (run_id, unit_id, task_id, role, attempt, identity, preimage,
			status, prompt, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)`,
		u.RunID, u.UnitID, u.TaskID, u.Role, u.Attempt, u.Identity, []byte(u.Preimage), u.Prompt, ms(u.StartedAt))
	if err != nil {
		return fmt.Errorf("start unit %s/%s: %w", u.RunID, u.UnitID, err)
	}
	return nil
}

// FinishUnit records the outcome of a running unit. A completed unit must
// name a result blob that is already stored: the journal never holds a
// completed unit that cannot be replayed. An interrupted outcome is a
// call the run stopped with what it spent (a usage limit it would not
// wait for). Durable.
func (j *Journal) FinishUnit(runID, unitID string, o Outcome) error {
	switch o.Status {
	case UnitCompleted:
		if o.Result == "" || !j.blobs.Has(o.Result) {
			return fmt.Errorf("finish unit %s/%s: completed without a stored result blob (%q)", runID, unitID, o.Result)
		}
	case UnitFailed, UnitInterrupted:
	default:
		return fmt.Errorf("finish unit %s/%s: status %q is not completed or failed", runID, unitID, o.Status)
	}
	if o.FinishedAt.IsZero() {
		o.FinishedAt = time.Now()
	}
	fin := o.FinishedAt.UnixMilli()
	res, err := j.exec(true, `UPDATE units SET status = ?, stdout = ?, stderr = ?, result = ?, tokens_in = ?,
			tokens_out = ?, cache_read = ?, cache_write = ?, cost_usd = ?, exit_code = ?, error = ?,
			finished_at = ?, duration_ms = max(0, ? - started_at)
		WHERE run_id = ? AND unit_id = ? AND status = 'running'`,
		string(o.Status), o.Stdout, o.Stderr, o.Result, o.TokensIn, o.TokensOut, o.CacheRead, o.CacheWrite,
		o.CostUSD, o.ExitCode, o.Error, fin, fin, runID, unitID)
	if err != nil {
		return fmt.Errorf("finish unit %s/%s: %w", runID, unitID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("finish unit %s/%s: no running unit: %w", runID, unitID, ErrNotFound)
	}
	return nil
}

// RetargetUnit gives a running unit the identity and preimage of the call
// now made for it: another agent or model took it over (a fallback, after
// a usage limit). The row always names the call in flight. Durable.
func (j *Journal) RetargetUnit(runID, unitID, identity string, preimage []byte) error {
	if identity == "" || len(preimage) == 0 {
		return fmt.Errorf("retarget unit %s/%s: identity and preimage are required", runID, unitID)
	}
	res, err := j.exec(true, `UPDATE units SET identity = ?, preimage = ? WHERE run_id = ? AND unit_id = ? AND status = 'running'`,
		identity, preimage, runID, unitID)
	if err != nil {
		return fmt.Errorf("retarget unit %s/%s: %w", runID, unitID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("retarget unit %s/%s: no running unit: %w", runID, unitID, ErrNotFound)
	}
	return nil
}

// MarkInterrupted turns a running unit into an interrupted one, keeping
// whatever output blobs were captured (either may be ""). Durable.
func (j *Journal) MarkInterrupted(runID, unitID, stdout, stderr string) error {
	now := time.Now().UnixMilli()
	res, err := j.exec(true, `UPDATE units SET status = 'interrupted', stdout = ?, stderr = ?, finished_at = ?,
			duration_ms = max(0, ? - started_at)
		WHERE run_id = ? AND unit_id = ? AND status = 'running'`, stdout, stderr, now, now, runID, unitID)
	if err != nil {
		return fmt.Errorf("interrupt unit %s/%s: %w", runID, unitID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("interrupt unit %s/%s: no running unit: %w", runID, unitID, ErrNotFound)
	}
	return nil
}

// InterruptRunning marks every running unit and running task of the run
// interrupted (the SIGINT path) and returns how many units it changed.
// Durable.
func (j *Journal) InterruptRunning(runID string) (int, error) {
	now := time.Now().UnixMilli()
	var n int64
	err := j.tx(true, func(w *Journal) error {
		res, err := w.run(`UPDATE units SET status = 'interrupted', finished_at = ?, duration_ms = max(0, ? - started_at)
			WHERE run_id = ? AND status = 'running'`, now, now, runID)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = w.run(`UPDATE tasks SET status = 'interrupted', finished_at = ?,
				duration_ms = CASE WHEN started_at IS NULL THEN duration_ms ELSE max(0, ? - started_at) END
			WHERE run_id = ? AND status = 'running'`, now, now, runID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("interrupt run %s: %w", runID, err)
	}
	return int(n), nil
}

// AddReplayedUnit records, in run runID, that unit unitID was replayed from
// the completed unit from (found by FindCompleted). The row copies from's
// identity, preimage, blobs and figures and points at the original live
// unit, following from's own replayed_from when from is itself a replay.
// Not fsynced on its own (see Journal): losing it only means a resume looks
// it up again.
func (j *Journal) AddReplayedUnit(runID, unitID string, from *Unit) (*Unit, error) {
	// A failed unit replays as that failure only inside an attempt
	// chain that went on (the loop decides; see FindFailed).
	if from == nil || (from.Status != UnitCompleted && from.Status != UnitFailed) {
		return nil, fmt.Errorf("replay unit %s/%s: source is neither a completed nor a failed unit", runID, unitID)
	}
	u := *from
	u.RunID, u.UnitID = runID, unitID
	if !from.Replayed() {
		u.ReplayedFromRun, u.ReplayedFromUnit = from.RunID, from.UnitID
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	u.StartedAt, u.FinishedAt, u.Duration = now, now, 0
	_, err := j.exec(false, `INSERT INTO units (run_id, unit_id, task_id, role, attempt, identity, preimage,
			status, prompt, stdout, stderr, result, tokens_in, tokens_out, cache_read, cache_write, cost_usd,
			exit_code, error, replayed_from_run, replayed_from_unit, started_at, finished_at, duration_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
		u.RunID, u.UnitID, u.TaskID, u.Role, u.Attempt, u.Identity, []byte(u.Preimage), string(from.Status),
		u.Prompt, u.Stdout, u.Stderr, u.Result, u.TokensIn, u.TokensOut, u.CacheRead, u.CacheWrite, u.CostUSD,
		u.ExitCode, u.Error, u.ReplayedFromRun, u.ReplayedFromUnit, ms(u.StartedAt), ms(u.FinishedAt))
	if err != nil {
		return nil, fmt.Errorf("replay unit %s/%s: %w", runID, unitID, err)
	}
	return &u, nil
}

const unitCols = `run_id, unit_id, task_id, role, attempt, identity, preimage, status, prompt, stdout, stderr,
	result, tokens_in, tokens_out, cache_read, cache_write, cost_usd, exit_code, error,
	replayed_from_run, replayed_from_unit, started_at, finished_at, duration_ms`

func scanUnit(sc scanner) (Unit, error) {
	var u Unit
	var status string
	var exit, started, finished sql.NullInt64
	var dur int64
	var pre []byte
	err := sc.Scan(&u.RunID, &u.UnitID, &u.TaskID, &u.Role, &u.Attempt, &u.Identity, &pre, &status,
		&u.Prompt, &u.Stdout, &u.Stderr, &u.Result, &u.TokensIn, &u.TokensOut, &u.CacheRead, &u.CacheWrite,
		&u.CostUSD, &exit, &u.Error, &u.ReplayedFromRun, &u.ReplayedFromUnit, &started, &finished, &dur)
	u.Preimage = json.RawMessage(pre)
	u.Status = UnitStatus(status)
	u.ExitCode = int(exit.Int64)
	u.StartedAt, u.FinishedAt = fromMS(started), fromMS(finished)
	u.Duration = time.Duration(dur) * time.Millisecond
	return u, err
}

func (j *Journal) queryUnits(where string, args ...any) ([]Unit, error) {
	return queryAll(j, `SELECT `+unitCols+` FROM units `+where, args, scanUnit)
}

// Units returns a run's units in the order they started.
func (j *Journal) Units(runID string) ([]Unit, error) {
	us, err := j.queryUnits(`WHERE run_id = ? ORDER BY started_at, rowid`, runID)
	if err != nil {
		return nil, fmt.Errorf("units of %s: %w", runID, err)
	}
	return us, nil
}

// GetUnit returns one unit, or ErrNotFound.
func (j *Journal) GetUnit(runID, unitID string) (*Unit, error) {
	us, err := j.queryUnits(`WHERE run_id = ? AND unit_id = ?`, runID, unitID)
	if err != nil {
		return nil, fmt.Errorf("unit %s/%s: %w", runID, unitID, err)
	}
	if len(us) == 0 {
		return nil, fmt.Errorf("unit %s/%s: %w", runID, unitID, ErrNotFound)
	}
	return &us[0], nil
}

func inList(ids []string) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return "(" + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + ")", args
}

// rankByLineage orders units: nearest run of the lineage first, then the
// newest within a run.
func rankByLineage(us []Unit, lineage []string) {
	pos := make(map[string]int, len(lineage))
	for i, id := range lineage {
		if _, ok := pos[id]; !ok {
			pos[id] = i
		}
	}
	sort.SliceStable(us, func(a, b int) bool {
		if pa, pb := pos[us[a].RunID], pos[us[b].RunID]; pa != pb {
			return pa < pb
		}
		return us[a].StartedAt.After(us[b].StartedAt)
	})
}

// FindCompleted returns the completed unit with this identity from the
// nearest run of lineage (run ids, nearest first, as from LineageIDs), the
// newest within that run. Running, failed and interrupted units never
// match, nor does a unit whose result blob is missing. Runs outside the
// lineage (siblings) are never consulted.
func (j *Journal) FindCompleted(lineage []string, identity string) (*Unit, bool, error) {
	if len(lineage) == 0 {
		return nil, false, nil
	}
	in, args := inList(lineage)
	us, err := j.queryUnits(`WHERE identity = ? AND status = 'completed' AND run_id IN `+in, append([]any{identity}, args...)...)
	if err != nil {
		return nil, false, fmt.Errorf("find %s: %w", identity, err)
	}
	rankByLineage(us, lineage)
	for i := range us {
		if j.blobs.Has(us[i].Result) {
			return &us[i], true, nil
		}
	}
	return nil, false, nil
}

// FindFailed is the failed live unit of identity nearest in the lineage
// (not a replay of one), for an attempt chain that replays its failure.
func (j *Journal) FindFailed(lineage []string, identity string) (*Unit, bool, error) {
	if len(lineage) == 0 {
		return nil, false, nil
	}
	in, args := inList(lineage)
	us, err := j.queryUnits(`WHERE identity = ? AND status = 'failed' AND replayed_from_run = '' AND run_id IN `+in, append([]any{identity}, args...)...)
	if err != nil {
		return nil, false, fmt.Errorf("find failed %s: %w", identity, err)
	}
	if len(us) == 0 {
		return nil, false, nil
	}
	rankByLineage(us, lineage)
	return &us[0], true, nil
}

// ClosestUnit is the journaled unit a miss is explained against: same task
// and role in the lineage, the same attempt if there is one, else the
// nearest attempt (the lower one on a tie); then the nearest run, then the
// newest. Running units qualify too: their preimage is as good for a diff.
func (j *Journal) ClosestUnit(lineage []string, taskID, role string, attempt int) (*Unit, bool, error) {
	if len(lineage) == 0 {
		return nil, false, nil
	}
	in, args := inList(lineage)
	us, err := j.queryUnits(`WHERE task_id = ? AND role = ? AND run_id IN `+in, append([]any{taskID, role}, args...)...)
	if err != nil {
		return nil, false, fmt.Errorf("closest unit of %s/%s: %w", taskID, role, err)
	}
	if len(us) == 0 {
		return nil, false, nil
	}
	rankByLineage(us, lineage)
	// Distance to the wanted attempt; on a tie the lower attempt wins.
	key := func(a int) int {
		if d := a - attempt; d < 0 {
			return -2 * d
		} else {
			return 2*d + min(d, 1)
		}
	}
	best := 0
	for i := range us {
		if key(us[i].Attempt) < key(us[best].Attempt) {
			best = i
		}
	}
	return &us[best], true, nil
}

// CompletedElsewhere is the newest live unit of identity that completed
// in any run but exclude, from whatever tree: for the words saying why a
// unit runs live here although another run did it.
func (j *Journal) CompletedElsewhere(identity, exclude string) (*Unit, bool, error) {
	us, err := j.queryUnits(`WHERE identity = ? AND status = 'completed' AND replayed_from_run = '' AND run_id != ?
		ORDER BY started_at DESC, rowid DESC LIMIT 1`, identity, exclude)
	if err != nil {
		return nil, false, fmt.Errorf("find %s elsewhere: %w", identity, err)
	}
	if len(us) == 0 {
		return nil, false, nil
	}
	return &us[0], true, nil
}

// LiveElsewhereFrom are the live units of identity that completed or
// failed in any run but exclude, newest first, whose result blob is
// stored and whose run did their task from tree (the boundary before the
// task's last boundary in that run has it): the candidates for a replay
// across runs (the loop decides which may stand in; a failed call only
// where the run's attempts went on after it). One query, so that a task
// whose identity many other runs share, from other trees (a plan run at
// many commits), costs no per-run look.
func (j *Journal) LiveElsewhereFrom(identity, exclude, tree string) ([]Unit, error) {
	us, err := j.queryUnits(`WHERE identity = ? AND status IN ('completed', 'failed') AND replayed_from_run = '' AND run_id != ?
		AND (run_id, task_id) IN (SELECT a.run_id, a.after_task
			FROM boundaries p JOIN boundaries a ON a.run_id = p.run_id AND a.seq = p.seq + 1
			WHERE p.tree = ? AND a.after_task != ''
			AND NOT EXISTS (SELECT 1 FROM boundaries l WHERE l.run_id = a.run_id AND l.seq > a.seq AND l.after_task = a.after_task))
		ORDER BY started_at DESC, rowid DESC`, identity, exclude, tree)
	if err != nil {
		return nil, fmt.Errorf("find %s elsewhere: %w", identity, err)
	}
	out := us[:0]
	for _, u := range us {
		if j.blobs.Has(u.Result) {
			out = append(out, u)
		}
	}
	return out, nil
}
