// Package cache is implloop's journal: a SQLite database at
// $(git rev-parse --git-common-dir)/implloop/state.db and a
// content-addressed blob store in objects/ beside it. It records runs,
// tasks, agent calls (units), gates, git boundaries and events, so that a
// run can be reported, resumed and explained from the journal alone.
//
// # Where
//
// [StateDir] resolves the directories once: the state directory in the
// common git directory (shared by linked worktrees) and each work tree's
// lock directory in its own git directory. There an agent's `git clean
// -fdx`, `git stash -a` or `rm -rf` of the work tree cannot reach them.
// A journal an older implloop kept in <repo>/.implloop is moved by the
// first writable [Open] and read in place by [OpenReadOnly] until then.
// An agent can still remove the state directory on purpose:
// [Journal.Gone] tells.
//
// # Writes
//
// There is one writer per work tree, [Open], which the run loop holds under
// the work tree's lock (linked worktrees share the database, and SQLite
// takes their transactions in turn). Every write method commits before it
// returns, so a process killed at any point (SIGKILL included) leaves a
// journal that opens and passes [Journal.Check].
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
