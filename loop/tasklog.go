package loop

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/implloop/implloop/cache"
)

// TaskLog is what one task's attempts said in a run, in the agent's and
// the gate's own words (show --task N --log): per attempt, the agent's
// final message, the end of its stdout and stderr, why the call failed,
// and the gate's whole output. A replayed attempt shows what the run that
// made the call journaled.
type TaskLog struct {
	RunID    string       `json:"run_id"`
	TaskID   string       `json:"task_id"`
	Title    string       `json:"title"`
	Status   string       `json:"status"`
	Attempts []AttemptLog `json:"attempts"`
}

// AttemptLog is one attempt of a TaskLog.
type AttemptLog struct {
	Attempt int `json:"attempt"`
	// Source is live or replayed ("" for an attempt with no agent call:
	// a blocked task's gate run again first).
	Source string `json:"source,omitempty"`
	// ReplayedFrom is the run and unit that made the call ("run:unit").
	ReplayedFrom string `json:"replayed_from,omitempty"`
	// Status is the call's: completed, failed, interrupted, running.
	Status   string `json:"status,omitempty"`
	ExitCode int    `json:"exit_code"`
	// Error is why the call failed, as the run said it.
	Error string `json:"error,omitempty"`
	// FinalMessage is the agent's final message (its result text), when
	// the agent reported one.
	FinalMessage string `json:"final_message,omitempty"`
	// StdoutTail and StderrTail are the last lines of what the agent
	// printed (TailLines lines, TailBytes bytes at most).
	StdoutTail string   `json:"stdout_tail,omitempty"`
	StderrTail string   `json:"stderr_tail,omitempty"`
	Gate       *GateLog `json:"gate,omitempty"`
}

// GateLog is an attempt's gate.
type GateLog struct {
	Command  string `json:"command"`
	Passed   bool   `json:"passed"`
	ExitCode int    `json:"exit_code"`
	Replayed bool   `json:"replayed,omitempty"`
	// Summary is the line that says why it failed (GateSummary).
	Summary string `json:"summary,omitempty"`
	// Output is the gate's whole output; OutputMissing when its blob is
	// not there (pulled without transcripts, or removed).
	Output        string `json:"output"`
	OutputMissing bool   `json:"output_missing,omitempty"`
}

// Tail bounds of an agent's stdout and stderr in a TaskLog.
const (
	TailLines = 40
	TailBytes = 8 << 10
)

// taskLogOf reads task taskID's attempts in run runID from the journal and
// its blobs (read-only). ok is false when the run has no such task.
func taskLogOf(j *cache.Journal, runID, taskID string) (log *TaskLog, ok bool, err error) {
	logs, err := taskLogs(j, runID, taskID, true)
	if err != nil {
		return nil, false, err
	}
	log, ok = logs[taskID]
	return log, ok, nil
}

// taskLogs reads the task logs of run runID: one task's (taskID), or every
// task's (""); a passed gate's output is read only when allGates.
func taskLogs(j *cache.Journal, runID, taskID string, allGates bool) (map[string]*TaskLog, error) {
	tasks, err := j.Tasks(runID)
	if err != nil {
		return nil, err
	}
	logs := map[string]*TaskLog{}
	for _, t := range tasks {
		if taskID == "" || t.TaskID == taskID {
			logs[t.TaskID] = &TaskLog{RunID: runID, TaskID: t.TaskID, Title: t.Title, Status: string(t.Status)}
		}
	}
	if len(logs) == 0 {
		return logs, nil
	}
	units, err := j.Units(runID)
	if err != nil {
		return nil, err
	}
	gates, err := j.Gates(runID, taskID)
	if err != nil {
		return nil, err
	}
	at := map[string]map[int]*AttemptLog{}
	attempt := func(task string, n int) *AttemptLog {
		if at[task] == nil {
			at[task] = map[int]*AttemptLog{}
		}
		a := at[task][n]
		if a == nil {
			a = &AttemptLog{Attempt: n}
			at[task][n] = a
		}
		return a
	}
	for _, u := range units {
		if logs[u.TaskID] != nil {
			unitLog(j, attempt(u.TaskID, u.Attempt), u)
		}
	}
	for _, g := range gates {
		if logs[g.TaskID] == nil || g.Command == agentGate {
			continue // an agent failure: the call's Error says it
		}
		attempt(g.TaskID, g.Attempt).Gate = gateLog(j, g, allGates)
	}
	for id, byAttempt := range at {
		l := logs[id]
		for _, a := range byAttempt {
			l.Attempts = append(l.Attempts, *a)
		}
		sort.Slice(l.Attempts, func(i, k int) bool { return l.Attempts[i].Attempt < l.Attempts[k].Attempt })
	}
	return logs, nil
}

// unitLog fills attempt log a with what unit u said: how it ended, the
// agent's final message, the tails of its stdout and stderr.
func unitLog(j *cache.Journal, a *AttemptLog, u cache.Unit) {
	a.Source, a.Status, a.ExitCode, a.Error = "live", string(u.Status), u.ExitCode, u.Error
	if u.Replayed() {
		a.Source, a.ReplayedFrom = "replayed", u.ReplayedFromRun+":"+u.ReplayedFromUnit
	}
	if b, err := j.ReadBlob(u.Result); err == nil && u.Result != "" {
		var res struct {
			Text  string
			Error string
		}
		if json.Unmarshal(b, &res) == nil {
			a.FinalMessage = strings.TrimSpace(res.Text)
		}
	}
	a.StdoutTail = blobTail(j, u.Stdout)
	a.StderrTail = blobTail(j, u.Stderr)
}

// gateLog is gate g's log: its whole output when it failed (or allGates),
// else what its feedback kept, and a failed gate's summary.
func gateLog(j *cache.Journal, g cache.Gate, allGates bool) *GateLog {
	gl := &GateLog{Command: g.Command, Passed: g.Passed, ExitCode: g.ExitCode, Replayed: g.Replayed}
	if allGates || !g.Passed {
		b, err := j.ReadBlob(g.Output)
		switch {
		case err == nil && g.Output != "":
			gl.Output = string(b)
		default:
			gl.Output, gl.OutputMissing = g.Feedback, true
		}
	}
	if !g.Passed {
		gl.Summary = GateSummary(gl.Output)
		if gl.Summary == "" {
			gl.Summary = GateSummary(g.Feedback)
		}
	}
	return gl
}

// blobTail is the end of blob h as text: its last TailLines lines, at most
// TailBytes ("" when it is empty or gone).
func blobTail(j *cache.Journal, h string) string {
	if h == "" {
		return ""
	}
	b, err := j.ReadBlob(h)
	if err != nil {
		return ""
	}
	s := strings.TrimRight(tail(b, TailBytes), "\n")
	if lines := strings.Split(s, "\n"); len(lines) > TailLines {
		s = strings.Join(lines[len(lines)-TailLines:], "\n")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Text renders the log for a terminal: each attempt, the agent's final
// message, the ends of its output, and the gate's whole output.
func (l *TaskLog) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "task %s (%s) in run %s: %s, %d attempt(s)\n", l.TaskID, l.Title, l.RunID, l.Status, len(l.Attempts))
	indent := func(s string) string { return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") }
	for _, a := range l.Attempts {
		b.WriteString("\n")
		switch {
		case a.Source == "replayed":
			fmt.Fprintf(&b, "attempt %d: replayed from %s (the agent's words as that run journaled them)\n", a.Attempt, a.ReplayedFrom)
		case a.Source == "live":
			fmt.Fprintf(&b, "attempt %d: live, the agent %s (exit %d)\n", a.Attempt, a.Status, a.ExitCode)
		default:
			fmt.Fprintf(&b, "attempt %d: no agent call (the gate ran first)\n", a.Attempt)
		}
		if a.Error != "" {
			fmt.Fprintf(&b, "  the call failed:\n%s\n", indent(a.Error))
		}
		if a.Source != "" {
			if a.FinalMessage != "" {
				fmt.Fprintf(&b, "  the agent's final message:\n%s\n", indent(a.FinalMessage))
			} else {
				b.WriteString("  the agent's final message: none reported\n")
			}
			for _, o := range []struct{ name, text string }{{"stdout", a.StdoutTail}, {"stderr", a.StderrTail}} {
				if o.text == "" {
					fmt.Fprintf(&b, "  %s: empty\n", o.name)
					continue
				}
				fmt.Fprintf(&b, "  %s (the end):\n%s\n", o.name, indent(o.text))
			}
		}
		if g := a.Gate; g != nil {
			verdict := "passed"
			if !g.Passed {
				verdict = fmt.Sprintf("failed, exit %d", g.ExitCode)
			}
			if g.Replayed {
				verdict += ", replayed"
			}
			fmt.Fprintf(&b, "  gate `%s`: %s\n", g.Command, verdict)
			switch {
			case g.OutputMissing && g.Output == "":
				b.WriteString("    (its output is not in the journal)\n")
			case g.OutputMissing:
				fmt.Fprintf(&b, "    (only its end is in the journal)\n%s\n", indent(g.Output))
			case strings.TrimSpace(g.Output) == "":
				b.WriteString("    (no output)\n")
			default:
				fmt.Fprintf(&b, "%s\n", indent(g.Output))
			}
		}
	}
	return b.String()
}
