package loop

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/report"
)

// reasonFresh is why a unit of a run with no parent ran live, in explain's
// words.
const reasonFresh = "fresh run: never ran before"

// Explained reports whether a resume planned the task otherwise than a
// plain replay or live run (a restore, a gate re-run, a replay with a
// remark): explain and the HTML report show those plan entries.
func (p PlannedTask) Explained() bool {
	return p.Action == ActionRestore || p.Action == ActionGate || (p.Action == ActionReplay && len(p.Reasons) > 0)
}

// writeHTMLReport writes rep's report.html beside its report.md and
// report.json (see reportExtras) and returns its path.
func writeHTMLReport(ctx context.Context, j *cache.Journal, repoRoot string, rep *report.Report) (string, error) {
	x, err := reportExtras(ctx, j, repoRoot, rep.RunID)
	if err != nil {
		return "", err
	}
	gateOutputFiles(j, rep)
	return report.WriteHTML(j.Dir(), rep, x)
}

// gateOutputFiles gives each task's gate output a file for the page to
// name: the blob's own file, else (a gate output pulled into a pack) a
// copy beside the report; none when the blob cannot be read.
func gateOutputFiles(j *cache.Journal, rep *report.Report) {
	for i := range rep.Tasks {
		t := &rep.Tasks[i]
		if t.GateOutputBlob == "" || t.GateTail == "" {
			continue // no output shown, none to name
		}
		if fi, err := os.Stat(t.GateOutput); err == nil && fi.Mode().IsRegular() {
			continue
		}
		t.GateOutput = ""
		r, err := j.Blobs().Open(t.GateOutputBlob)
		if err != nil {
			continue
		}
		if p, err := report.CopyGateOutput(j.Dir(), rep, i, r); err == nil {
			t.GateOutput = p
		}
		r.Close()
	}
}

// reportExtras are what run runID's HTML report adds to the journal's
// rows: per task, why each unit ran (the loop's journaled words, as
// explain prints them), what a resume restored, and its patch between the
// boundary commits around it (read-only). A repository whose boundary
// commits cannot be read leaves the diffs out and says why.
func reportExtras(ctx context.Context, j *cache.Journal, repoRoot, runID string) (*report.Extras, error) {
	run, err := j.GetRun(runID)
	if err != nil {
		return nil, err
	}
	dec, err := decisionsOf(j, runID)
	if err != nil {
		return nil, err
	}
	units, err := j.Units(runID)
	if err != nil {
		return nil, err
	}
	tasks := map[string]*report.TaskExtras{}
	task := func(id string) *report.TaskExtras {
		if tasks[id] == nil {
			tasks[id] = &report.TaskExtras{}
		}
		return tasks[id]
	}
	var lineage []string
	if run.ParentID != "" {
		if lineage, err = j.LineageIDs(run.ParentID); err != nil {
			return nil, err
		}
	}
	for _, u := range units {
		t := task(u.TaskID)
		t.Why = append(t.Why, plainWhy(j, u, lineage, dec, run.ParentID == ""))
	}
	for _, id := range dec.Order {
		if p := dec.Planned[id]; p.Explained() {
			t := task(id)
			t.Why = append(t.Why, "the resume planned it ("+planWords[p.Action]+"): "+strings.Join(p.Reasons, "; "))
			t.Restored = dec.Restored[id]
		}
	}
	// The agent's final message, and each failed gate before the last
	// (the page shows the last gate's output already).
	logs, err := taskLogs(j, runID, "", false)
	if err != nil {
		return nil, err
	}
	for id, l := range logs {
		lastGate := 0
		for _, a := range l.Attempts {
			if a.Gate != nil {
				lastGate = a.Attempt
			}
		}
		for _, a := range l.Attempts {
			if a.FinalMessage != "" {
				task(id).FinalMessage = a.FinalMessage
			}
			if g := a.Gate; g != nil && !g.Passed && a.Attempt != lastGate {
				task(id).FailedGates = append(task(id).FailedGates, report.FailedGate{Attempt: a.Attempt, Command: g.Command,
					ExitCode: g.ExitCode, Summary: g.Summary, Output: g.Output, Replayed: g.Replayed})
			}
		}
	}
	x := &report.Extras{Tasks: map[string]report.TaskExtras{}}
	if err := addPatches(ctx, j, repoRoot, runID, task); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x.DiffNote = "The diffs could not be read from the boundary commits: " + err.Error()
	}
	for id, t := range tasks {
		x.Tasks[id] = *t
	}
	return x, nil
}

// planWords names a resume plan's action in the report's "why" lines.
var planWords = map[string]string{
	ActionRestore: "its work was written back first", ActionGate: "its gate ran first",
	ActionReplay: "replayed", ActionLive: "live", ActionAcross: "replayed across runs", ActionSkip: "skipped",
}

// plainWhy is why unit u ran live or replayed, in plain words for the
// report: which run did the work of a replayed attempt (and on which
// machine, when it is not this run's lineage), or the loop's journaled
// reasons for a live call, and whether the call was made ahead with its
// wave. fresh: the run resumes nothing.
func plainWhy(j *cache.Journal, u cache.Unit, lineage []string, dec *Decisions, fresh bool) string {
	head := fmt.Sprintf("attempt %d", u.Attempt)
	if u.Replayed() {
		if slices.Contains(lineage, u.ReplayedFromRun) {
			return fmt.Sprintf("%s replayed: run %s did it earlier, no agent call", head, u.ReplayedFromRun)
		}
		where := ""
		if r, err := j.GetRun(u.ReplayedFromRun); err == nil && r.Host != "" {
			where = " on " + r.Host
		}
		return fmt.Sprintf("%s replayed: run %s%s did this task from the same tree, no agent call", head, u.ReplayedFromRun, where)
	}
	line := head + " ran live"
	switch why := dec.Unit[u.UnitID]; {
	case len(why) > 0:
		line += ": " + strings.Join(why, ", ")
	case fresh && u.Attempt == 1:
		line += ": the first run of this task"
	case fresh:
		line += ": the attempt before it failed"
	}
	if dec.Ahead[u.UnitID] {
		line += "; this call was made ahead with its wave, in a worktree of its own"
	}
	return line
}

// addPatches reads each task's patch between the boundaries around its
// last run in runID (taskBoundaries' rule), all in one git call.
func addPatches(ctx context.Context, j *cache.Journal, repoRoot, runID string, task func(string) *report.TaskExtras) error {
	bs, err := j.Boundaries(runID)
	if err != nil {
		return err
	}
	last := map[string]int{}
	for i, b := range bs {
		if i > 0 && b.AfterTask != "" {
			last[b.AfterTask] = i
		}
	}
	var ids []string
	for id, i := range last {
		if bs[i-1].Commit != "" && bs[i].Commit != "" {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return last[a] - last[b] })
	pairs := make([][2]string, len(ids))
	for k, id := range ids {
		pairs[k] = [2]string{bs[last[id]-1].Commit, bs[last[id]].Commit}
	}
	patches, err := boundary.Patches(ctx, repoRoot, pairs, report.PatchLimit)
	if err != nil {
		return err
	}
	for k, id := range ids {
		t := task(id)
		t.HasEffect, t.Patch, t.PatchSize, t.PatchCut = true, patches[k].Text, patches[k].Size, patches[k].Truncated
	}
	return nil
}

// htmlReportTimeout bounds reading the diffs for report.html at the end of
// a run, an interrupted one included.
const htmlReportTimeout = 30 * time.Second
