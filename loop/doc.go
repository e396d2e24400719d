// Package loop is the engine of implloop: the only place that dispatches
// agents, runs gates, takes boundaries and writes the journal.
//
// # The run
//
// [Run] takes the work tree's lock, opens the journal (in the git
// directory: see cache.StateDir), reads the plan from disk (its sha256
// computed now, on every invocation), takes boundary B0, then for each
// task in range computes its units with [unit.WorkList] and,
// unit by unit, either replays a completed journal row with the same
// identity from the run's lineage or dispatches the agent live, journaling
// the unit `running` before the call and `completed` or `failed` after.
// The gate (the task's own ```verify block, else --verify) decides whether
// the task is done; a failed gate starts the next attempt with the tail of
// its output as feedback. After each task a boundary is taken and the
// discard guard compares it with the previous one: a discard blocks the
// task, and so does a journal taken away while the task ran (vanished.go).
// The end report is built from the journal alone.
//
// A resume is a run with a parent: its lineage (parent, grandparent, ...)
// is where replays come from. A task that ended blocked is never replayed
// as blocked: its gate runs live first.
//
// # Replays across runs
//
// A task may also replay from a run outside the lineage (acrossruns.go):
// any run in the journal that the trust rule trusts (made here, or pulled
// from a teammate or CI and signed by an allowed signer: trust.go), that
// did the task from the tree this run's task starts from (the tree of the
// boundary before it), with the same identities, or a line of such runs
// (one that blocked at the task, then the resume that finished it). Boundaries are per task, not per
// attempt, so what is matched is the task's whole chain of attempts, from
// its first: attempt 1's units by identity, each later attempt's units
// computed here from the feedback of the failed gate (or failed call) that
// ended the attempt before it there, carried as journaled, and found in
// that run too. The chain replays as a lineage's does, then the task's
// effect there is written from that run's boundary commits and the final
// gate runs live. It is decided whole, before anything is written; a
// mismatch at any attempt leaves the task live from attempt 1.
//
// A later attempt never replays across runs on its own. When attempt 1
// ran live here (its identity matched no run's, or --jobs called it ahead)
// and failed, attempt 2 may well have the identity another run's attempt
// 2 had; but each began from the tree its attempt 1 and gate left, and no
// boundary recorded either tree, so there is nothing to match, and a
// replay would stand in for work done on a tree nobody can show was this
// one. It runs live.
//
// # The engine
//
// The engine is three parts. The lineage (lineage.go) is what earlier
// runs journaled: each task's last row, attempts, gates and artifact, and
// the completed units a replay comes from; it only reads, and keeps what
// it read for the run. The planner (resume_plan.go) makes the resume plan
// before any task runs; the runner (task.go) runs the tasks. Both go
// through the tasks in a pass of their own (resume.go), whose methods take
// every decision (how a task starts, which dependency artifacts enter a
// unit's identity, why a unit runs live, in words made in one place), so
// the plan says what the run will do by construction; the planner's pass
// records what it plans, the runner's what happened.
//
// # Replay or live
//
// One function decides, for a unit, whether it replays, replays as a
// failure its chain went on from, takes a call made ahead, replays across
// runs, or runs live, and why (decide, decide.go); one decides the same
// for a gate (decideGate). The planner, the runner, --jobs (which calls
// are made ahead) and, through what they journal, explain and the report
// all ask them, as go-task's callers all ask its fingerprinter.
//
// # The engine's state, and the inspector
//
// The engine's state is in parts, each with its own job and file: what a
// resume found and planned (resumeState), what the run saw so far
// (tally), who makes the calls and what they cost (agents), the trust
// rule's answers (trustState), the calls made ahead under --jobs (waves,
// parallel.go). Commands do not read the journal themselves: they open
// an [Inspector] (inspect.go) and ask it for the read-only views they
// print (explain, blame, a task's effect and log, the report, restores).
package loop
