// Package worker runs one worker of a plan shared through a git remote
// (implloop work): a driver over loop and travel, not a second engine.
//
// # The protocol
//
// The remote is the only shared state. Every worker of a plan starts from
// the same commit (the plan's base: HEAD where it runs, the plan committed
// in it) and names the plan the same way: a key of the plan's path, its
// bytes and the base commit (PlanKey), so that workers of another plan or
// another commit never share a claim.
//
// A worker repeats: it lists the plan's claims and the runs on the remote
// (one ls-remote); it picks, in plan order, a task that is ready (every
// task it waits for, extractor.After, has a trusted result that ended
// done) and that nobody holds (no claim, or a claim whose value this
// worker has seen unchanged for a lease period: its worker stopped); it
// claims it with a compare-and-swap push (travel.CASPush: created only if
// absent, taken over only from the stale value); it builds the task's
// input tree (the results of the tasks it waits for merged onto the base
// tree in plan order, loop.InputTree) and checks it out in a worktree of
// its own; it runs the task there (loop.Run with Options.Task: the
// attempt chain and the gate, journaled, boundaries as commits), renewing
// the lease meanwhile; and it pushes the run, signed when the user's git
// signs, together with the claim moved to the run's records commit, in
// one atomic push that the remote takes only while the claim still holds
// this worker's lease. That push goes on in the background while the
// worker looks for, claims and checks out its next task (one push at a
// time; no agent is called while the last result's push is refused). It
// stops when every task is settled (done or blocked by a worker, or
// unreachable behind a blocked one), looking again soon after the claims
// last moved and less often while they stay still.
//
// A worker that loses its lease (another took the task over, having seen
// it unchanged for a lease period) stops the task and pushes nothing: two
// workers never both push a task's result, and a killed worker's task is
// done again once, by the one worker that wins the takeover.
//
// The fan-in is an ordinary `implloop pull` and `implloop run PLAN` from
// the base commit (loop/fanin.go): every task replays from the workers'
// results.
package worker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gitobj"
	"github.com/implloop/implloop/internal/procgroup"
	"github.com/implloop/implloop/internal/words"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/travel"
)

// DefaultLease is how long a claim may stay unchanged before another
// worker takes its task over.
const DefaultLease = 10 * time.Minute

// Options configure one worker.
type Options struct {
	// Root is the clone's work tree (its top-level directory).
	Root string
	// Remote is the git remote shared by the workers ("" for the
	// branch's upstream, else origin).
	Remote string
	// Settings are the run settings of every task's run; Plan is the
	// plan's path relative to Root.
	Settings loop.Settings
	// Lease is this worker's lease period, written in its leases: it
	// renews every third of it, and gives a task up when no renewal got
	// through for all of it. A claim of another worker is taken over once
	// unchanged for that worker's period, as its lease says (this one, when
	// it says none) (0: DefaultLease).
	Lease time.Duration
	// ID names the worker in its leases ("" for host-pid-random).
	ID string
	// Log receives a line per thing the worker does (nil: none), one
	// call at a time, from more than one goroutine (a result is pushed
	// while the next task runs).
	Log func(Event)
	// Observer receives each task run's events (nil: none).
	Observer loop.Observer
	// Agent overrides the backend built from Settings (tests).
	Agent agent.Agent
	// Heartbeat is each task run's heartbeat (loop.Options).
	Heartbeat time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Event is one thing a worker did or saw.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"` // started, claimed, took_over, finished, concern, pushed, push_failed, lost, refused, waiting, skipped, stopped, done
	Worker  string    `json:"worker"`
	Task    string    `json:"task,omitempty"`
	Run     string    `json:"run,omitempty"`
	Verdict string    `json:"verdict,omitempty"`
	// Plan and Base: the plan's key (PlanKey) and the base commit, on
	// started.
	Plan    string `json:"plan,omitempty"`
	Base    string `json:"base,omitempty"`
	Message string `json:"message,omitempty"`
}

// TaskRun is a task a worker ran.
type TaskRun struct {
	Task    string `json:"task"`
	Run     string `json:"run"`
	Verdict string `json:"verdict"`
	// Pushed: its result is on the remote (false: the lease was lost,
	// or the push failed).
	Pushed bool `json:"pushed"`
	// TookOver: the task was claimed from a stale lease.
	TookOver bool `json:"took_over,omitempty"`
	// Redone says why the result it replaced was not one to build on
	// (the task was done again here); "" when there was none.
	Redone string `json:"redone,omitempty"`
}

// Summary is what a worker did.
type Summary struct {
	Worker string    `json:"worker"`
	Plan   string    `json:"plan"` // the plan's key (PlanKey)
	Base   string    `json:"base"` // the base commit
	Tasks  []TaskRun `json:"tasks"`
	// Blocked are the plan's tasks that ended blocked (by any worker),
	// and Unreachable those no worker will take: they wait, directly or
	// through others, for a task that ended blocked, was left to the
	// fan-in, or whose result is not trusted here.
	Blocked     []string `json:"blocked,omitempty"`
	Unreachable []string `json:"unreachable,omitempty"`
	// Left are tasks no worker can do: their dependencies' results do
	// not merge, or their run stopped before they ended (a cap, a usage
	// limit past --max-wait). The fan-in runs them live (from the
	// attempts that run paid for).
	Left []string `json:"left,omitempty"`
	// Untrusted are tasks whose result on the remote is not one to
	// build on here (not trusted, another plan's, not a result of the
	// task, refused by the pull) though a worker did them again: the
	// fan-in runs them live.
	Untrusted []string `json:"untrusted,omitempty"`
	// Why says, per task of Unreachable, Left and Untrusted, why.
	Why map[string]string `json:"why,omitempty"`
	// Stopped says why the worker stopped taking tasks though some were
	// left (--max-cost or --max-tokens reached by its live calls, over
	// all the tasks it ran); "" when it did not.
	Stopped string `json:"stopped,omitempty"`
	// CostUSD and Tokens are what this worker's live calls spent.
	CostUSD float64 `json:"cost_usd,omitempty"`
	Tokens  int64   `json:"tokens,omitempty"`
}

// PlanKey names a plan's claims: its path, its bytes and the commit the
// workers start from.
func PlanKey(planPath, planSHA256, base string) string {
	h := sha256.Sum256([]byte("implloop.work\x00" + filepath.ToSlash(planPath) + "\x00" + planSHA256 + "\x00" + base))
	return hex.EncodeToString(h[:8])
}

// worker is one worker's state.
type worker struct {
	o         Options
	now       func() time.Time
	sel       *extractor.Selection
	deps      map[string][]string // loop.InputDeps
	key       string
	base      string // commit
	tree      string // the base commit's tree as a boundary has it (no plan)
	headTree  string // the base commit's tree
	j         *cache.Journal
	remote    string
	refs      *travel.Lister // of remote
	lease     time.Duration
	poll      time.Duration // the longest wait between two looks
	wt        string        // the worker's worktree ("" until made)
	leases    int           // lease commits made
	emptyTree string        // git's empty tree (leases' tree)

	// known is what each task's run would learn of wt from git, learned
	// once wt was made (loop.Learn); signing how results are pushed,
	// signed and verified, as the clone's git said when the worker
	// started (travel.LearnSigning). Both are read before any agent ran:
	// see loop.Known and travel.Signing for what an agent's change to
	// git's configuration does then.
	known *loop.Known
	// first is the Known learned when the worktree was first made: one
	// made again (checkout) keeps its ignore rules and keep settings.
	first   *loop.Known
	signing travel.Signing
	// configSaid is the signing configuration's keys a concern last said
	// changed since the worker started (signingChanged, by one push at a
	// time, before the next task's agent is called).
	configSaid string

	// present are the runs the journal was found to have, and results
	// the trusted results settle read of them, by task: each is read
	// once (a step reads every claim's, and a plan of n tasks takes
	// about n steps).
	present map[string]bool
	results map[settledKey]*loop.Result

	seen   map[string]seenClaim // task -> a running claim's value, since when
	left   map[string]string    // task -> why no worker can do it
	redone map[string]bool      // tasks done again here for a result not trusted
	// unpulled are runs claims name that a pull did not import, and why.
	unpulled map[string]string
	sum      *Summary // also what the worker's live calls spent (its caps)
	waited   string   // what the last waiting line said
	// wait is how long the worker waits before it looks again, and
	// looked what the last look saw (nextWait).
	wait   time.Duration
	looked map[string]claimState
	// idlePull is when the worker, idle, pulls the results no task
	// waits for while others still run (zero: it has not been idle since
	// it last took a task; idlePullDue).
	idlePull time.Time
	// pending is the last task's result, pushed in the background while
	// the worker goes on (nil: none).
	pending *pendingPush
	// behind are the results the last look saw that the journal lacks
	// and no task waits for: the next task's run pulls them while its
	// agent works (pullBehind), so that the worker's last pull, which
	// verifies every result before it ends, finds few left.
	behind []string
	// landed: a result of this worker's landed on the remote. Until one
	// did, the next task's agent is not called before the last result's
	// push was tried once (the remote may refuse this worker's results:
	// a first push is where a hook, a protected ref or a token without
	// write access shows); from then on it is called beside the push.
	landed atomic.Bool
	// sealed are the last runs this worker pushed (sealWindow of them,
	// oldest first), with the records commit each went as: every push
	// seals them again (a signature for a pull to verify per window of
	// a worker's runs, not per run). Used by one push at a time.
	sealed []sealedRun
	logMu  sync.Mutex // Options.Log is called by one goroutine at a time
	// leaseMu guards leases and emptyTree: a pending push's renewals
	// make leases while the worker claims its next task.
	leaseMu sync.Mutex
}

// settledKey is a task and the run its claim names.
type settledKey struct{ task, run string }

type seenClaim struct {
	value string
	since time.Time
	// period is the lease period the claim's lease names (0: none, the
	// watcher goes by its own), read once checked.
	period  time.Duration
	checked bool
}

// leaseCheckAfter: a claim unchanged this long (or the worker's own
// lease, when shorter) has its lease read, for the lease period its
// worker keeps (travel.LeasePeriod). Until then a claim costs a watcher
// nothing but its ls-remote line; the holder's period, when shorter, is
// honoured from then on.
const leaseCheckAfter = time.Minute

// Work runs the worker until every task of the plan is settled.
func Work(ctx context.Context, o Options) (*Summary, error) {
	w := &worker{o: o, now: o.Now, seen: map[string]seenClaim{}, left: map[string]string{}, redone: map[string]bool{}, unpulled: map[string]string{},
		present: map[string]bool{}, results: map[settledKey]*loop.Result{}}
	if w.now == nil {
		w.now = time.Now
	}
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	defer w.j.Close()
	defer w.removeWorktree()
	w.log(w.started())
	for {
		if err := ctx.Err(); err != nil {
			_ = w.awaitPush() // given up, as the context ended
			return w.sum, err
		}
		more, err := w.step(ctx)
		if !more || err != nil {
			// The last result's push ends before the worker does.
			perr := w.awaitPush()
			if ctx.Err() != nil && err != nil {
				return w.sum, err
			}
			return w.sum, errors.Join(err, perr)
		}
	}
}

// start reads the plan and the base, and opens the journal. Its steps
// that do not wait for each other run at once (each is a git process or
// a few, and a fleet's workers start together, where each process waits
// its turn for a core); an error is the first one in the order below.
func (w *worker) start(ctx context.Context) error {
	o := w.o
	w.lease = o.Lease
	if w.lease <= 0 {
		w.lease = DefaultLease
	}
	w.poll = min(max(w.lease/6, 50*time.Millisecond), 2*time.Second)
	if o.ID == "" {
		host, _ := os.Hostname()
		w.o.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randHex(3))
	}
	sel, err := loop.ReadPlan(loop.PlanFile(o.Root, o.Settings.Plan))
	if err != nil {
		return err
	}
	w.sel = sel
	// The plan the workers read is the one in the base commit: each task
	// runs in a worktree checked out from it.
	if filepath.IsAbs(o.Settings.Plan) {
		return &PlanNotCommittedError{Plan: o.Settings.Plan}
	}
	plan := filepath.ToSlash(filepath.Clean(o.Settings.Plan))
	var g startGroup
	g.do(func() error {
		w.remote = o.Remote
		if w.remote == "" {
			w.remote = travel.DefaultRemote(ctx, o.Root)
		}
		w.refs = travel.NewLister(ctx, o.Root, w.remote)
		return nil
	})
	g.do(func() error {
		base, err := gitOut(ctx, o.Root, "rev-parse", "-q", "--verify", "HEAD^{commit}")
		if err != nil {
			return ErrNoBase
		}
		w.base = base
		var of startGroup
		// The base tree is the one a boundary of the base has (the plan
		// left out), as the fan-in's first boundary has it; the plan is
		// put back in each task's checkout (inputCommit).
		of.do(func() (err error) {
			w.headTree, err = gitOut(ctx, o.Root, "rev-parse", base+"^{tree}")
			return err
		})
		of.do(func() (err error) {
			w.tree, err = boundary.CommitTree(ctx, o.Root, base, plan)
			return err
		})
		of.do(func() error {
			committed, err := gitOut(ctx, o.Root, "rev-parse", "-q", "--verify", base+":"+plan)
			if err != nil {
				return &PlanNotCommittedError{Plan: o.Settings.Plan}
			}
			if onDisk, err := gitOut(ctx, o.Root, "hash-object", "--", filepath.FromSlash(o.Settings.Plan)); err != nil || onDisk != committed {
				return &PlanNotCommittedError{Plan: o.Settings.Plan}
			}
			return nil
		})
		return of.wait()
	})
	g.do(func() error { return boundary.CheckMergeTree(ctx) })
	g.do(func() (err error) {
		w.signing, err = travel.LearnSigning(ctx, o.Root)
		return err
	})
	var dirs cache.Dirs
	g.do(func() (err error) {
		dirs, err = cache.StateDir(o.Root)
		return err
	})
	if err := g.wait(); err != nil {
		return err
	}
	// Before anything is claimed: the results pushed from here must be
	// ones the other workers build on and the fan-in replays, else each
	// would do this worker's tasks again (and pay for them twice). A
	// probe is signed for it (a hardware key may ask for a touch): once
	// the plan and the base are known good.
	if err := travel.CheckSelfTrust(ctx, dirs, &w.signing); err != nil {
		return err
	}
	if w.j, err = cache.OpenDirs(dirs); err != nil {
		return err
	}
	skip := func(t extractor.Task) bool { return t.Checked && !o.Settings.IncludeChecked }
	w.deps = loop.InputDeps(sel.Tasks, skip)
	w.key = PlanKey(o.Settings.Plan, sel.PlanSHA256, w.base)
	w.sum = &Summary{Worker: w.o.ID, Plan: w.key, Base: w.base}
	return nil
}

// started says what the worker works on: workers share tasks only
// under one plan key, the plan's path and bytes at one base commit, and
// one started from another commit (a CI job that checked out a newer
// one) silently does every task again; its first line says so.
func (w *worker) started() Event {
	n := 0
	for _, t := range w.sel.Tasks {
		if !w.skips(t) {
			n++
		}
	}
	return Event{Type: "started", Plan: w.key, Base: w.base, Message: fmt.Sprintf(
		"worker %s started: %s at %s, %d task(s), plan key %s (it shares tasks only with workers of this plan started from the same commit)",
		w.o.ID, w.o.Settings.Plan, words.Short(w.base), n, w.key)}
}

// startGroup runs steps at once; wait returns the error of the first
// step (in the order they were given) that failed.
type startGroup struct {
	wg   sync.WaitGroup
	errs []*error
}

func (g *startGroup) do(f func() error) {
	e := new(error)
	g.errs = append(g.errs, e)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		*e = f()
	}()
}

func (g *startGroup) wait() error {
	g.wg.Wait()
	for _, e := range g.errs {
		if *e != nil {
			return *e
		}
	}
	return nil
}

// errLostEarly: the claim was taken over before the task's agent was
// called (worker.run).
var errLostEarly = errors.New("the claim was taken over")

// errLostRace: another worker claimed the task first, before its agent
// was called.
var errLostRace = errors.New("another worker claimed the task first")

// ErrNoBase: the clone has no commit to start from.
var ErrNoBase = errors.New("the repository has no commit: workers start from HEAD, the plan committed in it")

// PlanNotCommittedError is a plan that is not as HEAD has it: every
// worker reads it from the base commit.
type PlanNotCommittedError struct{ Plan string }

func (e *PlanNotCommittedError) Error() string {
	return fmt.Sprintf("plan %s is not committed as it is on disk: workers run each task from HEAD, which must hold the plan", e.Plan)
}

func (w *worker) log(ev Event) {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	if w.o.Log != nil {
		ev.Worker, ev.Time = w.o.ID, w.now().UTC()
		w.o.Log(ev)
	}
}

// claimState is what the remote says of a task.
type claimState struct {
	value string // the claim's value ("" none)
	run   string // the run whose records the claim names: done there
}

// look lists the plan's claims and the runs on the remote.
func (w *worker) look(ctx context.Context) (map[string]claimState, error) {
	prefix := travel.ClaimsRefPrefix + w.key + "/"
	refs, err := w.refs.Refs(ctx, prefix+"*", travel.RecordsRefPrefix+"*")
	if err != nil {
		return nil, err
	}
	runOf := map[string]string{}
	for ref, oid := range refs {
		if run, ok := strings.CutPrefix(ref, travel.RecordsRefPrefix); ok {
			runOf[oid] = run
		}
	}
	out := map[string]claimState{}
	for ref, oid := range refs {
		if task, ok := strings.CutPrefix(ref, prefix); ok {
			out[task] = claimState{value: oid, run: runOf[oid]}
		}
	}
	return out, nil
}

// taskInfo is what a step knows of one task.
type taskInfo struct {
	t       extractor.Task
	claim   claimState
	result  *loop.Result // its result, when done by a run this journal has
	settled bool         // done or blocked (or left, or unreachable)
	// distrust says why its result (the run its claim names) is not one
	// to build on here: not trusted, of another plan, not a result of
	// this task, or refused by the pull ("" when it is, or is not
	// pulled yet).
	distrust string
	// untrusted: its result is not trusted here, and a task waits for
	// it: it is done again (once per worker), from that claim's value.
	untrusted bool
	// stuck: no worker will ever push a result of it (why, when
	// stuckKnown): it waits for a task that ended blocked, was left to
	// the fan-in, or whose result is not trusted here, or for one that
	// is stuck itself.
	stuckKnown bool
	stuck      string
}

// step takes one look and does what it can: a task, or a wait. It
// reports whether there is more to do.
func (w *worker) step(ctx context.Context) (bool, error) {
	claims, err := w.look(ctx)
	if err != nil {
		return false, err
	}
	info, need, err := w.survey(claims)
	if err != nil {
		return false, err
	}
	pulled := false
	if len(need) > 0 && w.needed(info, need) {
		if err := w.pull(ctx, need); err != nil {
			return false, err
		}
		pulled = true
	}
	w.settle(info)
	w.behind = nil
	if !pulled {
		w.behind = need
	}
	next, took, waiting := w.pick(ctx, info)
	if next == nil && !pulled && len(need) > 0 && w.idlePullDue(waiting) {
		// Nothing else to take: the results no task waits for are
		// pulled too, before they count as settled, so that one not
		// trusted here (or not a result of its task at all) is done
		// again rather than left unannounced.
		if err := w.pull(ctx, need); err != nil {
			return false, err
		}
		if info, _, err = w.survey(claims); err != nil {
			return false, err
		}
		w.settle(info)
		next, took, waiting = w.pick(ctx, info)
	}
	if next != nil {
		if why := w.capped(); why != "" {
			w.sum.Stopped = why
			w.log(Event{Type: "stopped", Message: why + ": this worker takes no more tasks"})
			return false, nil
		}
	}
	if next == nil && w.pending != nil {
		// Nothing to take before the result being pushed lands (a task
		// may wait for it): look again once it did.
		return true, w.awaitPush()
	}
	if next == nil {
		if waiting == 0 {
			w.finish(info)
			return false, nil
		}
		if why := w.waitingWhy(info); why != w.waited {
			w.waited = why
			w.log(Event{Type: "waiting", Message: why})
		}
		return true, sleep(ctx, w.nextWait(claims))
	}
	w.idlePull = time.Time{}
	return true, w.do(ctx, next, took, info)
}

// idlePullDue says whether an idle worker pulls the results no task
// waits for now: at once when no task is left but them (waiting: none),
// else once a poll period after it went idle, and each poll period after
// that. Each pull verifies and imports what it finds; the ends of a
// fleet's tasks come together, and pulling each result as it lands
// would pay a pull per result in every idle worker, on the cores the
// last tasks need.
func (w *worker) idlePullDue(waiting int) bool {
	now := w.now()
	switch {
	case waiting == 0:
	case w.idlePull.IsZero():
		w.idlePull = now.Add(w.poll)
		return false
	case now.Before(w.idlePull):
		return false
	}
	w.idlePull = now.Add(w.poll)
	return true
}

// firstWait is how long a worker waits for others before it looks again,
// when the last look saw claims move.
const firstWait = 100 * time.Millisecond

// nextWait is how long to wait before the next look, given what this one
// saw: firstWait after any claim moved (a task claimed, renewed or
// pushed: the ends of the others' tasks tend to come together, the last
// round's most of all), then twice as long each look that saw nothing
// move, up to the poll period. A fleet's last workers then end within
// moments of its last push, not a poll period later, and a worker that
// waits for a long task costs the remote a look every poll period.
func (w *worker) nextWait(claims map[string]claimState) time.Duration {
	if w.wait > 0 && maps.Equal(claims, w.looked) {
		w.wait = min(2*w.wait, w.poll)
	} else {
		w.wait = min(firstWait, w.poll)
	}
	w.looked = claims
	return w.wait
}

// survey is what the claims say of each task, and the runs they name
// that the journal lacks (and that were not refused by a pull already).
func (w *worker) survey(claims map[string]claimState) (map[string]*taskInfo, []string, error) {
	info := map[string]*taskInfo{}
	var need []string
	for _, t := range w.sel.Tasks {
		ti := &taskInfo{t: t, claim: claims[t.ID]}
		info[t.ID] = ti
		if r := ti.claim.run; r != "" && w.unpulled[r] == "" && !w.present[r] {
			if _, err := w.j.GetRun(r); errors.Is(err, cache.ErrNotFound) {
				need = append(need, r)
			} else if err != nil {
				return nil, nil, err
			} else {
				w.present[r] = true
			}
		}
	}
	return info, need, nil
}

// pull imports the runs of need (the results claims name that the
// journal lacks: not the rest of the remote's runs, which a fresh clone
// would import whole); those it did not import are remembered, with why,
// and never pulled for again.
func (w *worker) pull(ctx context.Context, need []string) error {
	res, err := w.pullRuns(ctx, need)
	if err != nil {
		return err
	}
	return w.pulled(need, res)
}

// pullRuns is the pull of need: no bookkeeping, so that it may run
// beside the worker's loop (pullBehind).
func (w *worker) pullRuns(ctx context.Context, need []string) (*travel.PullResult, error) {
	// A run the pull refuses (malformed, forged: anyone with push access
	// can put one there) is left out, named, and never built on; the
	// others are imported.
	dirs := w.dirs()
	return travel.Pull(ctx, w.o.Root, w.remote, func() (*cache.Journal, error) {
		if dirs.State == "" {
			return cache.Open(w.o.Root)
		}
		return cache.OpenDirs(dirs) // where the worker's journal is: no git asked
	},
		travel.SkipRefused(), travel.OnlyRuns(need), travel.VerifyAs(w.signing), travel.Via(w.refs))
}

// pulled notes what the pull of need (res) did not import, and why.
func (w *worker) pulled(need []string, res *travel.PullResult) error {
	for _, r := range res.Refused {
		if _, ok := w.unpulled[r.Run]; !ok {
			w.log(Event{Type: "refused", Run: r.Run, Message: "refused " + travel.RecordsRef(r.Run) + " on the remote, nothing of it imported: " + r.Reason})
		}
		w.unpulled[r.Run] = "was refused by the pull (" + r.Reason + ")"
	}
	for _, r := range need {
		if _, err := w.j.GetRun(r); errors.Is(err, cache.ErrNotFound) {
			w.unpulled[r] = "could not be pulled"
		} else if err != nil {
			return err
		}
	}
	return nil
}

// behindPull is a pull made while a task's agent works (pullBehind).
type behindPull struct {
	need []string
	done chan struct{}
	res  *travel.PullResult
	err  error
}

// pullBehind pulls the results the last look saw that no task waits for
// (w.behind), in the background at a low priority, while the task's
// agent works: the cores are idle then, and the worker's last pull,
// which verifies every result of the plan before the worker ends, is
// left only the results that landed since. nil when there are none.
func (w *worker) pullBehind(ctx context.Context) *behindPull {
	if len(w.behind) == 0 {
		return nil
	}
	p := &behindPull{need: w.behind, done: make(chan struct{})}
	w.behind = nil
	go func() {
		defer close(p.done)
		procgroup.Background()
		// A pull imports in one journal transaction, which the task's
		// run waits for when it writes (the journal's busy timeout is
		// 10 s): one that is not done in behindPullLimit (a slow
		// verifying program, a loaded machine) is given up, its runs
		// pulled again before the worker ends.
		ctx, cancel := context.WithTimeout(ctx, behindPullLimit)
		defer cancel()
		p.res, p.err = w.pullRuns(ctx, p.need)
	}()
	return p
}

// behindPullLimit is how long a pull behind a task's agent may take:
// well within the journal's busy timeout (cache), which a task's run
// waits for the pull's transaction under.
const behindPullLimit = 5 * time.Second

// joinBehind waits for a pull made behind a task's agent and notes what
// it refused. One that failed is no failure of the task: the runs it
// would have imported are pulled again before the worker ends.
func (w *worker) joinBehind(p *behindPull) {
	if p == nil {
		return
	}
	<-p.done
	if p.err == nil {
		_ = w.pulled(p.need, p.res)
	}
}

// capped says which of --max-cost and --max-tokens the worker's live
// calls reached, over every task it ran (each task is a run of its own,
// whose caps count that run only); "" while none is.
func (w *worker) capped() string {
	s := w.o.Settings
	switch {
	case s.MaxCost > 0 && w.sum.CostUSD >= s.MaxCost:
		return fmt.Sprintf("the worker's live calls spent $%.2f, and --max-cost is $%.2f", w.sum.CostUSD, s.MaxCost)
	case s.MaxTokens > 0 && w.sum.Tokens >= s.MaxTokens:
		return fmt.Sprintf("the worker's live calls used %d tokens, and --max-tokens is %d", w.sum.Tokens, s.MaxTokens)
	}
	return ""
}

// needed reports whether a run the journal lacks is the result of a task
// some other task waits for (only those are pulled: a task nobody builds
// on needs no pull).
func (w *worker) needed(info map[string]*taskInfo, runs []string) bool {
	for _, t := range w.sel.Tasks {
		for _, d := range w.deps[t.ID] {
			if slices.Contains(runs, info[d].claim.run) {
				return true
			}
		}
	}
	return false
}

// settle reads the results of the tasks the remote has results of.
func (w *worker) settle(info map[string]*taskInfo) {
	for _, t := range w.sel.Tasks {
		ti := info[t.ID]
		if w.skips(t) {
			ti.settled = true
			continue
		}
		if ti.claim.run == "" {
			continue
		}
		ti.settled = true
		key := settledKey{t.ID, ti.claim.run}
		if why := w.unpulled[ti.claim.run]; why != "" {
			ti.distrust = why
		} else if r, ok := w.results[key]; ok {
			ti.result = r
		} else if _, err := w.j.GetRun(ti.claim.run); errors.Is(err, cache.ErrNotFound) {
			continue // not pulled yet (step pulls it before the worker ends)
		} else if r, err := loop.TaskResult(w.j, ti.claim.run, t.ID); err != nil {
			// A claim naming a run that did not do the task (another
			// task's, forged), or whose result cannot be read.
			ti.distrust = "is not a result of task " + t.ID + " (" + err.Error() + ")"
		} else {
			ti.result = &r
			switch {
			case r.PlanSHA256 != w.sel.PlanSHA256:
				// A claim naming another plan's run (forged): a result
				// of nothing this plan asked, done again as untrusted.
				r.Trust.Trusted, r.Trust.Why = false, "a run of another plan"
				ti.distrust = "is of another plan"
			case !r.Trust.Trusted:
				ti.distrust = "is not trusted here: " + r.Trust.String()
			}
			// Read once: a run in the journal, and what it did of a
			// task, do not change (a pull imports only runs it lacks).
			// A read that failed is not kept, nor a result not trusted
			// (a later pull may trust it: travel's reverify): both are
			// read again.
			if ti.distrust == "" {
				w.results[key] = ti.result
			}
		}
		if ti.distrust != "" && !w.redone[t.ID] {
			ti.settled, ti.untrusted = false, true
		}
	}
}

func (w *worker) skips(t extractor.Task) bool { return t.Checked && !w.o.Settings.IncludeChecked }

// readiness says whether every task t waits for has a trusted result
// that ended done: ready; else why not, and whether it never will be.
func (w *worker) readiness(t extractor.Task, info map[string]*taskInfo) (ready bool, why string, never bool) {
	for _, d := range w.deps[t.ID] {
		di := info[d]
		switch {
		case di.claim.run == "":
			if why := w.stuck(d, info); why != "" {
				return false, "waits for task " + d + ", which " + why, true
			}
			return false, "waits for task " + d, false
		case di.distrust != "":
			return false, "waits for task " + d + ", whose result (run " + di.claim.run + ") " + di.distrust, !di.untrusted
		case di.result == nil:
			return false, "waits for task " + d + ", whose result (run " + di.claim.run + ") is not pulled yet", false
		case di.result.Status != cache.TaskDone:
			return false, "waits for task " + d + ", which ended " + string(di.result.Status), true
		}
	}
	return true, "", false
}

// stuck says why no worker will ever push a result of task id, which has
// none on the remote ("" when one may come): it was left to the fan-in,
// or it waits for a task that will never have a trusted result that
// ended done. Memoized in info (one look).
func (w *worker) stuck(id string, info map[string]*taskInfo) string {
	ti := info[id]
	if ti.stuckKnown {
		return ti.stuck
	}
	ti.stuckKnown = true // a cycle (the plan rejects them) is not stuck
	if why := w.left[id]; why != "" {
		ti.stuck = "is left to the fan-in"
	} else if _, why, never := w.readiness(ti.t, info); never {
		ti.stuck = why
	}
	return ti.stuck
}

// pick is the task this worker claims now (took: why it takes the claim
// over, "" when there is none), and how many tasks are not settled.
//
// Of the tasks it may claim, it takes one of the first few in plan order
// (spread), the one its id ranks first, not the first: workers that look at
// once (a fleet's start, and the ends of equal tasks, which come together)
// then mostly claim different tasks. Were each to take the first, all but
// one would lose its compare-and-swap, look again and race for the next,
// one claim landing per round trip.
func (w *worker) pick(ctx context.Context, info map[string]*taskInfo) (next *taskInfo, took string, waiting int) {
	now := w.now()
	type candidate struct {
		ti   *taskInfo
		took string
	}
	var cands []candidate
	held := 0 // claims of tasks being done: about how many workers are busy
	for _, t := range w.sel.Tasks {
		ti := info[t.ID]
		if ti.claim.value != "" && ti.claim.run == "" {
			held++
		}
		if ti.settled || w.left[t.ID] != "" {
			continue
		}
		ready, _, never := w.readiness(t, info)
		if never {
			continue // blocked behind another, or left to the fan-in
		}
		waiting++
		if !ready || len(cands) >= spreadMax {
			continue
		}
		switch v := ti.claim.value; {
		case v == "":
			cands = append(cands, candidate{ti, ""})
		case ti.untrusted:
			cands = append(cands, candidate{ti, "its result (run " + ti.claim.run + ") " + ti.distrust + "; done again"})
		default:
			if why := w.stale(ctx, t.ID, v, now); why != "" {
				cands = append(cands, candidate{ti, why})
			}
		}
	}
	if len(cands) == 0 {
		return nil, "", waiting
	}
	c := cands[spread(w.o.ID, len(cands), held, func(i int) string { return cands[i].ti.t.ID })]
	return c.ti, c.took, waiting
}

// spreadMin and spreadMax bound how many of the tasks a worker may claim,
// in plan order, it chooses among: twice as many as there are tasks being
// done (about as many as there are workers), at least spreadMin.
const spreadMin, spreadMax = 16, 256

// spread is the index, among the first of n tasks (id(i) names the i-th),
// that worker ranks first (rendezvous hashing: each worker ranks the tasks
// its own way, so two rarely rank the same one first, and a task's rank
// does not change when others are claimed). held is how many tasks are
// being done now.
func spread(worker string, n, held int, id func(int) string) int {
	n = min(n, max(spreadMin, 2*held))
	best, bestScore := 0, uint64(0)
	for i := range n {
		h := fnv.New64a()
		h.Write([]byte(worker))
		h.Write([]byte{0})
		h.Write([]byte(id(i)))
		if s := h.Sum64(); i == 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// stale says why the claim of task id, holding v, is taken over ("" while
// its worker may be alive): it was seen unchanged for the lease period its
// lease names.
func (w *worker) stale(ctx context.Context, id, v string, now time.Time) string {
	s, ok := w.seen[id]
	if !ok || s.value != v {
		w.seen[id] = seenClaim{value: v, since: now}
		return ""
	}
	unchanged := now.Sub(s.since)
	if unchanged < min(w.lease, leaseCheckAfter) {
		return ""
	}
	// The holder's lease period, as its lease says: a worker started
	// with a longer --lease renews less often.
	if !s.checked {
		p, moved, err := travel.LeasePeriod(ctx, w.o.Root, w.remote, travel.ClaimRef(w.key, id), v)
		if err != nil || moved {
			return "" // look again
		}
		s.period, s.checked = p, true
		w.seen[id] = s
	}
	period := w.lease
	if s.period > 0 {
		period = s.period
	}
	if unchanged < period {
		return ""
	}
	// How long this worker saw it unchanged, which may be longer than
	// the lease (a watcher with a longer lease of its own, a look that
	// came late), and the lease it outlasted; to a tenth of a second, as
	// implloop's progress lines give durations.
	return fmt.Sprintf("its claim was unchanged for %s, past its worker's lease (%s): its worker stopped", unchanged.Round(100*time.Millisecond), period)
}

// waitingWhy says what the worker waits for.
func (w *worker) waitingWhy(info map[string]*taskInfo) string {
	var running, blocked []string
	for _, t := range w.sel.Tasks {
		ti := info[t.ID]
		if ti.settled || w.left[t.ID] != "" {
			continue
		}
		if ti.claim.value != "" {
			running = append(running, t.ID)
		} else if ok, _, never := w.readiness(t, info); !ok && !never {
			blocked = append(blocked, t.ID)
		}
	}
	msg := ""
	if len(running) > 0 {
		msg = "running elsewhere: " + strings.Join(running, ", ")
	}
	if len(blocked) > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += "waiting for their dependencies: " + strings.Join(blocked, ", ")
	}
	return msg
}

// finish fills the summary's settled tasks.
func (w *worker) finish(info map[string]*taskInfo) {
	for _, t := range w.sel.Tasks {
		ti := info[t.ID]
		switch {
		case w.skips(t):
		case w.left[t.ID] != "":
			w.sum.Left = append(w.sum.Left, t.ID)
			w.why(t.ID, w.left[t.ID])
		case ti.distrust != "":
			// Done again here once already, and still not a result to
			// build on: the fan-in runs it live.
			w.sum.Untrusted = append(w.sum.Untrusted, t.ID)
			w.why(t.ID, "its result (run "+ti.claim.run+") "+ti.distrust)
		case ti.result != nil && ti.result.Status == cache.TaskBlocked:
			w.sum.Blocked = append(w.sum.Blocked, t.ID)
		case ti.result != nil && ti.result.Status != cache.TaskDone && ti.result.Trust.Trusted:
			// Its run stopped before the task ended (a cap, a usage
			// limit past --max-wait): the fan-in replays its attempts
			// and goes on live.
			w.sum.Left = append(w.sum.Left, t.ID)
			w.why(t.ID, "its run "+ti.claim.run+" stopped before it ended ("+string(ti.result.Status)+")")
		case ti.claim.run == "":
			w.sum.Unreachable = append(w.sum.Unreachable, t.ID)
			if _, why, _ := w.readiness(t, info); why != "" {
				w.why(t.ID, why)
			}
		}
	}
	w.log(Event{Type: "done", Message: fmt.Sprintf("nothing left to take: %d task(s) run here", len(w.sum.Tasks))})
}

func (w *worker) why(task, why string) {
	if w.sum.Why == nil {
		w.sum.Why = map[string]string{}
	}
	w.sum.Why[task] = why
}

// do claims task ti and, when the claim holds, runs and pushes it.
func (w *worker) do(ctx context.Context, ti *taskInfo, took string, info map[string]*taskInfo) error {
	t := ti.t
	input, arts, why, err := w.input(ctx, t, info)
	if err != nil {
		return err
	}
	if why != "" {
		w.left[t.ID] = why
		w.log(Event{Type: "skipped", Task: t.ID, Message: why + ": left to the fan-in, which runs it live"})
		return nil
	}
	ref := travel.ClaimRef(w.key, t.ID)
	lease, err := w.newLease(ctx, t.ID)
	if err != nil {
		return err
	}
	tr := TaskRun{Task: t.ID, TookOver: took != "" && !ti.untrusted}
	if ti.untrusted {
		tr.Redone = "its result (run " + ti.claim.run + ") " + ti.distrust
	}
	// The claim's push goes on beside the start of the task's run (its
	// checkout, journal and first boundary); no agent is called before it
	// won (claim.wait).
	c := w.claim(ctx, ref, lease, ti.claim.value, func() {
		delete(w.seen, t.ID)
		if ti.untrusted {
			w.redone[t.ID] = true
		}
		if took != "" {
			w.log(Event{Type: "took_over", Task: t.ID, Message: took})
		} else {
			w.log(Event{Type: "claimed", Task: t.ID})
		}
	})
	defer func() {
		if tr.Run != "" { // a run was made
			w.sum.Tasks = append(w.sum.Tasks, tr)
		}
	}()
	return w.run(ctx, t, c, input, arts, &tr)
}

// claiming is a claim's compare-and-swap push, made in the background
// (worker.claim).
type claiming struct {
	ref, lease string
	done       chan struct{}
	won        bool  // the claim holds lease (read after done)
	err        error // the push failed, other than to another worker's claim
	onWin      func()
	once       sync.Once
}

// claim pushes the claim ref from old (its value when looked at; "":
// none) to lease, in the background; onWin is called once, by wait, when
// it won.
func (w *worker) claim(ctx context.Context, ref, lease, old string, onWin func()) *claiming {
	c := &claiming{ref: ref, lease: lease, done: make(chan struct{}), onWin: onWin}
	go func() {
		defer close(c.done)
		err := travel.CASPushAs(ctx, &w.signing, w.o.Root, w.remote, travel.RefUpdate{Ref: ref, New: lease, Old: old})
		switch {
		case err == nil:
			c.won = true
		case errors.Is(err, travel.ErrCASFailed):
			// Another worker was first: look again.
		default:
			if ctx.Err() != nil {
				// Cut off (Ctrl-C): the server may have taken it all
				// the same. Given up if so (only while it holds this
				// lease), rather than left to nobody for a whole lease.
				_ = w.release(ctx, ref, lease)
			}
			c.err = err
		}
	}()
	return c
}

// wait waits for the claim's push: won, or the push's error (neither:
// another worker was first).
func (c *claiming) wait() (won bool, err error) {
	<-c.done
	if c.won {
		c.once.Do(c.onWin)
	}
	return c.won, c.err
}

// run runs task t, whose claim c is being pushed, from its input tree,
// renewing the lease meanwhile once the claim won, and pushes its result;
// tr is what the summary says of it.
func (w *worker) run(ctx context.Context, t extractor.Task, c *claiming, input string, arts map[string]string, tr *TaskRun) error {
	ref := c.ref
	commit, err := w.inputCommit(ctx, t, input)
	if err == nil {
		err = w.checkout(ctx, commit)
	}
	if err != nil {
		if won, _ := c.wait(); won {
			_ = w.release(ctx, ref, c.lease)
		}
		return err
	}
	// The lease is renewed from when the claim won, while the task runs
	// (and while its result's push is under way); losing it stops the
	// task, whose result is then not pushed.
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &renewal{w: w, ref: ref, task: t.ID, value: c.lease, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		<-c.done
		if !c.won {
			close(r.done) // nothing to renew: r.end returns at once
			return
		}
		r.loop(ctx, cancel)
	}()
	// The run's events and notifications wait for the claim: a run that
	// lost it to another worker (its agent never called) is not shown.
	obs := &heldEvents{next: w.o.Observer}
	// No agent is called before the claim won, nor while the last
	// result's push is known to be refused: the run starts beside both
	// pushes (its journal, B0). Its first call waits for the claim; until
	// a result of this worker's landed, also for the last push's first
	// try, and from then on not for a push under way (it goes on behind
	// the agent; one that fails for good stops the worker once this task
	// ended, its result pushed too if the remote takes it). When a try
	// failed already, the call waits for the whole push, and when that
	// fails for good, the run is interrupted there and this claim given
	// up, no agent called.
	var pushErr error
	lostEarly := false
	var bp *behindPull
	defer func() { w.joinBehind(bp) }()
	beforeLive := func(context.Context) error {
		switch won, err := c.wait(); {
		case err != nil:
			return err
		case !won:
			return errLostRace
		}
		obs.release(true)
		if p := w.pending; p != nil {
			<-p.checked
			if !w.landed.Load() {
				<-p.tried
			}
			if p.failed.Load() {
				if pushErr = w.awaitPush(); pushErr != nil {
					return pushErr
				}
			}
		}
		if r.isLost() {
			lostEarly = true
			return errLostEarly
		}
		bp = w.pullBehind(ctx)
		return nil
	}
	var observer loop.Observer
	if w.o.Observer != nil {
		observer = obs
	}
	out, runErr := loop.Run(tctx, loop.Options{
		Settings: w.o.Settings, RepoRoot: w.wt, Task: t.ID, Artifacts: arts, Observer: observer,
		Agent: w.o.Agent, Heartbeat: w.o.Heartbeat, Now: w.o.Now, NoHTMLReport: true, DeferRecords: true, Known: w.known,
		BeforeLive: beforeLive, Notify: obs.notify,
	})
	// A run that called no agent (a replay of this clone's journal) did
	// not wait for the claim: it does now.
	won, cerr := c.wait()
	obs.release(won)
	switch {
	case cerr != nil:
		return cerr
	case !won:
		return nil // another worker was first: look again
	case pushErr != nil:
		r.end()
		_ = w.release(ctx, ref, r.current())
		return pushErr
	case lostEarly:
		r.end()
		w.log(Event{Type: "lost", Task: t.ID, Message: "its lease was taken over before its agent was called"})
		return nil
	}
	// What the run's live calls spent counts against the worker's caps,
	// pushed or not: a lost lease does not refund the attempts made.
	if out != nil {
		tr.Run, tr.Verdict = out.RunID, out.Verdict
	}
	if out != nil && out.Report != nil {
		l := out.Report.Totals.Live
		w.sum.CostUSD += l.CostUSD
		w.sum.Tokens += l.TokensIn + l.TokensOut + l.CacheRead + l.CacheWrite
	}
	if ctx.Err() != nil {
		r.end()
		w.release(ctx, ref, r.current())
		return ctx.Err()
	}
	if r.isLost() {
		r.end()
		w.log(Event{Type: "lost", Task: t.ID, Message: "its lease was taken over: the task stopped, its result is not pushed"})
		return nil
	}
	if runErr != nil {
		r.end()
		w.release(ctx, ref, r.current())
		return fmt.Errorf("task %s: %w", t.ID, runErr)
	}
	if out.Interrupted {
		r.end()
		return context.Canceled
	}
	w.log(Event{Type: "finished", Task: t.ID, Run: out.RunID, Verdict: out.Verdict})
	// The result goes in the background while the worker looks for its
	// next task, claims it and runs it: one push at a time, the one
	// before waited for first (a result refused for good stops the
	// worker, after this one's push).
	prev := w.awaitPush()
	w.pushLater(ctx, t.ID, ref, out.RunID, out.Verdict, r)
	if prev != nil {
		return errors.Join(prev, w.awaitPush())
	}
	return nil
}

// signingChanged says, once a task's run ended, which keys of git's
// signing configuration changed since the worker started and since it
// last said so (a concern): the task's agent most likely changed them,
// and the worker goes on signing, naming and verifying as it started
// (travel.Signing). A configuration it cannot read says nothing: the
// push that follows says why.
func (w *worker) signingChanged(ctx context.Context, task, run string) {
	changed, err := w.signing.ConfigChanged(ctx, w.o.Root)
	if err != nil {
		return
	}
	said := strings.Join(changed, ", ")
	if said == w.configSaid {
		return
	}
	w.configSaid = said
	if said == "" {
		return // back as it was
	}
	w.log(Event{Type: "concern", Task: task, Run: run, Message: "task " + task + ": git's signing configuration changed since this worker started (" + said +
		"), its agent most likely: the worker goes on signing, naming and verifying results as it started; restart it to take up a change of your own"})
}

// pendingPush is a task's result being pushed in the background.
type pendingPush struct {
	run   string
	done  chan struct{}
	tried chan struct{} // closed when its first try ended
	// checked is closed once the signing configuration was read after
	// its task (signingChanged): the next task's agent waits for it, so
	// that a change is said of the task whose agent made it.
	checked chan struct{}
	failed  atomic.Bool // a try failed
	pushed  bool        // it landed (read after done)
	err     error       // refused for good (a *PushError), or the context's
}

// pushLater pushes run, the result of task, in the background: the
// renewals of its lease (r) go on until the push landed or failed for
// good. awaitPush waits for it.
func (w *worker) pushLater(ctx context.Context, task, ref, run, verdict string, r *renewal) {
	p := &pendingPush{run: run, done: make(chan struct{}), tried: make(chan struct{}), checked: make(chan struct{})}
	w.pending = p
	go func() {
		defer close(p.done)
		// What the task's agent changed of git's signing configuration,
		// read before the next task's agent is called (which waits for
		// it: p.checked), off the way of the next claim and run start.
		w.signingChanged(ctx, task, run)
		close(p.checked)
		// At the worker's own priority, never a lower one (unlike a pull
		// behind an agent): each try holds the lease (r.op), so that no
		// renewal runs until it ends, and a try starved by busier
		// processes on a loaded machine outlasted the lease and lost the
		// task to a takeover (priority inversion).
		pushed, err := w.push(ctx, task, ref, run, r, p)
		r.end()
		switch {
		case err != nil && ctx.Err() != nil:
			_ = w.release(ctx, ref, r.current())
			p.err = ctx.Err()
		case err != nil:
			// Refused for good: the claim is given up, so that another
			// worker takes the task at once rather than after the lease.
			released := w.release(ctx, ref, r.current()) == nil
			p.err = &PushError{Task: task, Run: run, Released: released, Err: err}
		case !pushed:
			w.log(Event{Type: "lost", Task: task, Run: run, Message: "its lease was taken over before the push: its result is not pushed"})
		default:
			p.pushed = true
			w.landed.Store(true)
			w.log(Event{Type: "pushed", Task: task, Run: run, Verdict: verdict})
		}
	}()
}

// awaitPush waits for the result being pushed in the background, if
// any, and says in the summary that it landed; its error is the push's.
func (w *worker) awaitPush() error {
	p := w.pending
	if p == nil {
		return nil
	}
	<-p.done
	w.pending = nil
	if p.pushed {
		for i := range w.sum.Tasks {
			if w.sum.Tasks[i].Run == p.run {
				w.sum.Tasks[i].Pushed = true
			}
		}
	}
	return p.err
}

// sealWindow is how many runs a worker's seal names at most (its run
// and the last ones it pushed): a pull of a worker's k runs verifies
// about k/sealWindow seals, and the seals on the remote grow with k, not
// with k squared.
const sealWindow = 32

type sealedRun struct{ run, records string }

// sealNext is what the next push seals again, once r was pushed after
// those of last: the newest sealWindow-1 of them.
func sealNext(last []sealedRun, r sealedRun) []sealedRun {
	next := append(last, r)
	return next[max(0, len(next)-(sealWindow-1)):]
}

// pushTries is how many times a worker tries to push a result while the
// claim still holds its lease.
const pushTries = 4

// push pushes run, the result of task, with the claim ref moved from
// the lease to the run's records, in one atomic push; pushed is false
// when the claim no longer holds the lease (taken over). A push that
// fails while the claim still holds the lease (the network, the server,
// a ref lock the server could not take) is tried again, after 1 s, 2 s,
// 4 s: the result is paid for, and without it another worker would do
// the task again after the lease. The lease is renewed meanwhile (r):
// each try pushes from the lease the claim holds then, never while a
// renewal is under way.
func (w *worker) push(ctx context.Context, task, ref, run string, r *renewal, p *pendingPush) (pushed bool, err error) {
	for try := 1; ; try++ {
		var retry bool
		pushed, retry, err = w.pushOnce(ctx, ref, run, r)
		if retry || err != nil {
			p.failed.Store(true)
		}
		if try == 1 {
			close(p.tried)
		}
		if !retry {
			return pushed, err
		}
		if try == pushTries || ctx.Err() != nil {
			return false, err
		}
		wait := time.Second << (try - 1)
		w.log(Event{Type: "push_failed", Task: task, Run: run, Message: fmt.Sprintf("%v; trying again in %s", err, wait)})
		if err := sleep(ctx, wait); err != nil {
			return false, err
		}
	}
}

// pushOnce is one try of push: retry when it failed while the claim may
// still hold the lease.
func (w *worker) pushOnce(ctx context.Context, ref, run string, r *renewal) (pushed, retry bool, err error) {
	r.op.Lock()
	defer r.op.Unlock()
	if r.isLost() {
		return false, false, nil
	}
	lease := r.current()
	sealed := map[string]string{}
	for _, s := range w.sealed {
		sealed[s.run] = s.records
	}
	res, err := travel.Push(ctx, w.j, travel.PushOptions{Remote: w.remote, Runs: []string{run}, New: true, Sealed: sealed,
		Signing: &w.signing, With: []travel.RefUpdate{{Ref: ref, Records: run, Old: lease}}})
	if err == nil {
		r.landed = true
		if slices.Contains(res.Signed, run) {
			w.sealed = sealNext(w.sealed, sealedRun{run, res.Records[run]})
		}
		return true, false, nil
	}
	refs, lerr := w.refs.Refs(ctx, ref)
	if lerr == nil {
		switch v := refs[ref]; v {
		case lease: // still this worker's: try again
		case "":
			return false, false, nil
		default:
			if rec, rerr := gitOut(ctx, w.o.Root, "rev-parse", "-q", "--verify", travel.RecordsRef(run)+"^{commit}"); rerr == nil && rec == v {
				r.landed = true
				return true, false, nil // the push went through, its answer did not
			}
			return false, false, nil
		}
	}
	return false, true, err
}

// input is task t's input tree and its dependencies' artifacts; why is
// set when no worker can build it (its dependencies' results conflict).
func (w *worker) input(ctx context.Context, t extractor.Task, info map[string]*taskInfo) (tree string, arts map[string]string, why string, err error) {
	var results []string
	arts = map[string]string{}
	for _, d := range w.deps[t.ID] {
		r := info[d].result
		results = append(results, r.To.Tree)
		if r.Artifact != "" {
			arts[d] = r.Artifact
		}
	}
	// Declared dependencies outside the input (checked in the plan) have
	// no artifact, as in a serial run of the plan.
	tree, conflicts, err := loop.InputTree(ctx, w.o.Root, w.tree, results)
	if err != nil {
		return "", nil, "", err
	}
	if len(conflicts) > 0 {
		return "", nil, "the results of the tasks it waits for conflict in " + strings.Join(conflicts, ", "), nil
	}
	return tree, arts, "", nil
}

// inputCommit is a commit of the input tree on the base commit (the base
// itself when the task waits for nothing).
func (w *worker) inputCommit(ctx context.Context, t extractor.Task, tree string) (string, error) {
	if tree == w.tree {
		return w.base, nil
	}
	// The input tree with the plan, and the rest of what boundaries leave
	// out, as the base commit has them.
	m, err := boundary.MergeTrees(ctx, w.o.Root, w.tree, w.headTree, tree)
	if err != nil {
		return "", err
	}
	if len(m.Conflicts) > 0 {
		return "", fmt.Errorf("task %s: its input tree changes %s, which workers read from the base commit", t.ID, strings.Join(m.Conflicts, ", "))
	}
	us := gitobj.Ident{Name: "implloop", Email: "implloop@localhost"}
	c, err := travel.Objects(w.dirs()).Commit(ctx, gitobj.Commit{Tree: m.Tree, Parents: []string{w.base}, Author: us, Committer: us,
		Message: "implloop: the input of task " + t.ID + "\n"})
	if err != nil {
		return "", fmt.Errorf("task %s: its input commit: %w", t.ID, err)
	}
	return c, nil
}

// checkout readies the worker's worktree at commit, and what the task's
// run would learn of it (known: once a worktree).
func (w *worker) checkout(ctx context.Context, commit string) error {
	if w.wt != "" {
		// Reused while its .git still names the git directory learned
		// (a task may have made it point elsewhere).
		if w.known != nil && w.known.Repo.Current() {
			if err := boundary.ResetWorktree(ctx, w.wt, commit, ""); err == nil {
				return nil
			}
		}
		_ = boundary.RemoveWorktree(context.WithoutCancel(ctx), w.o.Root, w.wt)
		w.known = nil
	}
	w.wt = filepath.Join(w.j.Dirs().State, "workers", safeName(w.o.ID))
	if _, err := os.Stat(w.wt); err == nil {
		_ = boundary.RemoveWorktree(context.WithoutCancel(ctx), w.o.Root, w.wt) // a killed worker's
		_ = os.RemoveAll(w.wt)
	}
	if err := boundary.AddWorktree(ctx, w.o.Root, w.wt, commit); err != nil {
		return err
	}
	var err error
	w.known, err = loop.Relearn(ctx, w.wt, w.first)
	if err == nil && w.first == nil {
		w.first = w.known
	}
	return err
}

func (w *worker) removeWorktree() {
	if w.wt != "" {
		_ = boundary.RemoveWorktree(context.Background(), w.o.Root, w.wt)
	}
}

// release gives a claim up (a worker interrupted, or a task it could not
// run): deleted, only while it still holds lease (this worker's), so that
// another worker takes the task at once instead of after the lease.
// Best effort: a claim left behind is taken over after the lease.
func (w *worker) release(ctx context.Context, ref, lease string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return travel.CASPushAs(ctx, &w.signing, w.o.Root, w.remote, travel.RefUpdate{Ref: ref, New: "", Old: lease})
}

// PushError is a task's result the remote would not take, after every
// try: its run is in the clone's journal (a worker started there again
// replays it, with no agent call); Released says whether its claim was
// given up (else it is taken over after the lease).
type PushError struct {
	Task, Run string
	Released  bool
	Err       error
}

func (e *PushError) Error() string {
	return fmt.Sprintf("task %s: its result (run %s) could not be pushed: %v", e.Task, e.Run, e.Err)
}

func (e *PushError) Unwrap() error { return e.Err }

func (w *worker) newLease(ctx context.Context, task string) (string, error) {
	w.leaseMu.Lock()
	defer w.leaseMu.Unlock()
	w.leases++
	if w.emptyTree == "" {
		t, err := travel.EmptyTree(ctx, w.dirs())
		if err != nil {
			return "", err
		}
		w.emptyTree = t
	}
	return travel.NewLease(ctx, w.dirs(), w.emptyTree, w.key, task, w.o.ID, w.leases, w.now(), w.lease)
}

// dirs are the repository's directories as the journal knows them (so
// that a lease is written without asking git where they are).
func (w *worker) dirs() cache.Dirs {
	if w.j != nil {
		return w.j.Dirs()
	}
	return cache.Dirs{Root: w.o.Root}
}

// renewal keeps a claim's lease while its task runs, and until its
// result's push landed.
type renewal struct {
	w    *worker
	ref  string
	task string
	// op is held by a renewal under way, and by each try of the result's
	// push: the push moves the claim from the lease it holds then.
	op     sync.Mutex
	landed bool // the result's push landed: no more renewals (under op)
	mu     sync.Mutex
	value  string // the lease the remote holds
	lost   bool
	stop   chan struct{}
	done   chan struct{}
	ended  sync.Once
}

func (r *renewal) isLost() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

func (r *renewal) current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value
}

// loop renews the lease every third of a lease period until end; cancel
// stops the task when the lease is lost (taken over), or when no renewal
// got through for a lease period (another may have taken it over). A
// renewal starts a third of a period after the last one started, not
// after it ended: on a loaded machine, where a push takes a second or
// more, the claim still moves every third of a period (or as often as a
// push gets through), never a push's time later each round.
func (r *renewal) loop(ctx context.Context, cancel func()) {
	defer close(r.done)
	every := r.w.lease / 3
	last := r.w.now()
	next := time.Now().Add(every)
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-r.stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		next = time.Now().Add(every)
		r.op.Lock()
		if r.landed {
			r.op.Unlock()
			return
		}
		renewed, taken := r.renew(ctx)
		r.op.Unlock()
		if renewed {
			last = r.w.now()
			continue
		}
		if taken || r.w.now().Sub(last) >= r.w.lease {
			r.mu.Lock()
			r.lost = true
			r.mu.Unlock()
			cancel()
			return
		}
	}
}

// renew moves the claim to a new lease. taken: the claim holds neither
// the lease this worker holds nor the new one (another worker took it
// over). A push refused or cut off while the claim still holds the old
// lease (a ref lock the server could not take, the network) is neither:
// the next renewal tries again, until a whole lease passed.
func (r *renewal) renew(ctx context.Context) (renewed, taken bool) {
	lease, err := r.w.newLease(ctx, r.task)
	if err != nil {
		return false, false
	}
	r.mu.Lock()
	old := r.value
	r.mu.Unlock()
	err = travel.CASPushAs(ctx, &r.w.signing, r.w.o.Root, r.w.remote, travel.RefUpdate{Ref: r.ref, New: lease, Old: old})
	if err != nil {
		refs, lerr := r.w.refs.Refs(ctx, r.ref)
		if lerr != nil {
			return false, false
		}
		switch refs[r.ref] {
		case old:
			return false, false
		case lease: // it went through; its answer did not
		default:
			return false, true
		}
	}
	r.mu.Lock()
	r.value = lease
	r.mu.Unlock()
	return true, false
}

// end stops the renewals and says whether the lease was lost.
func (r *renewal) end() bool {
	r.ended.Do(func() { close(r.stop) })
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	out, _, err := gitcmd.Run(ctx, gitcmd.Options{Dir: dir}, args...)
	return strings.TrimSpace(string(out)), err
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// safeName is a worker id as a directory name.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
}

// heldEvents holds a run's events and notifications (--notify) until its
// claim is known: passed on, in their order, once it won (release(true)),
// dropped when another worker was first.
type heldEvents struct {
	next loop.Observer // nil: events are not shown (notifications still go)
	mu   sync.Mutex
	held []heldEvent
	done bool // released: passed on (open) or dropped
	open bool
}

// heldEvent is an event, or a notification of one (send set).
type heldEvent struct {
	ev   loop.Event
	send func() error
}

// Event holds e, or passes it on once released.
func (h *heldEvents) Event(e loop.Event) { h.add(heldEvent{ev: e}) }

// notify holds the notification of ev (loop.Options.Notify), or sends it
// once released.
func (h *heldEvents) notify(ev loop.Event, send func() error) {
	h.add(heldEvent{ev: ev, send: send})
}

func (h *heldEvents) add(e heldEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.done:
		h.held = append(h.held, e)
	case h.open:
		h.pass(e)
	}
}

// pass shows e, or sends its notification (a warning shown when that
// failed, as a run says it).
func (h *heldEvents) pass(e heldEvent) {
	if e.send == nil {
		if h.next != nil {
			h.next.Event(e.ev)
		}
		return
	}
	if err := e.send(); err != nil && h.next != nil {
		h.next.Event(loop.Event{Type: loop.EvWarning, Time: time.Now().UTC(), RunID: e.ev.RunID, Message: err.Error()})
	}
}

// release passes what it held on (keep), or drops it; once.
func (h *heldEvents) release(keep bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.done, h.open = true, keep
	if keep {
		for _, e := range h.held {
			h.pass(e)
		}
	}
	h.held = nil
}
