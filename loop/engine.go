package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/files"
	"github.com/implloop/implloop/internal/procgroup"
	"github.com/implloop/implloop/internal/runid"
	"github.com/implloop/implloop/plan"
	"github.com/implloop/implloop/report"
	"github.com/implloop/implloop/sandbox"
	"github.com/implloop/implloop/travel"
	"github.com/implloop/implloop/unit"
)

// Options configure one run or resume.
type Options struct {
	Settings Settings
	// RepoRoot is the worktree's top-level directory.
	RepoRoot string
	// Parent is the run being resumed; "" for a fresh run.
	Parent string
	// Reverify re-runs the gates of replayed tasks live.
	Reverify bool
	// RerunLost runs a task whose work is no longer in the tree live,
	// instead of writing its work back from the boundary commits.
	RerunLost bool
	// DryRun computes the work list and writes nothing.
	DryRun bool
	// Fresh runs every task live, even one another run did from the same
	// tree with the same identities (run --fresh): no replay across runs.
	Fresh bool
	// Full plans a resume unit by unit even when plan, settings and tree
	// are as the parent left them (see upToDate), which would otherwise
	// be answered without a run. Tests of the full path set it.
	Full bool
	// Observer receives the event stream (nil: none).
	Observer Observer
	// Agent overrides the backend built from Settings (tests).
	Agent agent.Agent
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Sleep waits for a limit to lift (nil: a timer; it returns the
	// context's error when the run is interrupted meanwhile). Tests give
	// one that moves their clock instead.
	Sleep func(ctx context.Context, d time.Duration) error
	// Heartbeat is how often a heartbeat event comes while an agent call,
	// a gate or a wait lasts (heartbeat.go); 0: none.
	Heartbeat time.Duration
	// Fallbacks override the backends of --fallback-agent names (tests).
	Fallbacks map[string]agent.Agent
	// Task, when set, is the one task of the plan the run does: a
	// worker's run (implloop work; fanin.go).
	Task string
	// Artifacts are the artifacts of tasks this run does not run, by
	// task id, when a driver knows them (a worker: its dependencies'
	// results): the identity of each one's final unit in the run that
	// did it, as a serial run would have it.
	Artifacts map[string]string
	// NoHTMLReport leaves report.html out (a worker's run: the fan-in
	// writes the plan's).
	NoHTMLReport bool
	// Known is what the run would learn of its work tree from git,
	// learned once by a driver that starts many runs in it (a worker;
	// known.go); nil: the run asks git.
	Known *Known
	// DeferRecords leaves the run's records unwritten when it ends: the
	// caller pushes the run at once, and the push writes them, signed
	// when it signs (a worker's run), instead of writing them unsigned
	// first and signing them again. A run whose records were never
	// written has them written by its next push.
	DeferRecords bool
	// BeforeLive, when set, is called once, before the run's first agent
	// call, which waits for it (a worker: no agent is called while its
	// last result's push is refused, worker.run). The run's start (its
	// journal, B0) does not wait. An error from it interrupts the run
	// there, no agent called: it ends INTERRUPTED, as on Ctrl-C.
	BeforeLive func(ctx context.Context) error
	// Notify, when set, is called in place of each notification
	// (--notify, or the plan's notify:) with its event and send, which
	// sends it and says why it failed: a caller that holds the run's
	// events before it shows them (a worker, which drops a run whose
	// claim another worker won) holds its notifications with them.
	Notify func(ev Event, send func() error)
}

// Outcome is what a run ended with.
type Outcome struct {
	RunID      string
	ParentID   string
	Verdict    string // DONE, PARTIAL, BLOCKED, INTERRUPTED
	Report     *report.Report
	ReportPath string
	// HTMLPath is the run's report.html ("" when it was not written).
	HTMLPath    string
	Interrupted bool
	// NoOp is set on a resume where every unit replayed, no gate ran and
	// every task ended as it did in the parent: nothing changed since it.
	NoOp          bool
	ParentVerdict string
	// UpToDate is set on a no-op resume decided without running it (see
	// upToDate): plan, settings and tree are as the parent left them, so
	// no run was journaled. RunID and ReportPath are then the parent's:
	// its results stand, and a later resume continues from it.
	UpToDate bool
	// Headline is the verdict with its count, "DONE 12/12", when UpToDate.
	Headline string
	// Plan is the work list: per task replay or live and why (the resume
	// plan; the whole answer of a dry run).
	Plan []PlannedTask
	// Blocked is set when BLOCKED.md was written.
	Blocked bool
	// Stopped says why the run stopped though no task failed (a cap
	// reached, a limit past --max-wait: budget.go); "" when it did not.
	// BLOCKED.md then says how to resume.
	Stopped string
	// JournalGone says what a task took away (the journal, removed or
	// replaced): the run stopped there, BLOCKED, and no run of it or
	// before it can be resumed. "" normally.
	JournalGone string
	// ReportErr is why the report could not be written (only when the
	// journal is gone: otherwise Run fails); ReportPath is "" then.
	ReportErr error
	// RecordsErr is why the run's records could not be written as git
	// objects (implloop push writes them later); nil normally.
	RecordsErr error
}

// ErrBlockedFile is returned when BLOCKED.md exists: the user has to read
// it, repair, and remove it before implloop runs again.
var ErrBlockedFile = errors.New(BlockedFile + " exists")

// ErrStoppedFile is ErrBlockedFile for a run that stopped though no task
// failed (a cap reached, a usage limit past --max-wait: stopped.go):
// BLOCKED.md says how to resume.
var ErrStoppedFile = fmt.Errorf("%w, from a run that stopped", ErrBlockedFile)

// engine is one run (or resume, or dry run) as it goes: what it was
// given and the plan, the journal and the lineage it replays from, the
// last boundary, and, in parts each with its own file, what the resume
// found and planned (resumeState), what the run saw so far (tally), who
// makes the calls and what they cost (agents), the trust rule's answers
// (trustState) and the calls made ahead under --jobs (waves).
type engine struct {
	o       Options
	s       Settings
	now     func() time.Time
	j       *cache.Journal
	sel     *extractor.Selection
	runID   string
	lineage *lineage // what earlier runs journaled: where replays come from (lineage.go)
	prev    boundary.Snapshot
	run     *pass           // the run's own pass: what its tasks came to (resume.go)
	here    map[string]bool // task id -> in range and not skipped (runsHere)
	obs     Observer
	lock    *Lock          // the work tree's; its descriptor goes to every agent and gate
	keep    *boundary.Keep // what boundaries keep beside their trees (keepSettings)
	gather  fanIn          // the workers' results this run replayed (fanin.go)
	dirs    *cache.Dirs    // the work tree's state directories, once asked (stateDirs)

	resumeState
	tally
	agents
	trustState
	waves
	treeWatch
}

// resumeState is what a resume found before it ran and what it planned
// (resume.go, work.go, ticks.go).
type resumeState struct {
	// resumeBlocked: the resume's first comparison found discards of a
	// task the parent never finished; no task runs (boundaries.go).
	resumeBlocked bool
	// work is what a resume found in the tree before it planned (work.go).
	work       *workCheck
	sawRestore bool                   // a task's work was written back from the boundaries
	planned    map[string]PlannedTask // the resume plan, by task id
	replay     map[string]bool        // task id -> the resume plan replays it (runTasks; built once)
	held       *[]Event               // events of a replay batch not yet committed
	liveOK     bool                   // Options.BeforeLive returned nil
	ticked     map[string]string      // task id -> the run an agent ticked its box in (ticks.go)
}

// tally is what the run saw so far, for its verdict, its report and
// BLOCKED.md.
type tally struct {
	sawLive      bool                        // a unit was dispatched
	sawLiveGate  bool                        // a gate ran live
	sawNewSkip   bool                        // a task checked in the plan since the parent ran it was skipped
	boundaries   int                         // boundaries journaled in this run so far
	liveGates    int                         // gates run live in this run so far
	status       map[string]cache.TaskStatus // task id -> how it ended in this run (resume.go: heldBy reads it)
	blockedWrote bool
	blocks       []blockInfo // what BLOCKED.md explains, in order
	// stash is the newest stash entry when the run started, or as the
	// last block named it (blocked.go).
	stash boundary.Stash
	// journalGone: why the run stopped after a task took the journal away
	// (vanished.go); "" while it is in place.
	journalGone string
}

// agents is who makes the run's calls and what they cost: the run's
// agent and the environment its identities are normalised with, the
// sandbox every call runs in (nil: none); for unattended runs the chain
// of agents that take a call on a limit (limits.go) and the time waited
// for limits; what live calls spent (budget.go); why the run stopped
// though no task failed (nil: it did not); concerns about a task's calls
// (figures.go), by task id.
type agents struct {
	ag           agent.Agent
	norm         identity.Env
	box          *sandbox.Sandbox
	chain        []*member
	waited       time.Duration
	spent        spend
	taskSpent    map[string]*spend
	stopped      *runStop
	callConcerns map[string][]string
}

// trustState is the trust rule's answer per run, asked once (trust.go);
// the runs that resumed each run (acrossPaths); per task, the note of a
// replay across runs declined because its run is not trusted.
type trustState struct {
	trusts   map[string]travel.Trust
	kids     map[string][]string
	declined map[string]string
}

// newEngine is an engine for o before its plan is read: o's clock and
// observer, or the real clock and an observer that ignores events.
func newEngine(o Options) *engine {
	e := &engine{o: o, s: o.Settings, now: o.Now, obs: o.Observer, lineage: &lineage{}}
	e.run = newPass(e, false)
	if e.now == nil {
		e.now = time.Now
	}
	if e.obs == nil {
		e.obs = ObserverFunc(func(Event) {})
	}
	if o.Heartbeat > 0 {
		e.obs = &waveObserver{obs: e.obs} // heartbeats come from their own goroutines
	}
	return e
}

// Run carries out a run (or a resume, when o.Parent is set).
func Run(ctx context.Context, o Options) (out *Outcome, err error) {
	e := newEngine(o)
	if err := e.readPlan(func(path string) (*extractor.Selection, error) { return loadPlan(path, e.s.TaskRange) }); err != nil {
		return nil, err
	}
	if err := e.onlyTask(); err != nil {
		return nil, err
	}
	if o.DryRun {
		e.warnUnsetEnv() // as the run would: a dry run is its rehearsal
		return e.dryRun(ctx)
	}
	inputs := inputsDigest(e.sel, e.s)
	if o.Parent != "" && e.gatesStand() && !o.Full {
		if out := e.upToDate(ctx, inputs); out != nil {
			return out, nil
		}
	}
	if err := e.startAgent(ctx); err != nil {
		return nil, err
	}

	start := e.now()
	e.runID = runid.New(start)
	dirs, err := e.stateDirs()
	if err != nil {
		return nil, err
	}
	lock, err := e.takeLock(dirs, start)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// While the run runs, what its agents and gates leave behind comes
	// to it, not to init, and dies when their call ends (procgroup.Sweep).
	release, _ := procgroup.Subreaper()
	defer release()
	// The work tree's watch, while the run holds the lock (watchtree.go).
	e.startWatch(ctx, dirs.Lock)
	defer e.stopWatch()

	e.j, err = cache.OpenDirs(dirs)
	if err != nil {
		return nil, err
	}
	defer e.j.Close()
	if err := refuseLeftovers(e.j, o.RepoRoot); err != nil {
		return nil, err
	}
	// Task worktrees a killed run left behind (--jobs): what ran in them
	// was never journaled, so the tasks run again.
	// (They are under the work tree's git directory: boundary.WorktreeDir;
	// looked for without starting git, on every run.)
	if stray := filepath.Join(dirs.Lock, "worktrees"); files.Exists(stray) {
		_ = boundary.RemoveWorktrees(ctx, o.RepoRoot, stray)
	}

	out = &Outcome{RunID: e.runID, ParentID: o.Parent}
	if err := e.openRun(ctx, out, start, inputs, dirs); err != nil {
		return nil, err
	}
	interrupted, err := e.runAll(ctx, out.Plan)
	// Every call made ahead is waited for, and the task worktrees go,
	// once: whether the run ended, failed or was interrupted.
	e.endWaves(ctx)
	if err != nil {
		return nil, err
	}
	// Each call's leftovers were killed when it ended (procgroup.Sweep);
	// whatever else carries the run's id goes before the verdict.
	procgroup.Sweep([]string{agent.EnvRunID + "=" + e.runID})
	if interrupted {
		e.settleInterrupt(ctx, out)
	}
	if err := e.finishRun(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// takeLock takes the work tree's lock for the run begun at start; its
// path, and a holder's, as the user knows them (dirs.Shown).
func (e *engine) takeLock(dirs cache.Dirs, start time.Time) (*Lock, error) {
	lock, err := acquireLock(dirs.Lock, e.runID, start)
	if locked := (*LockedError)(nil); errors.As(err, &locked) {
		locked.Path = dirs.Shown(locked.Path)
	}
	if err != nil {
		return nil, err
	}
	lock.shown = dirs.Shown(lock.path)
	e.lock = lock
	return lock, nil
}

// openRun journals the run begun at start (beginRun) and takes what it
// starts from: B0, and on a resume what happened between the runs
// (information only), taken before the resume plans (whether a replayed
// task's work is still in the tree, and whether a replayed gate may
// stand, depend on the tree: work.go); the stash as the run found it (a
// block names a stash made since, an agent's `git stash`, which holds
// the work it put away); then a resume's ticks and plan.
func (e *engine) openRun(ctx context.Context, out *Outcome, start time.Time, inputs string, dirs cache.Dirs) error {
	if err := e.beginRun(out, start, inputs, dirs); err != nil {
		return err
	}
	if err := e.firstBoundary(ctx); err != nil {
		return err
	}
	e.stash, _ = e.stashTop(ctx)
	if e.o.Parent == "" {
		return nil
	}
	e.agentTicks(ctx)
	return e.planResume(ctx, out)
}

// settleInterrupt marks the running unit and the running task rows
// interrupted, and checks the interrupted task's discards now, not never.
func (e *engine) settleInterrupt(ctx context.Context, out *Outcome) {
	out.Interrupted = true
	_, _ = e.j.InterruptRunning(e.runID)
	if err := e.guardInterrupted(ctx); err != nil {
		e.emit(Event{Type: EvConcern, Message: "the guard could not check the interrupted task: " + err.Error()})
	}
}

// readPlan checks the settings and that no BLOCKED.md waits (a dry run
// writes nothing, so it may look), then reads the plan now with read
// (from disk, or bytes a Preview was given) and applies its front matter.
func (e *engine) readPlan(read func(path string) (*extractor.Selection, error)) error {
	if err := e.s.Validate(); err != nil {
		return err
	}
	if !e.o.DryRun {
		if b, err := os.ReadFile(filepath.Join(e.o.RepoRoot, BlockedFile)); err == nil && strings.HasPrefix(string(b), stoppedHeading) {
			return ErrStoppedFile
		}
		if _, err := os.Stat(filepath.Join(e.o.RepoRoot, BlockedFile)); err == nil {
			return ErrBlockedFile
		}
	}
	sel, err := read(PlanFile(e.o.RepoRoot, e.s.Plan))
	if err != nil {
		return err
	}
	e.sel = sel
	e.norm = identity.EnvFor(e.o.RepoRoot)
	return e.resumeFrontMatter()
}

// startAgent builds the agent backend (unless Options gave one) and checks
// it can run, and that git can merge trees when calls run in parallel.
func (e *engine) startAgent(ctx context.Context) error {
	e.ag = e.o.Agent
	if e.ag == nil {
		var err error
		e.ag, err = agent.New(e.s.Agent, agent.Options{Command: e.s.AgentCmd})
		if err != nil {
			return err
		}
	}
	if err := e.ag.Check(); err != nil {
		return err
	}
	if err := e.startChain(); err != nil {
		return err
	}
	if e.s.Jobs > 1 {
		if err := boundary.CheckMergeTree(ctx); err != nil {
			return err
		}
	}
	if err := e.startSandbox(ctx); err != nil {
		return err
	}
	// The agent CLI's version is recorded with the run's settings, never
	// hashed: an agent update must not re-run every task (docs/identity.md).
	e.s.AgentVersion = ""
	if v, ok := e.ag.(agent.Versioner); ok {
		vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		if ver, err := v.Version(vctx); err == nil {
			e.s.AgentVersion = ver
		}
		cancel()
	}
	return nil
}

// beginRun journals the run and its tasks pending, after loading the
// parent's lineage on a resume, and says the run started.
func (e *engine) beginRun(out *Outcome, start time.Time, inputs string, dirs cache.Dirs) error {
	e.lineage = &lineage{j: e.j}
	if e.o.Parent != "" {
		parent, err := e.j.GetRun(e.o.Parent)
		if err != nil {
			return err
		}
		out.ParentVerdict = parent.Verdict
		if e.lineage, err = newLineage(e.j, parent.ID); err != nil {
			return err
		}
	}

	settings, _ := json.Marshal(e.s)
	if err := e.j.CreateRun(&cache.Run{
		ID: e.runID, ParentID: e.o.Parent, PlanPath: e.s.Plan, PlanSHA256: e.sel.PlanSHA256,
		Settings: settings, StartedAt: start, Inputs: inputs,
	}); err != nil {
		return err
	}
	// Every task in range is journaled pending first, so that a run killed
	// at any point still shows what it never reached. One transaction: on
	// a 1,000-task plan, one commit per row was a tenth of a cached resume.
	if err := e.j.Batch(false, func(b *cache.Journal) error {
		for _, t := range e.sel.Tasks {
			if err := b.PutTask(cache.Task{RunID: e.runID, TaskID: t.ID, Ordinal: t.Ordinal, Title: t.Title, Status: cache.TaskPending}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	e.emit(Event{Type: EvRunStarted, ParentID: e.o.Parent, Plan: e.s.Plan, PlanSHA: e.sel.PlanSHA256, Count: len(e.sel.Tasks), Sandbox: e.s.SandboxTool})
	e.warnUnsetEnv()
	e.warnLineage()
	if from := e.j.MovedFrom(); from != "" {
		e.emit(Event{Type: EvJournalMoved, Message: fmt.Sprintf("moved the journal from %s/ to %s/ (implloop now keeps its state in the git directory)",
			dirs.Shown(from), dirs.Shown(e.j.Dir()))})
	}
	return nil
}

// planResume makes the resume plan, against the tree as B0 found it, and
// checks what of the replayed tasks' work is still there.
func (e *engine) planResume(ctx context.Context, out *Outcome) error {
	e.loadWorkCheck(e.prev)
	var err error
	out.Plan, err = e.plan(e.acrossTree(e.prev.Tree))
	if err == nil {
		err = e.checkWork(ctx, out.Plan)
	}
	if err != nil {
		return err
	}
	e.planned = make(map[string]PlannedTask, len(out.Plan))
	for _, p := range out.Plan {
		e.planned[p.Task] = p
	}
	e.emit(Event{Type: EvResumePlan, Tasks: out.Plan})
	return nil
}

// runAll runs the tasks in order, wave by wave (parallel.go), until the
// last, a block that stops the run, or an interrupt (interrupted).
func (e *engine) runAll(ctx context.Context, planned []PlannedTask) (interrupted bool, err error) {
	stopping := false
	for i := 0; i < len(e.sel.Tasks) && !e.resumeBlocked && e.journalGone == ""; {
		if ctx.Err() != nil {
			return true, nil
		}
		// After a block that stops the run, the tasks of its wave whose
		// calls were made ahead still settle: independent of it, and paid.
		// The others of the wave (replays, a task that would replay across
		// runs) do not run: the run stops.
		if stopping {
			switch {
			case e.aheadPending(i):
			case e.aheadPendingAfter(i):
				i++
				continue
			default:
				return false, nil
			}
		}
		if err := e.startWave(ctx, i); err != nil {
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return true, nil
			}
			return false, err
		}
		n, res, err := e.runTasks(ctx, i, planned)
		i += n
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if res.status == cache.TaskBlocked && e.s.OnBlocked == "stop" {
			stopping = true
		}
		// A cap reached stops the run at this task boundary (budget.go).
		if e.stopped == nil && i > 0 && i < len(e.sel.Tasks) {
			e.stopped = e.runCap(e.sel.Tasks[i-1])
		}
		if e.stopped != nil {
			stopping = true
		}
	}
	return false, nil
}

// finishRun decides the verdict from the journal, journals the run
// finished, writes its reports and, the journal still there, its records.
func (e *engine) finishRun(ctx context.Context, out *Outcome) error {
	tasks, err := e.j.Tasks(e.runID)
	if err != nil {
		return err
	}
	dec := report.Decide(tasks)
	// A run stopped by a cap or a wait, with nothing done, is PARTIAL: it
	// did not fail, and a resume goes on from it.
	if e.stopped != nil && dec.Verdict == report.Blocked {
		dec.Verdict = report.Partial
	}
	out.Verdict = string(dec.Verdict)
	out.Blocked = e.blockedWrote
	out.NoOp = e.o.Parent != "" && !out.Interrupted && !e.sawLive && !e.sawLiveGate && !e.sawNewSkip && !e.sawRestore &&
		!e.work.treeChanged() && e.sameAsParent(tasks)
	if e.resumeBlocked || e.journalGone != "" {
		dec.Verdict, out.NoOp = report.Blocked, false
		out.Verdict = string(dec.Verdict)
	}
	out.JournalGone = e.journalGone
	if err := e.endStopped(out); err != nil {
		return err
	}
	if err := e.j.FinishRun(e.runID, out.Verdict, dec.Verdict.ExitCode(), e.now()); err != nil {
		return err
	}
	rep, err := report.Build(e.j, e.runID)
	if err != nil {
		return err
	}
	out.Report = rep
	if out.ReportPath, _, err = report.Write(e.j.Dir(), rep); err != nil {
		if e.journalGone == "" {
			return err
		}
		// The state directory went with the journal, and came back as
		// something Write cannot write into: the run still ends BLOCKED.
		out.ReportPath, out.ReportErr = "", err
	}
	if out.ReportPath != "" && !e.o.NoHTMLReport {
		// The HTML report reads the boundary commits even after an
		// interrupt, for a little while; without it the run still ends
		// as it did.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), htmlReportTimeout)
		if out.HTMLPath, err = writeHTMLReport(hctx, e.j, e.j.Root(), rep); err != nil {
			e.emit(Event{Type: EvConcern, Message: "report.html was not written: " + err.Error()})
		}
		cancel()
	}
	e.emit(Event{Type: EvRunFinished, Verdict: out.Verdict, Done: intp(dec.Done), Count: len(e.sel.Tasks), Message: out.ReportPath})
	if e.journalGone == "" && !e.o.DeferRecords {
		// The run's records, as git objects beside its boundaries: what
		// `implloop push` sends. Written once, now that they are final.
		// A failure is the caller's to say: run_finished stays the last
		// event of the stream.
		if _, err := travel.Write(context.WithoutCancel(ctx), e.j, e.runID); err != nil {
			out.RecordsErr = err
		}
	}
	return nil
}

// resumeFrontMatter applies the plan's front matter as it is now to the
// settings (see frontMatterOnResume): a resume's inherited ones, or a fresh
// run's flags and defaults.
//
// A fresh run has no inherited front-matter keys, so for it this is plain
// applyFrontMatter under the flags the user gave (Settings.Flags). After it
// the agent must be known: ErrNoAgent when neither flag nor front matter
// named one (the default backend, exec, needs a command line).
func (e *engine) resumeFrontMatter() error {
	s, err := frontMatterOnResume(e.s, e.sel.FrontMatter)
	if se := (*SettingError)(nil); errors.As(err, &se) {
		return err // a usage error, whichever source the value came from
	}
	if err != nil {
		return &PlanError{Path: e.s.Plan, Diagnostics: []string{err.Error()}}
	}
	e.s = s
	if e.o.Agent == nil && e.s.Agent == "exec" && e.s.AgentCmd == "" {
		return ErrNoAgent
	}
	if e.o.Agent == nil && !slices.Contains(agent.Names(), e.s.Agent) {
		return &UnknownAgentError{Name: e.s.Agent}
	}
	return nil
}

// UnknownAgentError is an agent name no backend has (a usage error).
type UnknownAgentError struct{ Name string }

func (e *UnknownAgentError) Error() string {
	return agent.UnknownMessage(e.Name)
}

// ErrNoAgent is a run with no agent: no --agent, --agent-cmd or agent in
// the plan's front matter.
var ErrNoAgent = errors.New("no agent given")

// PlanFile is where the plan of settings path p is: p is recorded relative
// to the repo root when the plan is inside it, so a moved repository
// resumes with the same settings.
func PlanFile(repoRoot, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(repoRoot, p)
}

// loadPlan reads and parses the plan from disk now and selects the tasks in
// range. Lint errors are returned as one error listing them.
func loadPlan(path, taskRange string) (*extractor.Selection, error) {
	src, err := plan.ReadBytes(path)
	if err != nil {
		return nil, &PlanReadError{Path: path, Err: err}
	}
	return selectBytes(path, src, taskRange)
}

// PlanReadError is a plan file that cannot be read (missing, a directory,
// too large). The message names the path, which plan.ReadFile's does not.
type PlanReadError struct {
	Path string
	Err  error
}

func (e *PlanReadError) Error() string {
	return "plan " + e.Path + ": " + strings.TrimPrefix(e.Err.Error(), "cannot read plan: ")
}
func (e *PlanReadError) Unwrap() error { return e.Err }

// PlanError lists a plan's lint errors.
type PlanError struct {
	Path        string
	Diagnostics []string
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("plan %s has %d error(s):\n%s", e.Path, len(e.Diagnostics), strings.Join(e.Diagnostics, "\n"))
}

// RangeError is a --task-range that does not parse (a usage error).
type RangeError struct{ Err error }

func (e *RangeError) Error() string { return e.Err.Error() }
func (e *RangeError) Unwrap() error { return e.Err }

func (e *engine) emit(ev Event) {
	ev.Time = e.now().UTC()
	ev.RunID = e.runID
	if e.j != nil && e.runID != "" {
		_, _ = e.j.AppendEvent(e.runID, ev.Type, ev)
	}
	if e.held != nil { // inside a replay batch: handed over when it commits
		*e.held = append(*e.held, ev)
		return
	}
	e.obs.Event(ev)
	e.notify(ev)
}

// warnUnsetEnv warns of each --env variable (flag, front matter or
// inherited) that is not set, and of --sandbox-* settings given without
// --sandbox (warnSandboxUnused): the agent runs without it, which is seldom
// what a declared dependency meant.
func (e *engine) warnUnsetEnv() {
	e.warnSandboxUnused()
	for _, n := range e.s.Env {
		if _, ok := os.LookupEnv(n); !ok {
			e.emit(Event{Type: EvWarning, Message: fmt.Sprintf("--env %s is not set in the environment: the agent runs without it (its name still joins every unit's identity)", n)})
		}
	}
}

// unitParams are the run parameters WorkList needs for task t.
func (e *engine) unitParams(t extractor.Task) unit.Params {
	return unit.Params{
		Index:       t.Ordinal,
		Count:       e.sel.Count,
		Agent:       e.agentName(),
		AgentCmd:    e.agentArgv(),
		Model:       e.s.Models()[0], // the rest of the list are fallbacks (limits.go)
		PlanContext: unit.PlanContext(e.s.PlanContext),
		PlanPath:    e.s.Plan,
		PlanSHA256:  e.sel.PlanSHA256,
		Preamble:    e.sel.Preamble,
		Gate:        e.gateCommand(t),
		Timeout:     time.Duration(e.s.Timeout),
		EnvNames:    e.s.Env,
		UserParams:  e.s.Params,
		Norm:        e.norm,
	}
}

// agentArgv is the exec backend's command line as it enters the identity:
// another program, or other arguments, is another agent.
func (e *engine) agentArgv() []string {
	if e.agentName() != "exec" || e.s.AgentCmd == "" {
		return nil
	}
	argv, err := agent.SplitCommand(e.s.AgentCmd)
	if err != nil {
		return []string{e.s.AgentCmd} // agent.New reports the error before any unit runs
	}
	return argv
}

func (e *engine) agentName() string {
	if e.ag != nil {
		return e.ag.Name()
	}
	return e.s.Agent
}

// artifacts are the identities of the final units of t's declared
// dependencies, sorted: of those that ran in this pass (or are planned
// to), and of those that do not run in it (checked in the plan, out of
// --task-range) as the lineage last did them, so that ticking or leaving
// out a dependency does not look like a change to its dependents.
func (p *pass) artifacts(t extractor.Task) []string {
	var out []string
	for _, d := range t.Deps {
		if a := p.depArtifact(d); a != "" {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// depArtifact is dependency d's artifact as artifacts takes it ("" none).
func (p *pass) depArtifact(d string) string {
	a, ok := p.art[d]
	if !ok && !p.e.runsHere(d) {
		a = p.e.lineage.artifact(d)
		if given, ok := p.e.o.Artifacts[d]; ok && a == "" {
			a = given // a worker's dependency, done by another (fanin.go)
		}
	}
	return a
}

// skips reports whether t is skipped in this run (checked in the plan).
func (e *engine) skips(t extractor.Task) bool {
	return t.Checked && !e.s.IncludeChecked && e.ticked[t.ID] == ""
}

// runsHere reports whether task id is in range and not skipped.
func (e *engine) runsHere(id string) bool {
	if e.here == nil {
		e.here = make(map[string]bool, len(e.sel.Tasks))
		for _, t := range e.sel.Tasks {
			e.here[t.ID] = !e.skips(t)
		}
	}
	return e.here[id]
}

// gateCommand is the task's own verify block, else --verify.
func (e *engine) gateCommand(t extractor.Task) string {
	if strings.TrimSpace(t.Verify) != "" {
		return strings.TrimSpace(t.Verify)
	}
	return e.s.Verify
}
