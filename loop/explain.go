package loop

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/bytepath"
	"github.com/implloop/implloop/travel"
)

// Explanation is why each unit of a run replayed or ran live, and the
// tasks its resume planned otherwise than a plain replay or live run:
// what `implloop explain` prints.
type Explanation struct {
	Run    string
	Parent string // "" for a fresh run
	Units  []UnitExplanation
	Tasks  []TaskExplanation
}

// UnitExplanation is one unit of a run: replayed from where, or live and
// why.
type UnitExplanation struct {
	Task         string `json:"task"`
	Unit         string `json:"unit"`
	Attempt      int    `json:"attempt"`
	Identity     string `json:"identity"`
	Status       string `json:"status"`
	Source       string `json:"source"`                  // live or replayed
	ReplayedFrom string `json:"replayed_from,omitempty"` // run:unit
	// AcrossRuns: replayed from a run outside the lineage (a fresh run's
	// or a teammate's, pulled), on machine ReplayedOn (its host name).
	AcrossRuns bool   `json:"across_runs,omitempty"`
	ReplayedOn string `json:"replayed_on,omitempty"`
	// Trusted and Trust: what the trust rule (travel.TrustOf) says of the
	// run a replayed unit came from, and why: whose work it is.
	Trusted      bool            `json:"trusted,omitempty"`
	Trust        string          `json:"trust,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	ComparedWith string          `json:"compared_with,omitempty"` // run:unit of the closest journaled unit
	Changes      []ExplainChange `json:"changes,omitempty"`
	// Agent and Model made the call (its identity's). Fallback says who
	// took it over after a limit and why, when the run's own agent (and
	// first model) did not make it (limits.go).
	Agent    string `json:"agent"`
	Model    string `json:"model,omitempty"`
	Fallback string `json:"fallback,omitempty"`
	// Sandbox is the tool the unit's live call ran in (the replayed
	// call's, for a replay): --sandbox; "" for none.
	Sandbox string `json:"sandbox,omitempty"`
}

// ExplainChange is one field of a live unit's identity preimage that
// differs from the closest journaled unit's.
type ExplainChange struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old,omitempty"`
	New   json.RawMessage `json:"new,omitempty"`
	Text  string          `json:"text"`
}

// TaskExplanation is a task the resume planned otherwise than a plain
// replay or live run, in the loop's words.
type TaskExplanation struct {
	Task     string        `json:"task"`
	Action   string        `json:"action"`
	Reasons  []string      `json:"reasons,omitempty"`
	Restored bytepath.List `json:"restored,omitempty"`
}

// explainRun explains run's units (only task taskID's when it is not ""):
// the loop's own words, journaled when it decided, first; a field-by-field
// diff of the identity preimage against the closest journaled unit of the
// same task, role and attempt in the parent's lineage adds the fields.
// Read-only.
func explainRun(j *cache.Journal, run *cache.Run, taskID string) (*Explanation, error) {
	x := &Explanation{Run: run.ID, Parent: run.ParentID}
	var lineage []string
	if run.ParentID != "" {
		var err error
		if lineage, err = j.LineageIDs(run.ParentID); err != nil {
			return nil, err
		}
	}
	units, err := j.Units(run.ID)
	if err != nil {
		return nil, err
	}
	// Artifacts are identities of units of this run: which task's.
	byIdentity := map[string]cache.Unit{}
	for _, u := range units {
		byIdentity[u.Identity] = u
	}
	dec, err := decisionsOf(j, run.ID)
	if err != nil {
		return nil, err
	}
	boxes := runSandboxes{j: j, tool: map[string]string{}}
	for _, u := range units {
		if taskID != "" && u.TaskID != taskID {
			continue
		}
		ux := explainUnit(j, lineage, u, byIdentity)
		if why := dec.Unit[u.UnitID]; len(why) > 0 {
			ux.Reason = strings.Join(why, ", ")
		}
		if p, err := identity.Parse(u.Preimage); err == nil {
			ux.Agent, ux.Model = p.Agent, p.Model
		}
		if !u.Replayed() {
			ux.Fallback = dec.Fallback[u.UnitID]
		}
		ux.Sandbox = boxes.of(run.ID)
		if u.Replayed() {
			ux.Sandbox = boxes.of(u.ReplayedFromRun)
		}
		x.Units = append(x.Units, ux)
	}
	// Tasks the resume planned otherwise than plain replay or live: a
	// restore, a gate re-run on a changed tree.
	for _, id := range dec.Order {
		t := dec.Planned[id]
		if taskID != "" && t.Task != taskID {
			continue
		}
		if t.Explained() {
			x.Tasks = append(x.Tasks, TaskExplanation{Task: t.Task, Action: t.Action, Reasons: t.Reasons, Restored: dec.Restored[t.Task]})
		}
	}
	return x, nil
}

// explainUnit is u as explain shows it: replayed from where, or live and
// why, in liveReasons' words (the loop's own, journaled when it decided,
// replace them where there are any), with the preimage fields that differ.
func explainUnit(j *cache.Journal, lineage []string, u cache.Unit, byIdentity map[string]cache.Unit) UnitExplanation {
	x := UnitExplanation{Task: u.TaskID, Unit: u.UnitID, Attempt: u.Attempt, Identity: u.Identity, Status: string(u.Status), Source: "live"}
	if u.Replayed() {
		x.Source = "replayed"
		x.ReplayedFrom = u.ReplayedFromRun + ":" + u.ReplayedFromUnit
		if t, err := travel.TrustOfRun(j, u.ReplayedFromRun); err == nil {
			x.Trusted, x.Trust = t.Trusted, t.String()
		}
		if !slices.Contains(lineage, u.ReplayedFromRun) {
			x.AcrossRuns = true
			if r, err := j.GetRun(u.ReplayedFromRun); err == nil {
				x.ReplayedOn = r.Host
			}
		}
		return x
	}
	if len(lineage) == 0 {
		x.Reason = reasonFresh
		return x
	}
	c, found, err := j.ClosestUnit(lineage, u.TaskID, u.Role, u.Attempt)
	if err != nil || !found {
		c = nil
	} else {
		x.ComparedWith = c.RunID + ":" + c.UnitID
	}
	// The dependencies behind a change of artifacts: units of this run.
	named := func(old []string) []string {
		cur, err := identity.Parse(u.Preimage)
		if err != nil {
			return nil
		}
		had := map[string]bool{}
		for _, a := range old {
			had[a] = true
		}
		var out []string
		for _, a := range cur.Artifacts {
			if d, ok := byIdentity[a]; ok && !had[a] {
				out = append(out, depReason(d.TaskID, !d.Replayed(), false))
			}
		}
		return out
	}
	why, changes := liveReasons(c, u.Identity, u.Preimage, named)
	x.Reason = strings.Join(why, ", ")
	for _, ch := range changes {
		x.Changes = append(x.Changes, ExplainChange{Field: ch.Field, Old: ch.Old, New: ch.New, Text: ch.FullText()})
	}
	return x
}

// runSandboxes is the sandbox tool each run's settings record, read once
// per run.
type runSandboxes struct {
	j    *cache.Journal
	tool map[string]string
}

func (b runSandboxes) of(runID string) string {
	if t, ok := b.tool[runID]; ok {
		return t
	}
	t := ""
	if r, err := b.j.GetRun(runID); err == nil {
		if s, err := SettingsOf(r, ""); err == nil {
			t = s.SandboxTool
		}
	}
	b.tool[runID] = t
	return t
}
