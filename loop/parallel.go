package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/unit"
)

// Tasks that run at once (--jobs N, N > 1).
//
// A run goes through the plan in order, task by task, as always: every
// boundary, guard verdict, gate, journal row and event is taken in plan
// order in the main work tree, so a parallel run keeps every guarantee of
// a serial one by construction. What runs at once is only the expensive
// part: the agent calls. When the run reaches the first task of a wave
// (extractor.Waves: consecutive tasks none of which waits for another of
// them), the first live call of each task of the wave that would run live
// is made at once, up to N at a time, each in its own linked worktree
// checked out at the current boundary commit. Then the tasks settle in
// plan order: at a task's turn its call is journaled as it would have been
// (running, then completed or failed), and what it did in its worktree is
// merged into the main work tree with git's three-way merge (merge-tree),
// written only over the paths the merge changes, before its gate and its
// boundary. A merge that conflicts is a failed attempt: the next attempt
// runs in the main tree, after the tasks before it, with the conflicting
// paths as feedback. Retries always run in the main tree.
//
// A call made ahead is journaled the moment it returns (cache.AheadCall:
// its result, cost and blobs, and its worktree's tree, committed on the
// boundary it started from and kept under refs/implloop/ahead/), not only
// at its task's turn: a run killed or interrupted meanwhile has paid for
// it, and a resume whose lineage holds it takes it at the task's turn
// (adoptAhead) instead of calling the agent again, its work merged into
// the tree as the turn would have merged it.

// waves is what a run keeps of its calls made ahead (--jobs): the calls,
// by unit identity; where the current wave ends; each task's latest
// wait (extractor.LatestWait); the workers and their worktrees; and what
// settling them at their turns leaves to do.
type waves struct {
	early       map[string]*early
	aheadSince  map[string]time.Time  // task id -> when its call made ahead started
	inFlight    sync.WaitGroup        // the calls made ahead still running
	wtMu        sync.Mutex            // git worktree add/remove, one at a time (they read each other's files)
	jmu         sync.Mutex            // a replay batch's transaction, or a call made ahead journaled (journalCall)
	settled     map[string]*early     // task id -> its call made ahead, taken at its turn (attribute.go)
	settledRefs [][2]string           // refs of calls made ahead settled, to delete (endWaves)
	takenAt     time.Time             // when the latest boundary was begun
	prevAt      time.Time             // and the one before it
	carried     map[string]*lostAhead // task id -> discards seen at an earlier turn, its by content (attribute.go)
	pool        chan worker           // a ticket per worker, with its worktree once made
	workers     int                   // worktrees made (under wtMu)
	worktrees   string                // where this run's task worktrees go
	waveEnd     int
	latest      []int
}

// early is a call made ahead, in a worktree: its fields are set by the
// goroutine that makes it, before done is closed.
type early struct {
	done     chan struct{}
	err      error // the call could not be made (no worktree, say)
	u        unit.Unit
	call     agentCall
	started  time.Time
	finished time.Time
	base     string // the boundary commit the worktree was checked out at
	worktree string // where it ran
	tree     string // the worktree's tree after the call; "" when unreadable
	treeErr  error
	prompt   string // the prompt's blob
	// staged is the journaled call (PutAhead) this stands for, nil when
	// it was not journaled; adopted when it is a run of the lineage's,
	// taken over by this one.
	staged  *cache.AheadCall
	adopted bool
}

// startWave starts the live calls of the wave that begins at task i ahead
// of the tasks' turns (see above), up to --jobs at a time, and returns at
// once: at its turn a task waits for its own call (dispatch). A no-op with
// --jobs 1, for a task that is not the first of its wave, and for a wave
// with fewer than two live calls.
func (e *engine) startWave(ctx context.Context, i int) error {
	if e.s.Jobs < 2 || i < e.waveEnd {
		return nil
	}
	// While the run's agent waits for a limit to lift, its calls are not
	// made ahead: each would hit the limit. The tasks take their turns
	// one by one, with whoever is free (limits.go).
	if len(e.chain) > 0 && e.firstFree() != e.chain[0] {
		return nil
	}
	if e.latest == nil {
		e.latest = extractor.LatestWait(e.sel.Tasks)
	}
	end := i + 1
	for end < len(e.sel.Tasks) && e.latest[end] < i {
		end++
	}
	e.waveEnd = end
	if e.box != nil && end > i+1 {
		// Calls will overlap: the sandbox's commondir placeholder stays
		// until endWaves, so that no call's end removes it while git runs.
		if err := e.box.HoldCommon(ctx, e.o.RepoRoot); err != nil {
			return err
		}
	}
	jobs, err := e.waveJobs(i, end)
	if err != nil || len(jobs) < 2 || e.prev.Commit == "" {
		return err
	}
	if err := e.beforeLive(ctx); err != nil {
		return err
	}
	dir, err := boundary.WorktreeDir(ctx, e.o.RepoRoot, e.runID)
	if err != nil {
		return err
	}
	e.readyWaves(dir)
	e.journalAhead()
	for _, jb := range jobs {
		e.callInWorktree(ctx, dir, jb)
	}
	return nil
}

// waveJob is a call a wave makes ahead: the first live unit of the task
// at index i.
type waveJob struct {
	i int
	t extractor.Task
	u unit.Unit
}

// waveJobs are the calls made ahead for the wave of tasks i to end: the
// first unit of each task that decide says runs live, from the tree
// before it while that is certain.
func (e *engine) waveJobs(i, end int) ([]waveJob, error) {
	var jobs []waveJob
	tree := e.prev.Tree // before the next task of the wave, while certain
	for k := i; k < end; k++ {
		t := e.sel.Tasks[k]
		units, d, err := e.firstDecided(t, tree)
		if err != nil {
			return nil, err
		}
		switch d.choice {
		case choiceLive:
			tree = ""
			if e.gatherable(units) {
				continue // a worker's result, merged in at its turn (fanin.go)
			}
			jobs = append(jobs, waveJob{k, t, units[0]})
		case choiceAcross:
			// A task that will replay across runs at its turn is not
			// called ahead (acrossruns.go): the tree it starts from there
			// is known while every task before it in the wave replays
			// across runs. Their gates are taken to leave the tree as
			// they did in that run (as the plan takes them): one that
			// does not only makes a task after it run live at its turn
			// instead of ahead, whereas a call made ahead would pay for a
			// task the run replays.
			tree = d.across.to.Tree
		default:
			if !e.skips(t) {
				tree = "" // it replays or waits: what it leaves is not certain
			}
		}
	}
	return jobs, nil
}

// readyWaves readies the run for its first wave: where its worktrees go
// (dir), the maps of calls made ahead, one ticket per job in the pool (no
// path until its worktree is made), and an observer the goroutines may
// emit to (emitAhead).
func (e *engine) readyWaves(dir string) {
	e.worktrees = dir
	if e.early == nil {
		e.early, e.aheadSince = map[string]*early{}, map[string]time.Time{}
	}
	if e.pool == nil {
		e.pool = make(chan worker, e.s.Jobs)
		for range e.s.Jobs {
			e.pool <- worker{}
		}
	}
	if _, ok := e.obs.(*waveObserver); !ok {
		e.obs = &waveObserver{obs: e.obs}
	}
}

// callInWorktree starts job jb's call in its own goroutine, in a
// worker's worktree under dir checked out at the current boundary; the
// task's turn waits for it (takeEarly). The goroutine only writes blobs
// and files of the journal.
func (e *engine) callInWorktree(ctx context.Context, dir string, jb waveJob) {
	j, base := e.j, e.prev.Commit
	r := &early{done: make(chan struct{}), u: jb.u, base: base}
	e.early[jb.u.Identity] = r
	e.aheadSince[jb.t.ID] = e.now()
	e.inFlight.Add(1)
	go func() {
		defer e.inFlight.Done()
		defer close(r.done)
		w := <-e.pool
		defer func() { e.pool <- w }()
		w.path, r.err = e.worktreeAt(ctx, dir, w, base)
		if r.err == nil {
			ev := Event{Type: EvAhead, Status: "running", Task: jb.t.ID, Title: jb.t.Title, Index: jb.i + 1, Count: len(e.sel.Tasks),
				Unit: jb.u.ID, Attempt: jb.u.Attempt, Worktree: e.relWorktree(w.path)}
			e.emitAhead(ev)
			t0 := e.now()
			r.err = e.callAhead(ctx, j, w.path, jb.t, r)
			if r.err == nil {
				e.journalCall(ctx, j, r)
			}
			ev.Status, ev.Millis = "returned", e.now().Sub(t0).Milliseconds()
			if r.err != nil {
				ev.Message = r.err.Error()
			}
			e.emitAhead(ev)
		}
		// Its tree read, everything it made is in its index: the next
		// reset needs to touch only what differs (ResetWorktree).
		w.tree = ""
		if r.err == nil {
			w.tree = r.tree
		}
	}()
}

// waveObserver is the run's observer once calls are made ahead: it hands
// events to obs one at a time, whichever goroutine emits them, and keeps
// the ahead events until the run's goroutine journals them
// (journalAhead). A goroutine does not write the journal itself: the
// run's goroutine may hold it in a replay batch's transaction, and the
// wait would be SQLite's busy timeout.
type waveObserver struct {
	mu          sync.Mutex
	obs         Observer
	unjournaled []Event
}

// Event calls obs.Event under mu.
func (w *waveObserver) Event(ev Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.Event(ev)
}

// emitAhead is emit for the goroutines of calls made ahead: the observer
// has the event now, the journal at the next journalAhead.
func (e *engine) emitAhead(ev Event) {
	ev.Time, ev.RunID = e.now().UTC(), e.runID
	w := e.obs.(*waveObserver)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unjournaled = append(w.unjournaled, ev)
	w.obs.Event(ev)
}

// journalAhead journals the ahead events emitted since it last ran. The
// run's goroutine calls it where no replay batch is open: when a wave
// starts, when a task takes its call made ahead (so the call's "returned"
// comes before its unit_started), and when the waves end.
func (e *engine) journalAhead() {
	w, ok := e.obs.(*waveObserver)
	if !ok || e.j == nil || e.runID == "" {
		return
	}
	w.mu.Lock()
	evs := w.unjournaled
	w.unjournaled = nil
	w.mu.Unlock()
	for _, ev := range evs {
		_, _ = e.j.AppendEvent(e.runID, ev.Type, ev)
	}
}

// relWorktree is a worktree's path as events give it: relative to the
// repository root, with slashes.
func (e *engine) relWorktree(path string) string {
	if rel, err := filepath.Rel(e.o.RepoRoot, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(path)
}

// endWaves waits for every call made ahead (a run that stops early still
// has them running) and removes the task worktrees.
func (e *engine) endWaves(ctx context.Context) {
	e.inFlight.Wait()
	if e.box != nil {
		e.box.ReleaseCommon()
	}
	e.journalAhead()
	if len(e.settledRefs) > 0 {
		_ = boundary.DropAhead(context.WithoutCancel(ctx), e.o.RepoRoot, e.settledRefs...)
		e.settledRefs = nil
	}
	if e.worktrees != "" {
		_ = boundary.RemoveWorktrees(context.WithoutCancel(ctx), e.o.RepoRoot, e.worktrees)
		_ = os.Remove(filepath.Dir(e.worktrees)) // when no other run's are left
	}
	e.early = nil
}

// aheadPending reports whether task i has a call made ahead that its turn
// has not taken yet: a run that stops after a blocked task still settles
// those (they are independent of it, and paid for).
func (e *engine) aheadPending(i int) bool {
	if i >= len(e.sel.Tasks) || i >= e.waveEnd {
		return false
	}
	for _, r := range e.early {
		if r.u.TaskID == e.sel.Tasks[i].ID {
			return true
		}
	}
	return false
}

// aheadPendingAfter reports whether a task of the current wave after
// task i has a call made ahead that its turn has not taken yet.
func (e *engine) aheadPendingAfter(i int) bool {
	for k := i + 1; k < e.waveEnd; k++ {
		if e.aheadPending(k) {
			return true
		}
	}
	return false
}

// firstDecided is what the first unit task t would run at its turn comes
// to (decide, from the tree before it: "" when not certain), with the
// attempt's units, when that is known now: a task that runs (not
// skipped, not held), planned live, and starts a fresh attempt chain (not
// a recheck). Otherwise the choice is a replay: nothing to call ahead.
func (e *engine) firstDecided(t extractor.Task, tree string) ([]unit.Unit, decision, error) {
	none := decision{choice: choiceReplay}
	if e.skips(t) || e.heldBy(t) != "" {
		return nil, none, nil
	}
	if p, ok := e.planned[t.ID]; ok && p.Action != ActionLive {
		return nil, none, nil
	}
	st, err := e.run.startOf(t)
	if err != nil || st.kind != startChain {
		return nil, none, err
	}
	facts := unit.Facts{Attempt: st.attempt, GateFeedback: st.feedback, Artifacts: e.run.artifacts(t)}
	units, err := unit.WorkList(t, e.unitParams(t), facts)
	if err != nil || len(units) == 0 {
		return nil, none, err
	}
	d, err := e.run.decide(t, facts, units, 0, decideAt{tree: tree, quiet: true})
	return units, d, err
}

// worker is one of --jobs workers: its worktree ("" before its first
// task), and the tree of its last task's work ("" when it was not read).
type worker struct {
	path string
	tree string
}

// worktreeAt readies worker w's worktree at commit base, making it before
// its first task. Worktrees are kept for the run (a fresh one checks out
// every file) and removed by endWaves.
func (e *engine) worktreeAt(ctx context.Context, dir string, w worker, base string) (string, error) {
	path := w.path
	if path != "" && boundary.ResetWorktree(ctx, path, base, w.tree) == nil {
		return path, nil
	}
	e.wtMu.Lock()
	defer e.wtMu.Unlock()
	if path != "" {
		// The last task broke it (removed it, say): a new one.
		_ = boundary.RemoveWorktree(context.WithoutCancel(ctx), e.o.RepoRoot, path)
	}
	e.workers++
	path = filepath.Join(dir, fmt.Sprintf("w%d", e.workers))
	return path, boundary.AddWorktree(ctx, e.o.RepoRoot, path, base)
}

// callAhead makes the call r of task t in the worktree at path, checked
// out at r.base, and reads what it left there. It runs in its own
// goroutine: it touches only r, blobs and files of j, and the agent.
func (e *engine) callAhead(ctx context.Context, j *cache.Journal, path string, t extractor.Task, r *early) error {
	ctxFile, promptFile, promptHash, err := unitFiles(j, e.runID, r.u)
	if err != nil {
		return err
	}
	r.prompt, r.started, r.worktree = promptHash, e.now(), path
	if r.call, err = e.callAgent(ctx, j, t, r.u, e.chain[0], path, ctxFile, promptFile, nil); err != nil {
		return err
	}
	r.finished = e.now()
	if r.call.runErr == nil || ctx.Err() == nil {
		// Also when the run is being interrupted: a call that ended by
		// itself is paid for, and its work is journaled with it.
		r.tree, r.treeErr = boundary.WorktreeTree(context.WithoutCancel(ctx), path)
	}
	return nil
}

// journalCall journals call r, made ahead, the moment it returned (see
// above): unless it was cut short by an interrupt (no result to take), or
// its work could not be read (its turn fails the attempt). A call that
// cannot be journaled is still settled at its turn as before. It runs in
// the call's goroutine, never inside a replay batch (jmu).
func (e *engine) journalCall(ctx context.Context, j *cache.Journal, r *early) {
	if r.tree == "" || r.call.runErr != nil && ctx.Err() != nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	canon, err := identity.Canonical(r.u.Preimage)
	if err != nil {
		return
	}
	resJSON, _ := json.Marshal(r.call.res)
	resHash, err := j.PutBlob(resJSON)
	if err != nil {
		return
	}
	commit, err := boundary.KeepAhead(ctx, e.o.RepoRoot, e.runID, aheadRefName(r.u.Identity), r.base, r.tree)
	if err != nil {
		return
	}
	a := cache.AheadCall{RunID: e.runID, UnitID: r.u.ID, TaskID: r.u.TaskID, Role: r.u.Role, Attempt: r.u.Attempt,
		Identity: r.u.Identity, Preimage: canon, Prompt: r.prompt, Stdout: r.call.stdout, Stderr: r.call.stderr,
		Result: resHash, TokensIn: r.call.res.InputTokens, TokensOut: r.call.res.OutputTokens, CostUSD: r.call.res.CostUSD,
		Base: r.base, Tree: r.tree, Commit: commit, Worktree: e.relWorktree(r.worktree), StartedAt: r.started, FinishedAt: r.finished}
	if r.call.runErr != nil {
		a.RunError = r.call.runErr.Error()
	}
	e.jmu.Lock()
	err = j.PutAhead(a)
	e.jmu.Unlock()
	if err != nil {
		_ = boundary.DropAhead(ctx, e.o.RepoRoot, [2]string{e.runID, aheadRefName(r.u.Identity)})
		return
	}
	r.staged = &a
}

// aheadRefName is the name of the ref that keeps the work of the call
// made ahead with identity (boundary.KeepAhead): its digest, "u1-<hex>".
func aheadRefName(identity string) string {
	return strings.ReplaceAll(identity, ":", "-")
}

// adoptAhead is the call made ahead for u that a run of the lineage
// journaled when it returned and never reached the turn of (killed,
// interrupted), as dispatch takes a call made ahead by this run; nil when
// there is none, or its work is no longer in the repository (a forgotten
// run's, collected: the unit runs live).
func (e *engine) adoptAhead(ctx context.Context, u unit.Unit) (*early, error) {
	a, ok := e.lineage.aheadCall(u.Identity)
	if !ok || a.Commit == "" || !boundary.HasCommit(ctx, e.o.RepoRoot, a.Commit) || !boundary.HasCommit(ctx, e.o.RepoRoot, a.Base) {
		return nil, nil
	}
	b, err := e.j.ReadBlob(a.Result)
	if err != nil {
		return nil, nil
	}
	r := &early{done: make(chan struct{}), u: u, base: a.Base, tree: a.Tree, prompt: a.Prompt,
		started: a.StartedAt, finished: a.FinishedAt, staged: a, adopted: true}
	close(r.done)
	if err := json.Unmarshal(b, &r.call.res); err != nil {
		return nil, nil
	}
	r.call.stdout, r.call.stderr = a.Stdout, a.Stderr
	if a.RunError != "" {
		r.call.runErr = errors.New(a.RunError)
	}
	return r, nil
}

// settleAhead journals, with the unit's outcome o, that this run settled
// the journaled call r stands for (r.staged), and lets its ref go: what a
// later resume finds is then the unit. The unit alone when r was not
// journaled.
func (e *engine) settleAhead(ctx context.Context, r *early, unitID string, o cache.Outcome) error {
	if r == nil || r.staged == nil {
		return e.j.FinishUnit(e.runID, unitID, o)
	}
	a := r.staged
	e.jmu.Lock()
	err := e.j.Batch(true, func(b *cache.Journal) error {
		if err := b.FinishUnit(e.runID, unitID, o); err != nil {
			return err
		}
		return b.SettleAhead(a.RunID, a.UnitID, e.runID)
	})
	e.jmu.Unlock()
	if err != nil {
		return err
	}
	e.lineage.tookAhead(a.Identity)
	e.settledRefs = append(e.settledRefs, [2]string{a.RunID, aheadRefName(a.Identity)}) // deleted by endWaves, all at once
	return nil
}

// takeEarly hands dispatch the call made ahead for u, if any (once), when
// it has returned.
func (e *engine) takeEarly(u unit.Unit) (*early, error) {
	r := e.early[u.Identity]
	if r == nil {
		return nil, nil
	}
	delete(e.early, u.Identity)
	<-r.done
	e.journalAhead()
	return r, r.err
}

// mergeEarly brings what a call made ahead did in its worktree into the
// main work tree: "" when it merged, else why not (a failed attempt).
func (e *engine) mergeEarly(ctx context.Context, r *early) (string, error) {
	switch {
	case r.treeErr != nil:
		return fmt.Sprintf("its work in its worktree could not be read: %v", r.treeErr), nil
	case r.tree == "":
		return "its work in its worktree was not read", nil
	}
	m, err := boundary.MergeInto(ctx, e.o.RepoRoot, r.base, e.prev.Commit, r.tree)
	switch {
	case err != nil:
		return "", err
	case len(m.Conflicts) > 0:
		return fmt.Sprintf("its work, done at the same time as the tasks before it, conflicts with theirs in %s: this attempt runs again on the merged tree",
			strings.Join(m.Conflicts, ", ")), nil
	case len(m.Refused) > 0:
		return fmt.Sprintf("its work could not be written over paths changed meanwhile: %s", strings.Join(m.Refused, ", ")), nil
	}
	return "", nil
}
