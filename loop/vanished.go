package loop

import (
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
)

// unlessJournalGone blocks task t when implloop's journal was taken away
// while the task ran: an agent (or its gate) ran `rm -rf .git/implloop`,
// or replaced the files. SQLite goes on writing to a removed database
// without an error, so without this check the task would end done in a
// journal nobody can open again, and the run DONE with nothing to resume
// or restore from.
//
// It is called with the status the task is about to be journaled with and
// returns the status to journal: blocked when the journal is gone, with a
// reason that says what went (on top of a block the task had already),
// BLOCKED.md written and the run stopped (e.journalGone). Only tasks that
// ran something live are checked: a replayed task ran no code.
func (e *engine) unlessJournalGone(t extractor.Task, ts *taskState, status cache.TaskStatus) (cache.TaskStatus, error) {
	if e.journalGone != "" || ts.live == 0 && e.liveGates == ts.gates0 {
		return status, nil
	}
	gone := e.j.Gone()
	if gone == nil {
		return status, nil
	}
	reason := gone.Error() + " during the task"
	e.journalGone = reason
	if status == cache.TaskBlocked && ts.row.BlockReason != "" {
		reason += "; and " + ts.row.BlockReason
	}
	ts.row.BlockReason = reason
	if n := len(e.blocks); status == cache.TaskBlocked && n > 0 && e.blocks[n-1].TaskID == t.ID && e.blocks[n-1].RunID == e.runID {
		// Blocked already (its gate, the guard): one entry, both reasons.
		e.blocks[n-1].Reason, e.blocks[n-1].JournalGone = reason, true
	} else {
		e.blocks = append(e.blocks, blockInfo{RunID: e.runID, PlanPath: e.s.Plan, TaskID: t.ID, Title: t.Title,
			Attempts: ts.row.Attempts, Reason: reason, JournalGone: true, NoGate: e.gateCommand(t) == ""})
	}
	if err := writeBlocked(e.o.RepoRoot, e.blocks); err != nil {
		return status, err
	}
	e.blockedWrote = true
	e.emit(Event{Type: EvBlocked, Task: t.ID, Title: t.Title, Message: reason, Paths: ts.row.LostPaths})
	return cache.TaskBlocked, nil
}

// goneWithJournal is err, or nil when the journal is gone: a write that
// failed because the state directory was removed under it (a blob of gate
// output, streamed while the gate removed it) is lost with the journal,
// and the task is blocked for that instead of the run failing.
func (e *engine) goneWithJournal(err error) error {
	if err != nil && e.j.Gone() != nil {
		return nil
	}
	return err
}
