package loop

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/internal/words"
)

// Budget caps.
//
// --max-cost and --max-tokens cap what a run's live calls spend, and
// --max-task-cost what one task's do. A cap never kills a call: the call
// in flight finishes (its gate, boundary and guard too), then the run
// stops at that task boundary, PARTIAL, and BLOCKED.md names the cap,
// the spend and the command to resume with a higher one. A task that
// reached its own cap starts no further attempt; left undone, it stops
// the run there too, while done it only gets a concern. Replays never
// count: a resume starts from nothing spent, and its replays are free.
//
// What counts is what the agents reported (the refused figures of
// figures.go count as not reported): tokens are every kind of them,
// input, output and cache reads and writes, as the journal has them.

// spend is what live calls reported.
type spend struct {
	cost   float64
	tokens int64
	calls  int // live calls counted (a limited try is one)
}

func (s *spend) add(r agent.Result) {
	s.cost = addCost(s.cost, r.CostUSD)
	for _, n := range []int64{r.InputTokens, r.OutputTokens, r.CacheRead, r.CacheWrite} {
		s.tokens = addTokens(s.tokens, n)
	}
	s.calls++
}

// addCost and addTokens add non-negative figures, saturating.
func addCost(a, b float64) float64 {
	if s := a + b; !math.IsInf(s, 0) && !math.IsNaN(s) {
		return s
	}
	return math.MaxFloat64
}

func addTokens(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// stopKind is what stopped a run that none of its tasks failed.
type stopKind string

const (
	stopCost     stopKind = "max_cost"
	stopTokens   stopKind = "max_tokens"
	stopTaskCost stopKind = "max_task_cost"
	stopWait     stopKind = "max_wait"
)

// runStop is why a run stopped before its tasks were all done, though
// none of them failed: a cap reached, or a limit that would outlast
// --max-wait. BLOCKED.md explains it (writeStopped).
type runStop struct {
	kind        stopKind
	task, title string // where it stopped
	why         string // one line
	// A cap: the spend that reached it.
	spent spend
	// A wait: the limit, the agent whose limit lifts first, when (zero:
	// not said), how long the run waited already, and --max-wait.
	limit, agent    string
	until           time.Time
	waited, maxWait time.Duration
}

// count adds a live call's figures to the run's and its task's spend.
func (e *engine) count(t extractor.Task, r agent.Result) {
	e.spent.add(r)
	if e.taskSpent == nil {
		e.taskSpent = map[string]*spend{}
	}
	s := e.taskSpent[t.ID]
	if s == nil {
		s = &spend{}
		e.taskSpent[t.ID] = s
	}
	s.add(r)
}

// runCap is the run cap reached by what the run spent, nil while none
// is; task is where the run stops.
func (e *engine) runCap(t extractor.Task) *runStop {
	switch {
	case e.s.MaxCost > 0 && e.spent.cost >= e.s.MaxCost:
		return &runStop{kind: stopCost, task: t.ID, title: t.Title, spent: e.spent,
			why: fmt.Sprintf("the run's live calls spent %s, and --max-cost is %s", usd(e.spent.cost), usd(e.s.MaxCost))}
	case e.s.MaxTokens > 0 && e.spent.tokens >= e.s.MaxTokens:
		return &runStop{kind: stopTokens, task: t.ID, title: t.Title, spent: e.spent,
			why: fmt.Sprintf("the run's live calls used %s tokens (of every kind), and --max-tokens is %s", words.Thousands(e.spent.tokens), words.Thousands(e.s.MaxTokens))}
	}
	return nil
}

// taskCap is task t's cap reached by what its live calls spent, nil while
// it is not.
func (e *engine) taskCap(t extractor.Task) *runStop {
	s := e.taskSpent[t.ID]
	if e.s.MaxTaskCost <= 0 || s == nil || s.cost < e.s.MaxTaskCost {
		return nil
	}
	return &runStop{kind: stopTaskCost, task: t.ID, title: t.Title, spent: *s,
		why: fmt.Sprintf("task %s's live calls spent %s, and --max-task-cost is %s", t.ID, usd(s.cost), usd(e.s.MaxTaskCost))}
}

// capBeforeAttempt is the cap that keeps task t from starting another
// attempt: its own, else the run's.
func (e *engine) capBeforeAttempt(t extractor.Task) *runStop {
	if s := e.taskCap(t); s != nil {
		return s
	}
	return e.runCap(t)
}

func usd(v float64) string { return fmt.Sprintf("$%.4f", v) }

// resumeFlag is the flag and a value that lifts the stop: twice the cap
// (or the wait), for the command BLOCKED.md gives.
func (s *runStop) resumeFlag(set Settings) string {
	switch s.kind {
	case stopCost:
		return "--max-cost " + strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", 2*set.MaxCost), "0"), ".")
	case stopTokens:
		return fmt.Sprintf("--max-tokens %d", 2*set.MaxTokens)
	case stopTaskCost:
		return "--max-task-cost " + strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", 2*set.MaxTaskCost), "0"), ".")
	}
	return ""
}
