package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/settings"
	"github.com/implloop/implloop/unit"
)

// Usage limits are not failures.
//
// A call that ends on a usage limit, a rate limit or an overload
// (agent.Limit: each backend reads its CLI's own signals, an exec agent
// exits 75) is called again: by the next agent of the chain that is not
// limited itself (the run's agent with each model of its --model list,
// then each --fallback-agent), or, when every one is, by the one whose
// limit lifts first, once it has (the reset time the agent said, else a
// backoff from a minute, doubling, capped at an hour). The call keeps its
// unit: a wait is never an attempt, and never part of an identity. A
// fallback's call has its own identity (its agent and model are in the
// preimage), so the unit's row takes it when the fallback takes the call.
//
// The waits of a run add up to at most --max-wait: a wait that would go
// past it stops the run there instead, PARTIAL, with BLOCKED.md saying
// when the limit lifts and how to resume.

// Backoff of a limit that did not say when it lifts.
const (
	limitBackoff    = time.Minute
	limitBackoffCap = time.Hour
)

// member is one agent (and model) that may take a call.
type member struct {
	agent string // backend name, as it enters the identity
	model string // "" the agent's default
	ag    agent.Agent
	// primary is the run's own agent (its exec command line joins the
	// identity; a fallback preset has none).
	primary bool
	until   time.Time // limited until then; zero: free
	backoff int       // limits in a row with no reset said
}

func (m *member) String() string {
	if m.model == "" {
		return m.agent
	}
	return m.agent + " (" + m.model + ")"
}

// members is the chain of agents that take a call, as names: the run's
// agent with each of its models, then the fallbacks. Planning (a resume
// plan, a dry run) needs no more; startChain makes their backends.
func (e *engine) members() []*member {
	if e.chain != nil {
		return e.chain
	}
	var out []*member
	for _, m := range e.s.Models() {
		out = append(out, &member{agent: e.agentName(), model: m, primary: true})
	}
	for _, f := range e.s.Fallbacks {
		name, model := settings.Fallback(f)
		out = append(out, &member{agent: name, model: model})
	}
	return out
}

// startChain makes the chain's backends (the run's own, e.ag, with each
// of its models) and checks the fallbacks can run.
func (e *engine) startChain() error {
	e.chain = nil
	chain := e.members()
	for _, m := range chain {
		if m.primary {
			m.agent, m.ag = e.ag.Name(), e.ag
			continue
		}
		ag := e.o.Fallbacks[m.agent]
		if ag == nil {
			var err error
			if ag, err = agent.New(m.agent, agent.Options{}); err != nil {
				return err
			}
		}
		if err := ag.Check(); err != nil {
			return fmt.Errorf("--fallback-agent %s: %w", m.agent, err)
		}
		m.agent, m.ag = ag.Name(), ag
	}
	e.chain = chain
	return nil
}

// findDone is the completed unit of the lineage that stands for u: u's
// own identity, else u as another agent or model of the chain made it (a
// fallback took the call), in the chain's order. Its identity is the
// artifact the task's dependents build on.
func (e *engine) findDone(t extractor.Task, facts unit.Facts, u unit.Unit) (*cache.Unit, bool, error) {
	h, ok, err := e.lineage.findCompleted(u.Identity)
	chain := e.members()
	if ok || err != nil || len(chain) < 2 {
		return h, ok, err
	}
	for _, m := range chain[1:] {
		v, err := e.unitFor(t, m, facts, u)
		if err != nil {
			return nil, false, err
		}
		if h, ok, err := e.lineage.findCompleted(v.Identity); ok || err != nil {
			return h, ok, err
		}
	}
	return nil, false, nil
}

// identitiesOf are the identities unit u (of attempt facts) of task t
// has as each member of the chain would make it: u's own first, then the
// fallbacks', in the chain's order (findDone's candidates).
func (e *engine) identitiesOf(t extractor.Task, facts unit.Facts, u unit.Unit) ([]string, error) {
	ids := []string{u.Identity}
	chain := e.members()
	for i := 1; i < len(chain); i++ {
		v, err := e.unitFor(t, chain[i], facts, u)
		if err != nil {
			return nil, err
		}
		ids = append(ids, v.Identity)
	}
	return ids, nil
}

// unitParamsFor are the run parameters of task t's units as chain member
// m makes them: the run's own, with m's agent and model.
func (e *engine) unitParamsFor(t extractor.Task, m *member) unit.Params {
	p := e.unitParams(t)
	p.Agent, p.Model = m.agent, m.model
	if !m.primary {
		p.AgentCmd = nil
	}
	return p
}

// unitFor is unit u (of attempt facts) as chain member m would make it:
// the same prompt, its own identity.
func (e *engine) unitFor(t extractor.Task, m *member, facts unit.Facts, u unit.Unit) (unit.Unit, error) {
	units, err := unit.WorkList(t, e.unitParamsFor(t, m), facts)
	if err != nil {
		return u, err
	}
	for _, v := range units {
		if v.ID == u.ID {
			return v, nil
		}
	}
	return u, fmt.Errorf("loop: unit %s has no twin for %s", u.ID, m)
}

// errLimitStop ends the run where a limit would have it wait past
// --max-wait (or at all, with --max-wait 0).
type errLimitStop struct {
	stop *runStop
}

func (e *errLimitStop) Error() string { return "stopped: " + e.stop.why }

// afterLimit says who takes call u of task t next, now that member m
// (the one that made it) hit limit l: the first member of the chain that
// is not limited, else, after a wait, the one whose limit lifts first.
// It returns errLimitStop when that wait would go past --max-wait, and
// the context's error when the run is interrupted while it waits.
func (e *engine) afterLimit(ctx context.Context, t extractor.Task, u unit.Unit, m *member, l *agent.Limit) (*member, error) {
	now := e.now()
	d, known := limitWait(l, now, m.backoff)
	if !known {
		m.backoff++
	}
	m.until = now.Add(d)
	ev := Event{Type: EvLimit, Task: t.ID, Unit: u.ID, Attempt: u.Attempt, Agent: m.agent, Model: m.model,
		Status: l.Kind, Message: firstLine(l.Message)}
	if known {
		ev.Until = m.until.UTC()
	}
	e.emit(ev)
	if e.stopped != nil { // already stopping (--jobs settles its calls): no new wait
		return nil, &errLimitStop{stop: e.stopped}
	}
	next := e.chain[0]
	for _, c := range e.chain {
		if !c.until.After(now) {
			next = c
			break
		}
		if c.until.Before(next.until) {
			next = c
		}
	}
	if wait := next.until.Sub(now); wait > 0 {
		if e.waited+wait > time.Duration(e.s.MaxWait) {
			e.stopped = e.limitStop(t, next, l, known || next != m)
			return nil, &errLimitStop{stop: e.stopped}
		}
		what := next.String() + "'s " + limitWord(l.Kind)
		e.emit(Event{Type: EvWait, Task: t.ID, Unit: u.ID, Attempt: u.Attempt, Agent: next.agent, Model: next.model,
			Until: next.until.UTC(), Millis: wait.Milliseconds(), Message: "waiting for " + what + " to lift"})
		stopBeat := e.beat(ctx, t, u.Attempt, "waiting for "+what, nil, next.until)
		err := e.sleep(ctx, wait)
		stopBeat()
		e.waited += wait
		if err != nil {
			return nil, err
		}
	}
	if next != m {
		e.emit(Event{Type: EvFallback, Task: t.ID, Unit: u.ID, Attempt: u.Attempt, Agent: next.agent, Model: next.model,
			Message: fmt.Sprintf("%s takes the call: %s hit its %s", next, m, limitWord(l.Kind))})
	}
	return next, nil
}

// limitWait is how long limit l asks to wait from now, and whether it
// said so (else it is the backoff after n limits in a row). A time said
// to the minute ("resets 3:08pm") is waited for in two steps: to the
// start of that minute, then, if the limit is still there, to its end.
func limitWait(l *agent.Limit, now time.Time, n int) (time.Duration, bool) {
	switch {
	case l.After > 0:
		return l.After, true
	case !l.Reset.IsZero():
		margin := min(l.Resolution, time.Second)
		if d := l.Reset.Sub(now); d > 0 {
			return d + margin, true
		}
		if d := l.Reset.Add(l.Resolution).Sub(now); l.Resolution > 0 && d > 0 {
			return d + margin, true
		}
	}
	d := limitBackoff
	for i := 0; i < n && d < limitBackoffCap; i++ {
		d *= 2
	}
	return min(d, limitBackoffCap), false
}

func limitWord(kind string) string {
	switch kind {
	case "usage":
		return "usage limit"
	case "rate":
		return "rate limit"
	case "overload":
		return "overload"
	}
	return "limit (exit 75)"
}

// sleep waits d, or until ctx is done (its error then).
func (e *engine) sleep(ctx context.Context, d time.Duration) error {
	if e.o.Sleep != nil {
		return e.o.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// limitStop is why the run stops at task t: the next call would wait for
// m's limit l past --max-wait.
func (e *engine) limitStop(t extractor.Task, m *member, l *agent.Limit, known bool) *runStop {
	s := &runStop{kind: stopWait, task: t.ID, title: t.Title, limit: firstLine(l.Message), agent: m.String(), waited: e.waited,
		maxWait: time.Duration(e.s.MaxWait)}
	if known {
		s.until = m.until
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s hit its %s", m, limitWord(l.Kind))
	if known {
		fmt.Fprintf(&b, ", which lifts at %s", m.until.UTC().Format("2006-01-02 15:04:05 UTC"))
	} else {
		b.WriteString(", without saying when it lifts")
	}
	switch {
	case e.s.MaxWait == 0:
		b.WriteString("; --max-wait 0: the run does not wait")
	default:
		fmt.Fprintf(&b, "; waiting for it would go past --max-wait %s (%s waited so far)", time.Duration(e.s.MaxWait), e.waited.Round(time.Second))
	}
	s.why = b.String()
	return s
}

// isLimitStop reports whether err is a stop for a limit.
func isLimitStop(err error) bool {
	var ls *errLimitStop
	return errors.As(err, &ls)
}
