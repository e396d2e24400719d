package loop

import (
	"encoding/json"

	"github.com/implloop/implloop/cache"
)

// Decisions are the loop's own words for what it did in a run and why, as
// it journaled them when it decided: explain and the report read them
// here, so there is one place a reason is worded.
type Decisions struct {
	// Unit: unit id -> why it was dispatched live.
	Unit map[string][]string
	// Planned: task id -> the resume plan's entry (action, reasons: a
	// restore, a gate re-run on a changed tree, ...). Empty for a fresh
	// run.
	Planned map[string]PlannedTask
	// Order is the resume plan's task ids in plan order.
	Order []string
	// Restored: task id -> what a resume wrote back before it replayed.
	Restored map[string][]string
	// Ahead: unit id -> the call was made ahead with its wave (--jobs),
	// in a worktree of its own.
	Ahead map[string]bool
	// Fallback: unit id -> who took the call after a limit, and why
	// (limits.go), the last one when several did.
	Fallback map[string]string
}

// decisionsOf reads the decisions of run runID from its journaled events.
// Read-only.
func decisionsOf(j *cache.Journal, runID string) (*Decisions, error) {
	evs, err := j.Events(runID)
	if err != nil {
		return nil, err
	}
	d := &Decisions{Unit: map[string][]string{}, Planned: map[string]PlannedTask{}, Restored: map[string][]string{}, Ahead: map[string]bool{},
		Fallback: map[string]string{}}
	for _, ce := range evs {
		switch ce.Type {
		case EvUnitStarted, EvResumePlan, EvRestored, EvFallback:
		default:
			continue
		}
		var e Event
		if json.Unmarshal(ce.Data, &e) != nil {
			continue
		}
		switch e.Type {
		case EvUnitStarted:
			if e.Source == "live" && len(e.Reasons) > 0 {
				d.Unit[e.Unit] = e.Reasons
			}
			if e.Source == "live" && e.Worktree != "" {
				d.Ahead[e.Unit] = true
			}
		case EvResumePlan:
			for _, p := range e.Tasks {
				d.Planned[p.Task] = p
				d.Order = append(d.Order, p.Task)
			}
		case EvRestored:
			d.Restored[e.Task] = append(d.Restored[e.Task], e.Paths...)
		case EvFallback:
			d.Fallback[e.Unit] = e.Message
		}
	}
	return d, nil
}
