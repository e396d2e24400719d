package report

import (
	"sort"
	"time"

	"github.com/implloop/implloop/cache"
)

// attempts groups a run's units and gates by (task, attempt): one bar of
// the timeline each, in the order they started. An attempt spans its
// units and its gate; a gate with no unit (a blocked task's gate re-run
// at a resume) spans the gate alone.
func attempts(units []cache.Unit, gates []cache.Gate) []Attempt {
	type key struct {
		task    string
		attempt int
	}
	var out []Attempt
	at := map[key]int{}
	get := func(k key) *Attempt {
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Attempt{Task: k.task, Attempt: k.attempt, Source: string(cache.SourceReplayed)})
		}
		return &out[i]
	}
	span := func(a *Attempt, from, to time.Time) {
		if !from.IsZero() && (a.Start.IsZero() || from.Before(a.Start)) {
			a.Start = from
		}
		if to.IsZero() {
			to = from
		}
		if to.After(a.End) {
			a.End = to
		}
	}
	for i := range units {
		u := &units[i]
		a := get(key{u.TaskID, u.Attempt})
		if u.Replayed() {
			a.Saved.add(u)
		} else {
			a.Live.add(u)
			a.Source = string(cache.SourceLive)
		}
		span(a, u.StartedAt, u.FinishedAt)
		if a.callStart.IsZero() || u.StartedAt.Before(a.callStart) {
			a.callStart = u.StartedAt
		}
		if u.FinishedAt.After(a.callEnd) {
			a.callEnd = u.FinishedAt
		}
	}
	for _, g := range gates {
		a := get(key{g.TaskID, g.Attempt})
		if g.Command == cache.AgentFailed {
			a.AgentError = g.Feedback
			continue
		}
		if !g.Replayed && a.Live.Units+a.Saved.Units == 0 {
			a.Source = string(cache.SourceLive) // a gate re-run alone
		}
		a.Gate = &GateMark{Command: g.Command, Passed: g.Passed, Replayed: g.Replayed, ExitCode: g.ExitCode,
			DurationMS: g.Duration.Milliseconds(), At: g.At}
		if g.Replayed {
			span(a, g.At, g.At) // its duration was spent in the run it replays
		} else {
			span(a, g.At.Add(-g.Duration), g.At)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	assignLanes(out)
	return out
}

// assignLanes gives each attempt the first lane free when its agent calls
// start (the attempts in start order): one lane while tasks run one at a
// time, one per worker when a wave's calls run at once (--jobs). Only the
// calls count: gates always run one at a time, after them.
func assignLanes(as []Attempt) {
	var ends []time.Time // per lane, when the calls of its last attempt ended
	for i := range as {
		from, to := as[i].callStart, as[i].callEnd
		if from.IsZero() { // a gate alone
			from, to = as[i].Start, as[i].Start
		}
		lane := -1
		for l, end := range ends {
			if !from.Before(end) {
				lane = l
				break
			}
		}
		if lane < 0 {
			lane = len(ends)
			ends = append(ends, time.Time{})
		}
		as[i].Lane, ends[lane] = lane, to
	}
}
