package cache

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/implloop/implloop/internal/runid"
)

// Run is one invocation of `implloop run` or `resume`.
type Run struct {
	ID         string          `json:"id"`
	ParentID   string          `json:"parent_id,omitempty"` // the run this one resumes
	PlanPath   string          `json:"plan_path"`
	PlanSHA256 string          `json:"plan_sha256"`
	Settings   json.RawMessage `json:"settings,omitempty"` // the run flags, so a resume can default to them
	Verdict    string          `json:"verdict,omitempty"`  // "" until finished
	ExitCode   int             `json:"exit_code"`          // meaningful once finished
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at,omitzero"` // zero while running (or after a crash)
	PID        int             `json:"pid"`
	Host       string          `json:"host"`
	// Inputs is a digest of everything the run's unit identities are
	// computed from (the plan as read, the settings, the identity scheme);
	// "" when not recorded. The journal only stores it; the loop decides
	// what goes into it.
	Inputs string `json:"inputs,omitempty"`
}

// Finished reports whether FinishRun was recorded.
func (r *Run) Finished() bool { return !r.FinishedAt.IsZero() }

func ms(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromMS(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMilli(n.Int64).UTC()
}

func nullStr(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// CreateRun records a new run. Empty ID, StartedAt, PID and Host are filled
// in (the new id is written back to r). Settings must be a JSON object or
// empty. Durable.
func (j *Journal) CreateRun(r *Run) error {
	if r.StartedAt.IsZero() {
		r.StartedAt = time.Now()
	}
	r.StartedAt = r.StartedAt.UTC().Truncate(time.Millisecond)
	if r.ID == "" {
		r.ID = runid.New(r.StartedAt)
	}
	if r.PID == 0 {
		r.PID = os.Getpid()
	}
	if r.Host == "" {
		r.Host, _ = os.Hostname()
	}
	settings := string(r.Settings)
	if settings == "" {
		settings = "{}"
	} else if !json.Valid(r.Settings) {
		return fmt.Errorf("create run %s: settings are not JSON", r.ID)
	}
	_, err := j.exec(true, `INSERT INTO runs (id, parent_id, plan_path, plan_sha256, settings, started_at, pid, host, inputs)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, nullStr(r.ParentID), r.PlanPath, r.PlanSHA256, settings, ms(r.StartedAt), r.PID, r.Host, r.Inputs)
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// FinishRun records a run's verdict and exit code. A zero at means now.
// Durable.
func (j *Journal) FinishRun(runID, verdict string, exitCode int, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	res, err := j.exec(true, `UPDATE runs SET verdict = ?, exit_code = ?, finished_at = ? WHERE id = ?`,
		verdict, exitCode, ms(at), runID)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("finish run %s: %w", runID, ErrNotFound)
	}
	return nil
}

const runCols = `id, parent_id, plan_path, plan_sha256, settings, verdict, exit_code, started_at, finished_at, pid, host, inputs`

func scanRun(sc scanner) (Run, error) {
	var r Run
	var parent sql.NullString
	var settings string
	var exit sql.NullInt64
	var started, finished sql.NullInt64
	err := sc.Scan(&r.ID, &parent, &r.PlanPath, &r.PlanSHA256, &settings, &r.Verdict, &exit, &started, &finished, &r.PID, &r.Host, &r.Inputs)
	r.ParentID = parent.String
	r.Settings = json.RawMessage(settings)
	r.ExitCode = int(exit.Int64)
	r.StartedAt = fromMS(started)
	r.FinishedAt = fromMS(finished)
	return r, err
}

func (j *Journal) queryRuns(where string, args ...any) ([]Run, error) {
	return queryAll(j, `SELECT `+runCols+` FROM runs `+where, args, scanRun)
}

// GetRun returns the run with this exact id, or ErrNotFound.
func (j *Journal) GetRun(id string) (*Run, error) {
	rs, err := j.queryRuns(`WHERE id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return &rs[0], nil
}

// ResolveRun finds a run by its id or a unique prefix of it.
func (j *Journal) ResolveRun(ref string) (*Run, error) {
	if ref == "" {
		return nil, fmt.Errorf("empty run id: %w", ErrNotFound)
	}
	if r, err := j.GetRun(ref); err == nil || !errors.Is(err, ErrNotFound) {
		return r, err
	}
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(ref)
	rs, err := j.queryRuns(`WHERE id LIKE ? ESCAPE '\' ORDER BY started_at DESC, rowid DESC LIMIT 2`, esc+"%")
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", ref, err)
	}
	switch len(rs) {
	case 0:
		return nil, fmt.Errorf("run %s: %w", ref, ErrNotFound)
	case 1:
		return &rs[0], nil
	default:
		return nil, fmt.Errorf("run %s is ambiguous (%s, %s, ...)", ref, rs[0].ID, rs[1].ID)
	}
}

// ListRuns returns every run, newest first.
func (j *Journal) ListRuns() ([]Run, error) {
	return j.queryRuns(`ORDER BY started_at DESC, rowid DESC`)
}

// LatestRun returns the newest run made on this machine, of this plan
// path if planPath is not empty; ErrNotFound when there is none. A pulled
// run is never the default of anything: one pushed with a start date in
// the future would otherwise be every teammate's resume.
func (j *Journal) LatestRun(planPath string) (*Run, error) {
	where := `WHERE id NOT IN (SELECT run_id FROM pulled)`
	var args []any
	if planPath != "" {
		where += ` AND plan_path = ?`
		args = append(args, planPath)
	}
	rs, err := j.queryRuns(where+` ORDER BY started_at DESC, rowid DESC LIMIT 1`, args...)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		// Only pulled runs (or none): say why none is the default, or a
		// clone that pulled its team's runs reads "not found" beside them.
		var pulled int
		if err := j.queryRow(`SELECT COUNT(*) FROM pulled`).Scan(&pulled); err == nil && pulled > 0 {
			return nil, onlyPulledError{pulled}
		}
		return nil, fmt.Errorf("latest run: %w", ErrNotFound)
	}
	return &rs[0], nil
}

// onlyPulledError is LatestRun's ErrNotFound in a journal that holds
// pulled runs only.
type onlyPulledError struct{ pulled int }

func (e onlyPulledError) Error() string {
	return fmt.Sprintf("no run was made on this machine yet: the %d run(s) here were pulled, and a pulled run is never picked by default; name one by its id", e.pulled)
}

func (e onlyPulledError) Is(target error) bool { return target == ErrNotFound }

// Lineage returns the run and its ancestors: self, parent, grandparent...
func (j *Journal) Lineage(runID string) ([]Run, error) {
	var out []Run
	seen := map[string]bool{}
	for id := runID; id != ""; {
		if seen[id] {
			return nil, fmt.Errorf("lineage of %s: cycle at %s", runID, id)
		}
		seen[id] = true
		r, err := j.GetRun(id)
		if err != nil {
			return nil, fmt.Errorf("lineage of %s: %w", runID, err)
		}
		out = append(out, *r)
		id = r.ParentID
	}
	return out, nil
}

// LineageIDs is Lineage's run ids, the form FindCompleted takes.
func (j *Journal) LineageIDs(runID string) ([]string, error) {
	rs, err := j.Lineage(runID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids, nil
}
