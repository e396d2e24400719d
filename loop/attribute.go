package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/implloop/implloop/boundary"
)

// Whose discard is it, under --jobs?
//
// While calls run ahead, each in its own worktree, nothing but implloop
// writes the main work tree: at a task's turn it merges the task's work
// and runs its gate. An agent that writes the main tree anyway (by an
// absolute path, from its worktree) changes it under the turn of another
// task, and the boundary after that task sees the change. A discard seen
// there is the task's own only when nothing else ran: with other calls of
// the wave made ahead and not yet settled, it is attributed by content.
// The call whose own work (its worktree's tree against the boundary it
// started from) made the path what it is now did it; if the task at its
// turn is one of those, it is the task's. Otherwise, when exactly one call
// did, the discard is carried to that call's turn, which it blocks; and
// when none (or several) can be told by content, every candidate is
// blocked: the task at its turn and every call made ahead with it, never
// the wrong one alone.

// lostAhead is a discard carried to a task's turn (attributeLost): what
// was lost, and why it is that task's.
type lostAhead struct {
	lost []boundary.LostContent
	why  string
}

// attributeLost splits the discards lost seen at the boundary after task
// taskID: those that are the task's own (what it is blocked for), and
// those carried to the turns of calls made ahead (e.carried). own is lost
// when no call made ahead is pending (the usual case).
func (e *engine) attributeLost(ctx context.Context, taskID string, lost []boundary.LostContent) (own []boundary.LostContent, why string) {
	others := e.othersAhead(taskID)
	if len(lost) == 0 || len(others) == 0 {
		return lost, ""
	}
	slices.SortFunc(others, func(a, b *early) int { return e.taskIndex(a.u.TaskID) - e.taskIndex(b.u.TaskID) })
	self := e.settled[taskID]
	w := &aheadWork{ctx: ctx, repo: e.o.RepoRoot, effects: map[*early]map[string]boundary.Blob{}}
	did := w.did
	all := []string{taskID}
	for _, r := range others {
		all = append(all, r.u.TaskID)
	}
	var whys []string
	for _, l := range lost {
		if did(self, l) {
			own = append(own, l)
			continue
		}
		var by []*early
		for _, r := range others {
			if did(r, l) {
				by = append(by, r)
			}
		}
		if len(by) == 1 {
			e.carry(by[0].u.TaskID, l, fmt.Sprintf("while its call ran ahead (--jobs), work of earlier tasks was discarded in the main tree, "+
				"seen at task %s's turn, and its own work in its worktree discarded the same: %%s", taskID))
			whys = append(whys, fmt.Sprintf("%s: by content task %s's, outside its worktree", l.Path, by[0].u.TaskID))
			continue
		}
		// The content does not tell: every candidate.
		own = append(own, l)
		for _, r := range others {
			e.carry(r.u.TaskID, l, fmt.Sprintf("while its call ran ahead (--jobs), work of earlier tasks was discarded in the main tree, "+
				"seen at task %s's turn; one of tasks %s did it and the content does not say which: %%s", taskID, strings.Join(all, ", ")))
		}
		whys = append(whys, fmt.Sprintf("%s: by one of tasks %s, the content does not say which", l.Path, strings.Join(all, ", ")))
	}
	if len(whys) > 0 {
		why = "calls made ahead ran meanwhile (--jobs): " + strings.Join(whys, "; ")
	}
	return own, why
}

// othersAhead are the calls made ahead that may have done what the
// boundary after task taskID saw: every one not yet settled but the
// task's own, save those that returned before the boundary before this
// one was begun (what they left running was killed then).
func (e *engine) othersAhead(taskID string) []*early {
	var others []*early
	for _, r := range e.early {
		if r.u.TaskID == taskID {
			continue
		}
		select {
		case <-r.done:
			if r.finished.Before(e.prevAt) {
				continue
			}
		default:
		}
		others = append(others, r)
	}
	return others
}

// aheadWork reads what calls made ahead did in their worktrees (their
// tree against the boundary they started from), each once.
type aheadWork struct {
	ctx     context.Context
	repo    string
	effects map[*early]map[string]boundary.Blob
}

// of is call r's own work, path -> content after (a zero Blob: removed);
// false while it runs (its work is not known) or when it cannot be read.
func (w *aheadWork) of(r *early) (map[string]boundary.Blob, bool) {
	if r == nil {
		return nil, false
	}
	select {
	case <-r.done:
	default:
		return nil, false
	}
	if m, ok := w.effects[r]; ok {
		return m, m != nil
	}
	var m map[string]boundary.Blob
	if r.tree != "" {
		if cs, err := boundary.Diff(w.ctx, w.repo, r.base, r.tree); err == nil {
			m = map[string]boundary.Blob{}
			for _, c := range cs {
				m[c.Path] = c.After
				if c.From != "" {
					m[c.From] = boundary.Blob{}
				}
			}
		}
	}
	w.effects[r] = m
	return m, m != nil
}

// did reports whether call r's own work left path l.Path as the discard
// left it (its base content, or absent).
func (w *aheadWork) did(r *early, l boundary.LostContent) bool {
	m, ok := w.of(r)
	if !ok {
		return false
	}
	after, changed := m[l.Path]
	return changed && after.Same(l.Base)
}

// carry records discard l for task id's turn; why has a %s for the paths.
func (e *engine) carry(id string, l boundary.LostContent, why string) {
	if e.carried == nil {
		e.carried = map[string]*lostAhead{}
	}
	c := e.carried[id]
	if c == nil {
		c = &lostAhead{why: why}
		e.carried[id] = c
	}
	c.lost = append(c.lost, l)
}

// takeCarried hands over (once) the discards carried to task id's turn,
// and why they are its.
func (e *engine) takeCarried(id string) ([]boundary.LostContent, string) {
	c := e.carried[id]
	if c == nil {
		return nil, ""
	}
	delete(e.carried, id)
	paths := make([]string, len(c.lost))
	for i, l := range c.lost {
		paths[i] = l.Path
	}
	return c.lost, fmt.Sprintf(c.why, shownPaths(paths))
}

// taskIndex is task id's position in the run's tasks.
func (e *engine) taskIndex(id string) int {
	for i, t := range e.sel.Tasks {
		if t.ID == id {
			return i
		}
	}
	return len(e.sel.Tasks)
}
