package cache

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/implloop/implloop/internal/bytepath"
	"time"
)

// TaskStatus is where a task stands in a run.
type TaskStatus string

// Task statuses. Pending means never started in this run (a run that
// stopped at a block leaves the later tasks pending).
const (
	TaskPending     TaskStatus = "pending"
	TaskRunning     TaskStatus = "running"
	TaskDone        TaskStatus = "done"
	TaskBlocked     TaskStatus = "blocked"
	TaskSkipped     TaskStatus = "skipped"
	TaskInterrupted TaskStatus = "interrupted"
)

// Source says where a task's agent calls came from in this run.
type Source string

// Sources.
const (
	SourceLive     Source = "live"     // every unit dispatched
	SourceReplayed Source = "replayed" // every unit replayed from the lineage
	SourceMixed    Source = "mixed"    // some of each
	SourceNone     Source = "none"     // no unit (skipped, pending, or fixed outside the loop)
)

// Task is a task's row in one run.
type Task struct {
	RunID       string        `json:"run_id"`
	TaskID      string        `json:"task_id"`
	Ordinal     int           `json:"ordinal"`
	Title       string        `json:"title"`
	Status      TaskStatus    `json:"status"`
	Source      Source        `json:"source"`
	Attempts    int           `json:"attempts"`
	StartedAt   time.Time     `json:"started_at,omitzero"`
	FinishedAt  time.Time     `json:"finished_at,omitzero"`
	Duration    time.Duration `json:"duration_ns"`
	BlockReason string        `json:"block_reason,omitempty"`
	LostPaths   bytepath.List `json:"lost_paths,omitempty"`
	Concerns    []string      `json:"concerns,omitempty"`
}

// pathList is the JSON of a list of paths, byte-exact (internal/bytepath).
func pathList(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(bytepath.List(v))
	return string(b)
}

func jsonList(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// PutTask inserts or replaces the task's row (keyed by run and task id).
// An empty Source is stored as "none". Not fsynced on its own (see Journal).
func (j *Journal) PutTask(t Task) error {
	if t.Source == "" {
		t.Source = SourceNone
	}
	_, err := j.exec(false, `INSERT INTO tasks (run_id, task_id, ordinal, title, status, source, attempts,
			started_at, finished_at, duration_ms, block_reason, lost_paths, concerns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, task_id) DO UPDATE SET ordinal = excluded.ordinal, title = excluded.title,
			status = excluded.status, source = excluded.source, attempts = excluded.attempts,
			started_at = excluded.started_at, finished_at = excluded.finished_at,
			duration_ms = excluded.duration_ms, block_reason = excluded.block_reason,
			lost_paths = excluded.lost_paths, concerns = excluded.concerns`,
		t.RunID, t.TaskID, t.Ordinal, t.Title, string(t.Status), string(t.Source), t.Attempts,
		ms(t.StartedAt), ms(t.FinishedAt), t.Duration.Milliseconds(), t.BlockReason,
		pathList(t.LostPaths), jsonList(t.Concerns))
	if err != nil {
		return fmt.Errorf("put task %s/%s: %w", t.RunID, t.TaskID, err)
	}
	return nil
}

const taskCols = `run_id, task_id, ordinal, title, status, source, attempts, started_at, finished_at,
	duration_ms, block_reason, lost_paths, concerns`

func scanTask(sc scanner) (Task, error) {
	var t Task
	var status, source, lost, concerns string
	var started, finished sql.NullInt64
	var dur int64
	if err := sc.Scan(&t.RunID, &t.TaskID, &t.Ordinal, &t.Title, &status, &source, &t.Attempts,
		&started, &finished, &dur, &t.BlockReason, &lost, &concerns); err != nil {
		return t, err
	}
	t.Status, t.Source = TaskStatus(status), Source(source)
	t.StartedAt, t.FinishedAt = fromMS(started), fromMS(finished)
	t.Duration = time.Duration(dur) * time.Millisecond
	if err := json.Unmarshal([]byte(lost), (*bytepath.List)(&t.LostPaths)); err != nil {
		return t, fmt.Errorf("task %s lost_paths: %w", t.TaskID, err)
	}
	if err := json.Unmarshal([]byte(concerns), &t.Concerns); err != nil {
		return t, fmt.Errorf("task %s concerns: %w", t.TaskID, err)
	}
	return t, nil
}

// Tasks returns a run's tasks in plan order.
func (j *Journal) Tasks(runID string) ([]Task, error) {
	ts, err := queryAll(j, `SELECT `+taskCols+` FROM tasks WHERE run_id = ? ORDER BY ordinal, task_id`, []any{runID}, scanTask)
	if err != nil {
		return nil, fmt.Errorf("tasks of %s: %w", runID, err)
	}
	return ts, nil
}

// TaskStatuses returns a run's tasks with only their id and status, in
// plan order: what deciding a verdict needs, at a fraction of Tasks' cost
// on a 1,000-task run.
func (j *Journal) TaskStatuses(runID string) ([]Task, error) {
	ts, err := queryAll(j, `SELECT task_id, status FROM tasks WHERE run_id = ? ORDER BY ordinal, task_id`, []any{runID}, func(sc scanner) (Task, error) {
		t := Task{RunID: runID}
		err := sc.Scan(&t.TaskID, &t.Status)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("tasks of %s: %w", runID, err)
	}
	return ts, nil
}
