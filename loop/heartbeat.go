package loop

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/implloop/implloop/extractor"
)

// A heartbeat: while an agent call, a gate or a wait for a limit lasts,
// an event every Options.Heartbeat (the --heartbeat of a run whose
// stderr is not a terminal), so that a CI log is never silent for
// twenty minutes: the task, how long it has been at it, and the tokens
// so far when the agent streams them. Heartbeats go to the observer
// only: they are not journaled.

// tokensSoFar are a running call's tokens so far, as its agent streams
// them (agent.Request.OnTokens, from another goroutine).
type tokensSoFar struct {
	in, out atomic.Int64
	seen    atomic.Bool
}

func (c *tokensSoFar) set(in, out int64) {
	c.in.Store(in)
	c.out.Store(out)
	c.seen.Store(true)
}

// beat starts the heartbeat of task t's attempt while what lasts (an
// agent call whose tokens so far are tokens, a gate, a wait until
// until), and returns what stops it. A no-op without Options.Heartbeat.
func (e *engine) beat(ctx context.Context, t extractor.Task, attempt int, what string, tokens *tokensSoFar, until time.Time) (stop func()) {
	every := e.o.Heartbeat
	if every <= 0 {
		return func() {}
	}
	start := e.now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tk.C:
				now := e.now()
				ev := Event{Type: EvHeartbeat, Time: now.UTC(), RunID: e.runID, Task: t.ID, Title: t.Title, Attempt: attempt,
					Millis: now.Sub(start).Milliseconds(), Message: what}
				if tokens != nil && tokens.seen.Load() {
					ev.TokensIn, ev.TokensOut = tokens.in.Load(), tokens.out.Load()
				}
				if !until.IsZero() {
					ev.Until = until.UTC()
				}
				e.obs.Event(ev)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
