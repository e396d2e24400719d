// Package report builds a run's end report from the journal alone and
// renders it for a terminal, as markdown, as JSON and as an HTML page.
//
// Every figure comes from journal rows: task rows for status, source,
// attempts, duration, concerns and lost paths; unit rows for tokens and
// cost; gate rows for gate counts; the run row for times. A replayed unit
// cost nothing this time, so its tokens and cost are reported as "saved",
// never added to the run's spend.
//
// # The HTML page
//
// [HTML] adds what people look at: the run as an SVG timeline (a lane per
// worker, a bar per attempt coloured by where its work came from, gate,
// block and concern marks), per task why it ran and its diff highlighted
// by chroma, and the resume lineage. What the rows alone do not say (the
// loop's reasons, the patches between boundary commits) comes in as
// [Extras] from the loop. The page is one file with no fetches; every
// text in it is untrusted and written by html/template; a 1,000-task run's
// stays under [MaxHTMLSize].
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/implloop/implloop/cache"

	"github.com/implloop/implloop/internal/bytepath"
)

// Verdict is a run's outcome.
type Verdict string

// Verdicts, with their exit codes (see ExitCode).
const (
	Done        Verdict = "DONE"        // every counted task done
	Partial     Verdict = "PARTIAL"     // some done, not all
	Blocked     Verdict = "BLOCKED"     // none done
	Interrupted Verdict = "INTERRUPTED" // stopped by a signal
	Incomplete  Verdict = "INCOMPLETE"  // the run has not finished: still running, or killed
)

// ExitCode is the process exit code for the verdict:
// 0 DONE, 3 PARTIAL, 4 BLOCKED, 130 INTERRUPTED, 1 INCOMPLETE.
func (v Verdict) ExitCode() int {
	switch v {
	case Done:
		return 0
	case Partial:
		return 3
	case Blocked:
		return 4
	case Interrupted:
		return 130
	}
	return 1
}

// Outcome is a verdict with its tally.
type Outcome struct {
	Verdict Verdict `json:"verdict"`
	Done    int     `json:"done"`    // tasks done
	Counted int     `json:"counted"` // tasks in range, less the skipped ones
	Skipped int     `json:"skipped"`
}

// Headline is the verdict with its counts: "PARTIAL 9/13".
func (o Outcome) Headline() string { return fmt.Sprintf("%s %d/%d", o.Verdict, o.Done, o.Counted) }

// Decide is the verdict of a run's tasks (every task in range has a row).
// Skipped tasks (already checked in the plan) neither count for nor
// against DONE. An interrupted task makes the run INTERRUPTED and a
// running one INCOMPLETE; otherwise all counted tasks done is DONE (so is
// a run with nothing to do), none done is BLOCKED, and anything between is
// PARTIAL. The loop calls it for the verdict it records with FinishRun;
// Build calls it for the report.
func Decide(tasks []cache.Task) Outcome {
	var o Outcome
	interrupted, running := false, false
	for _, t := range tasks {
		switch t.Status {
		case cache.TaskSkipped:
			o.Skipped++
			continue
		case cache.TaskDone:
			o.Done++
		case cache.TaskInterrupted:
			interrupted = true
		case cache.TaskRunning:
			running = true
		}
		o.Counted++
	}
	switch {
	case interrupted:
		o.Verdict = Interrupted
	case running:
		o.Verdict = Incomplete
	case o.Done == o.Counted:
		o.Verdict = Done
	case o.Done == 0:
		o.Verdict = Blocked
	default:
		o.Verdict = Partial
	}
	return o
}

// Report is a run's end report.
type Report struct {
	RunID      string    `json:"run_id"`
	ParentID   string    `json:"parent_id,omitempty"`
	PlanPath   string    `json:"plan_path"`
	PlanSHA256 string    `json:"plan_sha256"`
	Outcome    Outcome   `json:"outcome"`
	Headline   string    `json:"headline"`  // "PARTIAL 9/13"
	ExitCode   int       `json:"exit_code"` // from the verdict
	Finished   bool      `json:"finished"`  // the run recorded its end
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at"` // finished_at, or the journal's last entry for an unfinished run
	WallMS     int64     `json:"wall_ms"`
	Tasks      []Task    `json:"tasks"`
	Totals     Totals    `json:"totals"`
	// Sandbox is the tool every live agent call of the run ran in
	// (--sandbox: "bubblewrap", "sandbox-exec"); "" for none.
	Sandbox string `json:"sandbox,omitempty"`

	// For the HTML report (not in report.json): the attempts in the order
	// they started, and the runs this one resumes, nearest first.
	Attempts []Attempt  `json:"-"`
	Lineage  []Ancestor `json:"-"`
}

// Attempt is one attempt of a task on the run's timeline: its units, then
// its gate.
type Attempt struct {
	Task    string
	Attempt int
	// Lane is the worker that ran the attempt: 0 while tasks run one at a
	// time; with --jobs, the first lane free when it started.
	Lane int
	// Source is live when any unit of the attempt was dispatched (or,
	// with no unit, its gate ran), else replayed.
	Source     string
	Start, End time.Time
	Live       Spend // what it spent
	Saved      Spend // what replaying saved
	Gate       *GateMark
	// AgentError is why the agent call failed (no gate ran then).
	AgentError string
	// callStart and callEnd span the attempt's units (its agent calls):
	// what runs at once with --jobs, and what lanes are drawn from.
	callStart, callEnd time.Time
}

// GateMark is an attempt's gate.
type GateMark struct {
	Command    string
	Passed     bool
	Replayed   bool
	ExitCode   int
	DurationMS int64
	At         time.Time
}

// Ancestor is a run in a resume's lineage.
type Ancestor struct {
	ID        string
	Verdict   string // "" when it never finished
	StartedAt time.Time
}

// Task is one task's line in the report.
type Task struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Status      string   `json:"status"`
	Source      string   `json:"source"`
	Attempts    int      `json:"attempts"`
	DurationMS  int64    `json:"duration_ms"`
	Live        Spend    `json:"live"`  // what this run spent on the task
	Saved       Spend    `json:"saved"` // what replaying saved
	BlockReason string   `json:"block_reason,omitempty"`
	Concerns    []string `json:"concerns,omitempty"`
	// Notes are what the task's row says that is no concern: a replay
	// across runs ("replayed: run X on H did this task ...").
	Notes     []string      `json:"notes,omitempty"`
	LostPaths bytepath.List `json:"lost_paths,omitempty"`
	// Agent and Model did the task's work: those of its last unit that
	// completed (a fallback's, when one took the call after a usage
	// limit). Empty when none completed.
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// Fallback is set when they are not the run's own agent and first
	// model: a fallback took the task's calls after a usage limit.
	Fallback bool `json:"fallback,omitempty"`
	// Sandboxed: the task's live agent calls ran in the run's sandbox.
	Sandboxed bool `json:"sandboxed,omitempty"`

	// For the HTML report: the last gate's output tail and where its whole
	// output is (a file in the blob store, or a copy beside the report of
	// one kept in a pack: see GateOutputBlob; "" when not kept).
	GateTail   string `json:"-"`
	GateOutput string `json:"-"`
	// GateOutputBlob is the whole output's blob hash ("" none).
	GateOutputBlob string `json:"-"`
}

// ReplayedNotePrefix starts the line a task's row keeps when it replayed
// across runs (the loop writes it with its concerns): a note, not a
// concern, in every report.
const ReplayedNotePrefix = "replayed: "

// splitNotes sorts a task row's concerns into concerns and notes.
func splitNotes(all []string) (concerns, notes []string) {
	for _, c := range all {
		if strings.HasPrefix(c, ReplayedNotePrefix) {
			notes = append(notes, c)
		} else {
			concerns = append(concerns, c)
		}
	}
	return concerns, notes
}

// Spend sums units: their count, tokens and cost.
type Spend struct {
	Units      int     `json:"units"`
	TokensIn   int64   `json:"tokens_in"`
	TokensOut  int64   `json:"tokens_out"`
	CacheRead  int64   `json:"cache_read"`
	CacheWrite int64   `json:"cache_write"`
	CostUSD    float64 `json:"cost_usd"`
	// TokensReported and CostReported count the units whose agent
	// reported tokens, and a cost: an agent that reports none (codex
	// reports no cost; a failed call may report nothing) is shown as
	// "not reported", never as zeros. A figure of exactly 0 reads as not
	// reported.
	TokensReported int `json:"tokens_reported"`
	CostReported   int `json:"cost_reported"`
}

// add adds unit u's figures. A figure that cannot be right (negative,
// not finite: a journal written by another program, or pulled) is left
// out, and sums saturate: a report of any journal has finite,
// non-negative totals (JSON cannot even write the others).
func (s *Spend) add(u *cache.Unit) {
	s.Units++
	seen := false
	for _, f := range []struct {
		sum *int64
		v   int64
	}{{&s.TokensIn, u.TokensIn}, {&s.TokensOut, u.TokensOut}, {&s.CacheRead, u.CacheRead}, {&s.CacheWrite, u.CacheWrite}} {
		if f.v > 0 {
			seen = true
			if *f.sum += f.v; *f.sum < 0 {
				*f.sum = math.MaxInt64
			}
		}
	}
	if seen {
		s.TokensReported++
	}
	if c := u.CostUSD; c > 0 && !math.IsInf(c, 0) {
		s.CostReported++
		if s.CostUSD += c; math.IsInf(s.CostUSD, 0) {
			s.CostUSD = math.MaxFloat64
		}
	}
}

// Totals sums the whole run: Live over every live unit of every attempt
// (failed and interrupted ones included), Saved over the replayed units.
type Totals struct {
	Live          Spend `json:"live"`
	Saved         Spend `json:"saved"`
	GatesLive     int   `json:"gates_live"`
	GatesReplayed int   `json:"gates_replayed"`
}

// Build reads the run's report from the journal. A run without a recorded
// end (FinishRun) is INCOMPLETE unless a task was interrupted, so the loop
// records its end first: Decide(tasks) -> FinishRun -> Build -> Write.
func Build(j *cache.Journal, runID string) (*Report, error) {
	run, err := j.GetRun(runID)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	tasks, err := j.Tasks(runID)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	units, err := j.Units(runID)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	gates, err := j.Gates(runID, "")
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	r := &Report{RunID: run.ID, ParentID: run.ParentID, PlanPath: run.PlanPath, PlanSHA256: run.PlanSHA256,
		Finished: run.Finished(), StartedAt: run.StartedAt}
	r.Outcome = outcomeOf(run, tasks)
	r.Headline = r.Outcome.Headline()
	r.ExitCode = r.Outcome.Verdict.ExitCode()
	byTask := r.addTasks(tasks)
	r.addUnits(units, byTask)
	r.markFallbacks(run)
	r.Attempts = attempts(units, gates)
	r.addGates(j, gates, byTask)
	if run.Finished() {
		r.EndedAt = run.FinishedAt
	} else {
		r.EndedAt = lastActivity(run, tasks, units, gates)
	}
	r.WallMS = max(0, r.EndedAt.Sub(r.StartedAt).Milliseconds())
	if run.ParentID != "" {
		runs, err := j.Lineage(run.ParentID)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		for _, a := range runs {
			r.Lineage = append(r.Lineage, Ancestor{ID: a.ID, Verdict: a.Verdict, StartedAt: a.StartedAt})
		}
	}
	return r, nil
}

// outcomeOf is the run's outcome as its tasks decide it, and as the loop
// recorded it where the tasks cannot tell.
func outcomeOf(run *cache.Run, tasks []cache.Task) Outcome {
	o := Decide(tasks)
	if !run.Finished() && o.Verdict != Interrupted {
		o.Verdict = Incomplete
	}
	// The loop may stop a run BLOCKED with tasks done (a task took the
	// journal away): the verdict it recorded stands.
	if run.Finished() && run.Verdict == string(Blocked) {
		o.Verdict = Blocked
	}
	// A run the loop stopped with nothing done, not for a failure (a cap
	// reached, a usage limit past --max-wait), is PARTIAL as it recorded.
	if run.Finished() && run.Verdict == string(Partial) && o.Verdict == Blocked {
		o.Verdict = Partial
	}
	return o
}

// addTasks lists the run's tasks, and returns them by id.
func (r *Report) addTasks(tasks []cache.Task) map[string]*Task {
	for _, t := range tasks {
		concerns, notes := splitNotes(t.Concerns)
		r.Tasks = append(r.Tasks, Task{ID: t.TaskID, Title: t.Title, Status: string(t.Status), Source: string(t.Source),
			Attempts: t.Attempts, DurationMS: t.Duration.Milliseconds(), BlockReason: t.BlockReason,
			Concerns: concerns, Notes: notes, LostPaths: t.LostPaths})
	}
	byTask := map[string]*Task{}
	for i := range r.Tasks {
		byTask[r.Tasks[i].ID] = &r.Tasks[i]
	}
	return byTask
}

// addUnits counts the agent calls, live or replayed, into the totals and
// their tasks', and names the agent and model that did each task.
func (r *Report) addUnits(units []cache.Unit, byTask map[string]*Task) {
	for i := range units {
		u := &units[i]
		t := byTask[u.TaskID]
		if t != nil && u.Status == cache.UnitCompleted {
			t.Agent, t.Model = workedBy(u.Preimage)
		}
		if u.Replayed() {
			r.Totals.Saved.add(u)
			if t != nil {
				t.Saved.add(u)
			}
		} else {
			r.Totals.Live.add(u)
			if t != nil {
				t.Live.add(u)
			}
		}
	}
}

// markFallbacks marks the tasks another agent or model than the run's own
// (its first model: --model a,b: a) did, and those done live in a sandbox.
func (r *Report) markFallbacks(run *cache.Run) {
	var set struct {
		Agent string `json:"agent"`
		Model string `json:"model"`
	}
	_ = json.Unmarshal(run.Settings, &set)
	own, _, _ := strings.Cut(set.Model, ",")
	r.Sandbox = sandboxOf(run)
	for i := range r.Tasks {
		t := &r.Tasks[i]
		t.Fallback = t.Agent != "" && (t.Agent != set.Agent || t.Model != strings.TrimSpace(own))
		t.Sandboxed = r.Sandbox != "" && t.Live.Units > 0
	}
}

// addGates gives each task its last gate's output, and counts the gates
// run live and replayed.
func (r *Report) addGates(j *cache.Journal, gates []cache.Gate, byTask map[string]*Task) {
	for _, g := range gates {
		if t := byTask[g.TaskID]; t != nil {
			t.GateTail, t.GateOutput, t.GateOutputBlob = g.Feedback, "", g.Output
			if p, err := j.Blobs().Path(g.Output); err == nil && g.Output != "" {
				t.GateOutput = p
			}
		}
		if g.Command == cache.AgentFailed {
			continue // no gate ran: the agent call failed
		}
		if g.Replayed {
			r.Totals.GatesReplayed++
		} else {
			r.Totals.GatesLive++
		}
	}
}

// lastActivity is the latest moment the journal records of an unfinished
// run: its start, or a later task, unit or gate.
func lastActivity(run *cache.Run, tasks []cache.Task, units []cache.Unit, gates []cache.Gate) time.Time {
	last := run.StartedAt
	later := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	for _, t := range tasks {
		later(t.FinishedAt)
		later(t.StartedAt)
	}
	for i := range units {
		later(units[i].StartedAt)
		later(units[i].FinishedAt)
	}
	for _, g := range gates {
		later(g.At)
	}
	return last
}

// workedBy is the agent and model a unit's preimage names (its identity's
// agent and model fields).
func workedBy(preimage []byte) (agent, model string) {
	var p struct {
		Agent string `json:"agent"`
		Model string `json:"model"`
	}
	_ = json.Unmarshal(preimage, &p)
	return p.Agent, p.Model
}

// JSON is the report as indented JSON, newline-terminated.
func JSON(r *Report) []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil { // a Report holds nothing json cannot encode
		panic(err)
	}
	return append(b, '\n')
}

// Paths are where Write puts a run's report in implloop's state directory
// (cache.Journal.Dir: the git directory's implloop/).
func Paths(stateDir, runID string) (md, js string) {
	dir := filepath.Join(stateDir, "runs", runID)
	return filepath.Join(dir, "report.md"), filepath.Join(dir, "report.json")
}

// Write stores the report as runs/<id>/report.md and report.json in the
// state directory, each replaced atomically, and returns their paths. The
// directories are created as needed, the state directory itself included.
func Write(stateDir string, r *Report) (md, js string, err error) {
	md, js = Paths(stateDir, r.RunID)
	if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	if err := writeAtomic(md, bytes.NewReader(Markdown(r)), true); err != nil {
		return "", "", err
	}
	if err := writeAtomic(js, bytes.NewReader(JSON(r)), true); err != nil {
		return "", "", err
	}
	return md, js, nil
}

// writeAtomic replaces the file at path with src's content, made durable
// first when sync.
func writeAtomic(path string, src io.Reader, sync bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	_, err = io.Copy(f, src)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}

// sandboxOf is the sandbox tool run's live agent calls ran in, as its
// settings record it (loop.Settings.SandboxTool; "" for none).
func sandboxOf(run *cache.Run) string {
	var s struct {
		Tool string `json:"sandbox_tool"`
	}
	if len(run.Settings) == 0 || json.Unmarshal(run.Settings, &s) != nil {
		return ""
	}
	return s.Tool
}
