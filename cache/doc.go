// Package cache is implloop's journal: a SQLite database at
// <repo>/.implloop/state.db and a content-addressed blob store under
// <repo>/.implloop/objects/. It records runs, tasks, agent calls (units),
// gates, git boundaries and events, so that a run can be reported, resumed
// and explained from the journal alone.
//
// # Writes
//
// There is one writer, [Open], which the run loop holds under the repo lock.
// Every write method commits before it returns, so a process killed at any
// point (SIGKILL included) leaves a journal that opens and passes [Journal.Check].
// Writes at the points where a crash would otherwise cost work or truth are
// also fsynced before they return (see [Journal] for the list); the rest are
// made durable by the next fsynced write or by Close. A unit row is written
// "running" before its agent is dispatched and "completed" or "failed" only
// after; a running row is never returned by [Journal.FindCompleted].
//
// # Reads
//
// [OpenReadOnly] is for commands that must write nothing (runs, show,
// explain, --dry-run). It creates no file and no directory: see
// docs/journal.md for how the writer's Close leaves the database in a state
// that a read-only SQLite connection can read without creating -wal or -shm
// files.
//
// # Imports
//
// cache imports nothing of implloop's: identity digests reach [Journal.Check]
// as a function value.
package cache
