package loop

import (
	"context"
	"errors"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/report"
	"github.com/implloop/implloop/travel"
)

// The inspector: what commands read of a repository's journal.
//
// Commands do not touch storage (cmd/implloop/thin_test.go): they open
// an Inspector over the journal and ask it for the read-only views they
// print (explain, blame, a task's effect, its log, the report and its
// page, what a restore would write), or hand its journal on to a library
// that writes it (travel's push and pull, a resume). The journal's rows
// are named here too (RunRecord, TaskRecord), so that no command imports
// cache.

// RunRecord is a journaled run, as commands see it.
type RunRecord = cache.Run

// TaskRecord is a journaled task row of a run.
type TaskRecord = cache.Task

// The statuses and sources of the journal's rows that commands print.
const (
	TaskPending    = cache.TaskPending
	TaskSkipped    = cache.TaskSkipped
	SourceReplayed = cache.SourceReplayed
)

// JournalLegacyDir is where an older implloop kept the journal, in the
// work tree (moved into .git/implloop/ by the next run).
const JournalLegacyDir = cache.LegacyDir

// The journal's errors that commands turn into hints.
var (
	ErrNotRepository = cache.ErrNotRepository
	ErrNoJournal     = cache.ErrNoJournal
	ErrNotFound      = cache.ErrNotFound
	ErrNewerSchema   = cache.ErrNewerSchema
)

// JournalSchema is the journal schema version this implloop writes.
func JournalSchema() int { return cache.SchemaVersion() }

// Inspector is a repository's journal opened for a command.
type Inspector struct {
	root string
	j    *cache.Journal
}

// Inspect opens the journal of the repository at root read-only (an
// older schema is refused: a read never upgrades).
func Inspect(root string) (*Inspector, error) {
	j, err := cache.OpenReadOnly(root)
	if err != nil {
		return nil, err
	}
	return &Inspector{root: root, j: j}, nil
}

// InspectIfAny is Inspect, nil (and no error) when nothing has run in the
// repository yet: the journal is never created by a read.
func InspectIfAny(root string) (*Inspector, error) {
	in, err := Inspect(root)
	if errors.Is(err, cache.ErrNoJournal) {
		return nil, nil
	}
	return in, err
}

// InspectUpgrading opens the journal read-only, unless an older implloop
// wrote it: a command that goes on to write (resume, push) upgrades the
// schema (cache.Open) rather than refuse to read it.
func InspectUpgrading(root string) (*Inspector, error) {
	j, err := cache.OpenReadOnly(root)
	if errors.Is(err, cache.ErrOlderSchema) {
		j, err = cache.Open(root)
	}
	if err != nil {
		return nil, err
	}
	return &Inspector{root: root, j: j}, nil
}

// JournalOpener opens the journal of the repository at root for writing
// (creating it, upgrading an older schema), when the caller is ready: for
// pull, which imports runs into it.
func JournalOpener(root string) func() (*cache.Journal, error) {
	return func() (*cache.Journal, error) { return cache.Open(root) }
}

// Close closes the journal.
func (in *Inspector) Close() error { return in.j.Close() }

// Journal is the journal, for a library that takes it (travel, report).
func (in *Inspector) Journal() *cache.Journal { return in.j }

// ResolveRun resolves ref as every command does: an id or a unique
// prefix, "" for the latest run.
func (in *Inspector) ResolveRun(ref string) (*RunRecord, error) {
	if ref == "" {
		return in.j.LatestRun("")
	}
	return in.j.ResolveRun(ref)
}

// ListRuns lists the journaled runs, newest first.
func (in *Inspector) ListRuns() ([]RunRecord, error) { return in.j.ListRuns() }

// Tasks lists run runID's task rows.
func (in *Inspector) Tasks(runID string) ([]TaskRecord, error) { return in.j.Tasks(runID) }

// Explain says why each unit of run replayed or ran live (only task
// taskID's when it is not ""), in the loop's own words, and the tasks its
// resume planned otherwise: what `implloop explain` prints (explainRun).
func (in *Inspector) Explain(run *RunRecord, taskID string) (*Explanation, error) {
	return explainRun(in.j, run, taskID)
}

// Blame says, for each line from..to of path (relative to the repo root)
// as run runID left it, which task of the run last changed it (blameLines).
func (in *Inspector) Blame(ctx context.Context, runID, path string, from, to int) ([]BlameLine, error) {
	return blameLines(ctx, in.j, in.root, runID, path, from, to)
}

// TaskEffect is what task taskID did to the tree in run runID, read from
// its boundary commits (taskEffect).
func (in *Inspector) TaskEffect(ctx context.Context, runID, taskID string) (*Effect, error) {
	return taskEffect(ctx, in.j, in.root, runID, taskID)
}

// TaskDiff is task taskID's effect in run runID as git prints it
// (taskDiff).
func (in *Inspector) TaskDiff(ctx context.Context, runID, taskID string, opt boundary.DiffOptions) ([]byte, error) {
	return taskDiff(ctx, in.j, in.root, runID, taskID, opt)
}

// WorkRun is the run whose boundaries hold task taskID's work, for a task
// run runID replayed (workRun).
func (in *Inspector) WorkRun(runID, taskID string) (string, bool, error) {
	return workRun(in.j, runID, taskID)
}

// TaskLog is what task taskID's attempts said in run runID: the agent's
// and the gate's own words (taskLogOf).
func (in *Inspector) TaskLog(runID, taskID string) (*TaskLog, bool, error) {
	return taskLogOf(in.j, runID, taskID)
}

// LostContent is the content the guard saw lost in run runID (of task
// taskID, of paths, when given): what `implloop restore` writes back
// (lostContent).
func (in *Inspector) LostContent(runID, taskID string, paths []string) ([]boundary.LostContent, error) {
	return lostContent(in.j, runID, taskID, paths)
}

// TaskBefore is what writing the tree back to how it was before task
// taskID of run runID writes (restore --before; taskBefore).
func (in *Inspector) TaskBefore(ctx context.Context, runID, taskID string, paths []string) ([]boundary.LostContent, error) {
	return taskBefore(ctx, in.j, in.root, runID, taskID, paths)
}

// Report builds run runID's report from the journal (report.Build).
func (in *Inspector) Report(runID string) (*report.Report, error) { return report.Build(in.j, runID) }

// WriteHTMLReport (re)writes rep's report.html beside its report.md and
// returns its path (writeHTMLReport).
func (in *Inspector) WriteHTMLReport(ctx context.Context, rep *report.Report) (string, error) {
	return writeHTMLReport(ctx, in.j, in.root, rep)
}

// TrustOfRun is what the trust rule says of run runID (travel.TrustOfRun).
func (in *Inspector) TrustOfRun(runID string) (travel.Trust, error) {
	return travel.TrustOfRun(in.j, runID)
}

// PulledTrust is the trust rule's answer for every pulled run, by run id
// (pulledTrust).
func (in *Inspector) PulledTrust() (map[string]travel.Trust, error) { return pulledTrust(in.j) }
