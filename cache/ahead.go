package cache

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// AheadCall is an agent call made ahead of its task's turn (--jobs: in a
// linked worktree, checked out at Base), journaled the moment it returned:
// what it said (blobs, figures; Result holds the backend's whole result
// JSON, RunError why it could not run, "" when it did) and what it did
// (Tree, its worktree's tree after it; Commit, that tree committed on Base
// and kept under a ref, so that git gc cannot take it). At its task's turn
// the run journals the call as a unit and settles the row (SettledBy);
// a crash or an interrupt before that leaves it unsettled, and a resume
// whose lineage holds it takes it instead of calling the agent again: a
// finished call is never paid for twice.
type AheadCall struct {
	RunID     string          `json:"run_id"`
	UnitID    string          `json:"unit_id"`
	TaskID    string          `json:"task_id"`
	Role      string          `json:"role"`
	Attempt   int             `json:"attempt"`
	Identity  string          `json:"identity"`
	Preimage  json.RawMessage `json:"preimage"`
	Prompt    string          `json:"prompt,omitempty"`
	Stdout    string          `json:"stdout,omitempty"`
	Stderr    string          `json:"stderr,omitempty"`
	Result    string          `json:"result"`
	RunError  string          `json:"run_error,omitempty"`
	TokensIn  int64           `json:"tokens_in"`
	TokensOut int64           `json:"tokens_out"`
	CostUSD   float64         `json:"cost_usd"`
	Base      string          `json:"base"`
	Tree      string          `json:"tree"`
	Commit    string          `json:"commit,omitempty"`
	Worktree  string          `json:"worktree,omitempty"`
	StartedAt time.Time       `json:"started_at"`
	// FinishedAt is when the call returned.
	FinishedAt time.Time `json:"finished_at"`
	// SettledBy is the run that journaled the call as a unit ("" until
	// then).
	SettledBy string `json:"settled_by,omitempty"`
}

// PutAhead journals a call made ahead that returned. Its result blob must
// be stored already. Durable: after it returns, a crash costs the call
// nothing.
func (j *Journal) PutAhead(a AheadCall) error {
	if a.Identity == "" || len(a.Preimage) == 0 || a.Base == "" || a.Tree == "" {
		return fmt.Errorf("journal the call made ahead %s/%s: identity, preimage, base and tree are required", a.RunID, a.UnitID)
	}
	if a.Result == "" || !j.blobs.Has(a.Result) {
		return fmt.Errorf("journal the call made ahead %s/%s: no stored result blob (%q)", a.RunID, a.UnitID, a.Result)
	}
	_, err := j.exec(true, `INSERT INTO ahead (run_id, unit_id, task_id, role, attempt, identity, preimage, prompt,
			stdout, stderr, result, run_error, tokens_in, tokens_out, cost_usd, base, tree, commit_id, worktree,
			started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.RunID, a.UnitID, a.TaskID, a.Role, a.Attempt, a.Identity, []byte(a.Preimage), a.Prompt,
		a.Stdout, a.Stderr, a.Result, a.RunError, a.TokensIn, a.TokensOut, a.CostUSD, a.Base, a.Tree, a.Commit, a.Worktree,
		ms(a.StartedAt), ms(a.FinishedAt))
	if err != nil {
		return fmt.Errorf("journal the call made ahead %s/%s: %w", a.RunID, a.UnitID, err)
	}
	return nil
}

// SettleAhead records that run by journaled the call made ahead
// runID/unitID as a unit. Not fsynced on its own: a settled call is a
// unit of by, which a resume finds first.
func (j *Journal) SettleAhead(runID, unitID, by string) error {
	if _, err := j.exec(false, `UPDATE ahead SET settled_by = ? WHERE run_id = ? AND unit_id = ?`, by, runID, unitID); err != nil {
		return fmt.Errorf("settle the call made ahead %s/%s: %w", runID, unitID, err)
	}
	return nil
}

const aheadCols = `run_id, unit_id, task_id, role, attempt, identity, preimage, prompt, stdout, stderr, result,
	run_error, tokens_in, tokens_out, cost_usd, base, tree, commit_id, worktree, started_at, finished_at, settled_by`

func scanAhead(sc scanner) (AheadCall, error) {
	var a AheadCall
	var pre []byte
	var started, finished sql.NullInt64
	err := sc.Scan(&a.RunID, &a.UnitID, &a.TaskID, &a.Role, &a.Attempt, &a.Identity, &pre, &a.Prompt, &a.Stdout,
		&a.Stderr, &a.Result, &a.RunError, &a.TokensIn, &a.TokensOut, &a.CostUSD, &a.Base, &a.Tree, &a.Commit,
		&a.Worktree, &started, &finished, &a.SettledBy)
	a.Preimage = json.RawMessage(pre)
	a.StartedAt, a.FinishedAt = fromMS(started), fromMS(finished)
	return a, err
}

// AheadCalls are a run's calls made ahead, in the order they returned.
func (j *Journal) AheadCalls(runID string) ([]AheadCall, error) {
	as, err := queryAll(j, `SELECT `+aheadCols+` FROM ahead WHERE run_id = ? ORDER BY finished_at, rowid`, []any{runID}, scanAhead)
	if err != nil {
		return nil, fmt.Errorf("calls made ahead in %s: %w", runID, err)
	}
	return as, nil
}

// FindAhead is the unsettled call made ahead with this identity from the
// nearest run of lineage (run ids, nearest first), whose result blob is
// stored: the call a resume takes instead of making it again.
func (j *Journal) FindAhead(lineage []string, identity string) (*AheadCall, bool, error) {
	if len(lineage) == 0 {
		return nil, false, nil
	}
	in, args := inList(lineage)
	as, err := queryAll(j, `SELECT `+aheadCols+` FROM ahead WHERE identity = ? AND settled_by = '' AND run_id IN `+in,
		append([]any{identity}, args...), scanAhead)
	if err != nil {
		return nil, false, fmt.Errorf("find the call made ahead %s: %w", identity, err)
	}
	pos := make(map[string]int, len(lineage))
	for i, id := range lineage {
		if _, ok := pos[id]; !ok {
			pos[id] = i
		}
	}
	var best *AheadCall
	for i := range as {
		a := &as[i]
		if !j.blobs.Has(a.Result) {
			continue
		}
		if best == nil || pos[a.RunID] < pos[best.RunID] || pos[a.RunID] == pos[best.RunID] && a.FinishedAt.After(best.FinishedAt) {
			best = a
		}
	}
	return best, best != nil, nil
}
