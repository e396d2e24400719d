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

// Explain is Explain over the inspector's journal.
func (in *Inspector) Explain(run *RunRecord, taskID string) (*Explanation, error) {
	return Explain(in.j, run, taskID)
}

// Blame is Blame over the inspector's journal.
func (in *Inspector) Blame(ctx context.Context, runID, path string, from, to int) ([]BlameLine, error) {
	return Blame(ctx, in.j, in.root, runID, path, from, to)
}

// TaskEffect is TaskEffect over the inspector's journal.
func (in *Inspector) TaskEffect(ctx context.Context, runID, taskID string) (*Effect, error) {
	return TaskEffect(ctx, in.j, in.root, runID, taskID)
}

// TaskDiff is TaskDiff over the inspector's journal.
func (in *Inspector) TaskDiff(ctx context.Context, runID, taskID string, opt boundary.DiffOptions) ([]byte, error) {
	return TaskDiff(ctx, in.j, in.root, runID, taskID, opt)
}

// WorkRun is WorkRun over the inspector's journal.
func (in *Inspector) WorkRun(runID, taskID string) (string, bool, error) {
	return WorkRun(in.j, runID, taskID)
}

// TaskLog is TaskLogOf over the inspector's journal.
func (in *Inspector) TaskLog(runID, taskID string) (*TaskLog, bool, error) {
	return TaskLogOf(in.j, runID, taskID)
}

// LostContent is LostContent over the inspector's journal.
func (in *Inspector) LostContent(runID, taskID string, paths []string) ([]boundary.LostContent, error) {
	return LostContent(in.j, runID, taskID, paths)
}

// TaskBefore is TaskBefore over the inspector's journal.
func (in *Inspector) TaskBefore(ctx context.Context, runID, taskID string, paths []string) ([]boundary.LostContent, error) {
	return TaskBefore(ctx, in.j, in.root, runID, taskID, paths)
}

// Report builds run runID's report from the journal (report.Build).
func (in *Inspector) Report(runID string) (*report.Report, error) { return report.Build(in.j, runID) }

// WriteHTMLReport is WriteHTMLReport over the inspector's journal.
func (in *Inspector) WriteHTMLReport(ctx context.Context, rep *report.Report) (string, error) {
	return WriteHTMLReport(ctx, in.j, in.root, rep)
}

// TrustOfRun is what the trust rule says of run runID (travel.TrustOfRun).
func (in *Inspector) TrustOfRun(runID string) (travel.Trust, error) {
	return travel.TrustOfRun(in.j, runID)
}

// PulledTrust is PulledTrust over the inspector's journal.
func (in *Inspector) PulledTrust() (map[string]travel.Trust, error) { return PulledTrust(in.j) }
