package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/words"
)

// BlameLine is one line of a file and who last wrote it: a task of a run
// (with its attempt, agent and model), or, outside the loop, the commit
// that did, the work before a run, or an edit since the last boundary.
type BlameLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
	// Run, Task, Title, Attempt, Agent and Model name the task that
	// wrote the line: the attempt whose work its boundary holds (the
	// task's last), the agent backend (AgentCmd: an exec agent's command
	// line) and the model ("default": the agent's own); Restored when a
	// resume wrote its work back.
	Run      string `json:"run,omitempty"`
	Task     string `json:"task,omitempty"`
	Title    string `json:"title,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Agent    string `json:"agent,omitempty"`
	AgentCmd string `json:"agent_cmd,omitempty"`
	Model    string `json:"model,omitempty"`
	Restored bool   `json:"restored,omitempty"`
	// Commit is the commit git blame found (a boundary, or one of the
	// user's), "" for a line changed since the run's last boundary.
	Commit string `json:"commit,omitempty"`
	// Outside says, for a line no task wrote, where it came from.
	Outside string `json:"outside,omitempty"`
}

// ErrNoBoundaryCommits is a run with no boundary commit to blame from.
var ErrNoBoundaryCommits = errors.New("the run has no boundary commits")

// blameLines says, for each line of path (relative to the repo root) as it is
// in the work tree now, which task of runID's lineage last wrote it. It is
// git's own blame along the run's boundary chain (`git blame
// --first-parent` from its last boundary commit: every first parent is
// the boundary before), each boundary commit mapped to the task it
// follows through the journal. from and to (1-based) limit the lines; 0
// means the whole file. Read-only.
func blameLines(ctx context.Context, j *cache.Journal, repoRoot, runID, path string, from, to int) ([]BlameLine, error) {
	last, ok, err := j.LastBoundary(runID)
	if err != nil {
		return nil, err
	}
	if !ok || last.Commit == "" {
		return nil, fmt.Errorf("run %s: %w", runID, ErrNoBoundaryCommits)
	}
	_, statErr := os.Lstat(filepath.Join(repoRoot, filepath.FromSlash(path)))
	lines, err := boundary.Blame(ctx, repoRoot, last.Commit, path, from, to, statErr == nil)
	if err != nil {
		return nil, err
	}
	who, err := boundaryTasks(j, runID)
	if err != nil {
		return nil, err
	}
	out := make([]BlameLine, len(lines))
	for i, l := range lines {
		b := BlameLine{Line: l.Line, Text: l.Text, Commit: l.Commit}
		switch w, ok := who[l.Commit]; {
		case strings.Trim(l.Commit, "0") == "":
			b.Commit, b.Outside = "", "changed since run "+runID+"'s last boundary"
		case ok && w.Task != "":
			b.Run, b.Task, b.Title, b.Attempt, b.Agent, b.AgentCmd, b.Model, b.Restored = w.Run, w.Task, w.Title, w.Attempt, w.Agent, w.AgentCmd, w.Model, w.Restored
		case ok:
			b.Outside = w.Outside
		default:
			b.Outside = "commit " + words.ShortCommit(l.Commit) + ": " + l.Summary
		}
		out[i] = b
	}
	return out, nil
}

// boundaryTasks maps every boundary commit of runID's lineage to the task
// whose work it holds (the boundary after the task, or the one a resume
// took after it wrote the task's work back), or to why no task's.
func boundaryTasks(j *cache.Journal, runID string) (map[string]BlameLine, error) {
	lineage, err := j.LineageIDs(runID)
	if err != nil {
		return nil, err
	}
	out := map[string]BlameLine{}
	for _, id := range lineage {
		run, err := j.GetRun(id)
		if err != nil {
			return nil, err
		}
		var s Settings
		_ = json.Unmarshal(run.Settings, &s)
		tasks, err := j.Tasks(id)
		if err != nil {
			return nil, err
		}
		byID := map[string]cache.Task{}
		for _, t := range tasks {
			byID[t.TaskID] = t
		}
		bs, err := j.Boundaries(id)
		if err != nil {
			return nil, err
		}
		// The attempt a task's boundary holds the work of is its last
		// unit's: the task row's count is not written until the task
		// ends (0 for a run interrupted during its gate). Who did the
		// work: the agent and model of its last completed unit in the run
		// (a fallback's, when one took the call).
		units, err := j.Units(id)
		if err != nil {
			return nil, err
		}
		attempt := map[string]int{}
		worked := map[string][2]string{}
		for _, u := range units {
			attempt[u.TaskID] = max(attempt[u.TaskID], u.Attempt)
			if p, err := identity.Parse(u.Preimage); err == nil && u.Status == cache.UnitCompleted {
				worked[u.TaskID] = [2]string{p.Agent, p.Model}
			}
		}
		for i, b := range bs {
			if b.Commit == "" {
				continue
			}
			task, restored := b.AfterTask, false
			if task == "" && i > 0 && i+1 < len(bs) {
				task, restored = bs[i+1].AfterTask, true // a resume's restore, then the task
			}
			if task == "" {
				what := "uncommitted when run " + id + " started"
				if run.ParentID != "" {
					what = "changed between run " + run.ParentID + " and run " + id
				}
				out[b.Commit] = BlameLine{Outside: what}
				continue
			}
			t := byID[task]
			ag, model := s.Agent, s.Models()[0]
			if w, ok := worked[task]; ok { // a fallback's, when one took the call
				ag, model = w[0], w[1]
			}
			if model == "" {
				model = "default"
			}
			cmdLine := s.AgentCmd
			if ag != "exec" {
				cmdLine = ""
			}
			out[b.Commit] = BlameLine{Run: id, Task: task, Title: t.Title, Attempt: max(attempt[task], t.Attempts),
				Agent: ag, AgentCmd: cmdLine, Model: model, Restored: restored}
		}
	}
	return out, nil
}
