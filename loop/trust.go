package loop

import (
	"fmt"
	"strings"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/travel"
)

// Whose work may stand in for this machine's: the trust rule is
// travel.TrustOf (a run made here, or pulled and signed by an allowed
// signer), asked here before each of the three ways another run's work
// reaches the tree or a gate:
//
//   - a replay across runs (acrossMatch): a run that is not trusted is
//     never its source; the task runs live, and the plan, the run's
//     output and the report say which run was declined and why;
//   - a resume's lineage: a resume replays, restores and keeps the gates
//     of the runs it continues. Resume's default is a run made here
//     (cache.LatestRun); a pulled run that is not trusted enters a
//     lineage only when the user names it (`resume --run ID`), a handover
//     the run warns about, naming who pushed it (lineageWarnings);
//   - restore --run of another run's lost content (LostContent).

// trustOf is the trust rule's answer for run id, asked once per run.
func (e *engine) trustOf(id string) travel.Trust {
	if t, ok := e.trusts[id]; ok {
		return t
	}
	t := travel.Trust{Why: "its origin could not be read"}
	if e.j != nil {
		if got, err := travel.TrustOfRun(e.j, id); err == nil {
			t = got
		} else {
			t.Why += ": " + err.Error()
		}
	}
	if e.trusts == nil {
		e.trusts = map[string]travel.Trust{}
	}
	e.trusts[id] = t
	return t
}

// untrustedLineage are the runs of the resumed lineage that the trust rule
// does not trust, parent first.
func (e *engine) untrustedLineage() []string {
	var out []string
	for _, id := range e.lineage.runs {
		if !e.trustOf(id).Trusted {
			out = append(out, id)
		}
	}
	return out
}

// lineageWarnings are the warnings a resume gives for the runs of its
// lineage that are not trusted: their work is replayed, restored and
// their gates kept because the user named the run (or a run of theirs
// took it over so), and nothing vouches for it.
func (e *engine) lineageWarnings() []string {
	var out []string
	for _, id := range e.untrustedLineage() {
		t := e.trustOf(id)
		how := "you named it (resume --run)"
		if id != e.o.Parent {
			how = "a run of this lineage took it over by name"
		}
		out = append(out, fmt.Sprintf("run %s is %s: its work is replayed here because %s; nothing vouches for it (a run signed by an allowed signer would)",
			id, t.String(), how))
	}
	return out
}

// warnLineage says lineageWarnings, as warnings.
func (e *engine) warnLineage() {
	for _, w := range e.lineageWarnings() {
		e.emit(Event{Type: EvWarning, Message: w})
	}
}

// declinedNote is what a task planned or run live says of a run that did
// it from this tree but is not trusted.
func declinedNote(run *cache.Run, t travel.Trust) string {
	who := "run " + run.ID
	if run.Host != "" {
		who += " on " + run.Host
	}
	return who + " did it, but its work is not trusted here (" + t.String() + "): the task runs live"
}

// trustPhrase is why a replay's source is trusted, for the plan, the
// run's output and the report: "made on this machine", "signed by
// alice@example.com (key ...), an allowed signer".
func trustPhrase(ts []travel.Trust) string {
	var parts []string
	seen := map[string]bool{}
	for _, t := range ts {
		if s := t.String(); !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	return "trusted: " + strings.Join(parts, "; ")
}

// UntrustedError is work asked of a run that the trust rule does not
// trust: restore --run of a pulled run nobody allowed signed.
type UntrustedError struct {
	Run   string
	Trust travel.Trust
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("run %s is %s: its content is not written into this tree", e.Run, e.Trust.String())
}

// pulledTrust is the trust rule's answer for every pulled run of j, by
// run id (a run made here is not in it): what `runs` and `show` mark.
// Read-only.
func pulledTrust(j *cache.Journal) (map[string]travel.Trust, error) {
	ps, err := j.PulledRuns()
	if err != nil {
		return nil, err
	}
	out := make(map[string]travel.Trust, len(ps))
	for id, p := range ps {
		out[id] = travel.TrustOf(&p)
	}
	return out, nil
}
