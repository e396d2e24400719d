package loop

import (
	"time"

	"github.com/implloop/implloop/internal/bytepath"
)

// Event types of the run's event stream (docs/events.md). Each is journaled
// and handed to the Observer; `implloop run --json` prints them as NDJSON.
const (
	EvRunStarted   = "run_started"
	EvJournalMoved = "journal_moved"
	EvWarning      = "warning"
	EvResumePlan   = "resume_plan"
	EvTaskStarted  = "task_started"
	EvUnitStarted  = "unit_started"
	EvUnitReplayed = "unit_replayed"
	EvUnitFinished = "unit_finished"
	// EvAhead tells of a call made ahead with its wave (--jobs): status
	// "running" when it starts in its worktree, "returned" when the agent
	// is back (duration_ms; message when it could not run). It is
	// journaled as a unit at its task's turn (unit_started, unit_finished);
	// these two say what runs meanwhile. The observer has them as they
	// happen, from the calls' goroutines; the journal once the run's own
	// goroutine gets to them (their time is when they happened).
	EvAhead        = "ahead"
	EvGate         = "gate"
	EvBoundary     = "boundary"
	EvConcern      = "concern"
	EvRestored     = "restored"
	EvBlocked      = "blocked"
	EvTaskFinished = "task_finished"
	EvRunFinished  = "run_finished"
	// Unattended runs (limits.go, budget.go, heartbeat.go). EvLimit: a
	// call hit a limit (status: its kind; until: when it lifts, when
	// said). EvFallback: another agent or model of the chain takes the
	// call. EvWait: the run waits for a limit to lift (until,
	// duration_ms). EvStopped: the run stops though no task failed (a
	// cap, or a limit past --max-wait). EvHeartbeat: a call, a gate or a
	// wait still lasts (not journaled).
	EvLimit     = "limit"
	EvFallback  = "fallback"
	EvWait      = "wait"
	EvStopped   = "stopped"
	EvHeartbeat = "heartbeat"
	// EvNothingChanged is the only event of a resume that found plan,
	// settings and tree as its parent left them: no run is journaled, and
	// the event's run_id is the parent's.
	EvNothingChanged = "nothing_changed"
)

// Event is one record of the stream. Fields are omitted when they do not
// apply to the event's type.
type Event struct {
	Type      string    `json:"type"`
	Time      time.Time `json:"time"`
	RunID     string    `json:"run_id"`
	ParentID  string    `json:"parent_id,omitempty"`
	Plan      string    `json:"plan,omitempty"`
	PlanSHA   string    `json:"plan_sha256,omitempty"`
	Task      string    `json:"task,omitempty"`
	Title     string    `json:"title,omitempty"`
	Index     int       `json:"index,omitempty"` // 1-based position among the selected tasks
	Count     int       `json:"count,omitempty"` // number of selected tasks
	Unit      string    `json:"unit,omitempty"`
	Identity  string    `json:"identity,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	Source    string    `json:"source,omitempty"` // live or replayed
	From      string    `json:"replayed_from,omitempty"`
	Reasons   []string  `json:"reasons,omitempty"` // why a unit runs live
	Status    string    `json:"status,omitempty"`
	Passed    *bool     `json:"passed,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	Command   string    `json:"command,omitempty"`
	TokensIn  int64     `json:"tokens_in,omitempty"`
	TokensOut int64     `json:"tokens_out,omitempty"`
	CostUSD   float64   `json:"cost_usd,omitempty"`
	Millis    int64     `json:"duration_ms,omitempty"`
	Head      string    `json:"head,omitempty"`
	Dirty     *int      `json:"dirty,omitempty"`
	Message   string    `json:"message,omitempty"`
	// Watched: the boundary looked only at the paths the work tree's
	// watch saw change (watchtree.go).
	Watched bool `json:"watched,omitempty"`
	// Worktree is where a call made ahead with its wave ran (--jobs),
	// relative to the repository root.
	Worktree string        `json:"worktree,omitempty"`
	Paths    bytepath.List `json:"paths,omitempty"`
	// Agent and Model name who made a call (limit, fallback, wait).
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// Until is when a limit lifts (limit, wait, stopped, heartbeat).
	Until   time.Time     `json:"until,omitzero"`
	Verdict string        `json:"verdict,omitempty"`
	Done    *int          `json:"done,omitempty"`
	Tasks   []PlannedTask `json:"tasks,omitempty"` // resume_plan

	// Sandbox is the tool the run's agent calls run in (--sandbox): on
	// run_started, on a live unit_started, and on a gate that ran in it
	// (--sandbox-gates).
	Sandbox string `json:"sandbox,omitempty"`
}

// PlannedTask is one line of a resume plan (or a dry run's work list).
type PlannedTask struct {
	Task    string   `json:"task"`
	Title   string   `json:"title"`
	Action  string   `json:"action"` // replay, live, skip, gate (re-run a blocked task's gate first), restore (write its work back, then replay)
	Reasons []string `json:"reasons,omitempty"`
	From    string   `json:"replayed_from,omitempty"`
	// Paths are, for a restore, the paths whose work is written back.
	Paths bytepath.List `json:"paths,omitempty"`
}

// Observer receives the events of a run as they happen. Implementations
// must not block for long: the loop calls them inline. Calls never
// overlap: with --jobs, where events also come from the goroutines of
// calls made ahead, the loop serializes them (waveObserver).
type Observer interface {
	Event(e Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Event calls f.
func (f ObserverFunc) Event(e Event) { f(e) }

func intp(i int) *int    { return &i }
func boolp(b bool) *bool { return &b }
