package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/bytepath"
	"github.com/implloop/implloop/loop"
)

// unitExplanation is one unit of `implloop explain`.
type unitExplanation struct {
	Task         string          `json:"task"`
	Unit         string          `json:"unit"`
	Attempt      int             `json:"attempt"`
	Identity     string          `json:"identity"`
	Status       string          `json:"status"`
	Source       string          `json:"source"` // live or replayed
	ReplayedFrom string          `json:"replayed_from,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	ComparedWith string          `json:"compared_with,omitempty"` // run:unit of the closest journaled unit
	Changes      []explainChange `json:"changes,omitempty"`
}

// taskExplanation is a task the resume planned otherwise than a plain
// replay or live run, in the loop's words.
type taskExplanation struct {
	Task     string        `json:"task"`
	Action   string        `json:"action"`
	Reasons  []string      `json:"reasons,omitempty"`
	Restored bytepath.List `json:"restored,omitempty"`
}

// planOrder is the resume plan's tasks in plan order.
func planOrder(d *loop.Decisions) []loop.PlannedTask {
	out := make([]loop.PlannedTask, 0, len(d.Order))
	for _, id := range d.Order {
		out = append(out, d.Planned[id])
	}
	return out
}

type explainChange struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old,omitempty"`
	New   json.RawMessage `json:"new,omitempty"`
	Text  string          `json:"text"`
}

func newExplainCmd(io *ioStreams) *cobra.Command {
	var taskID string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain [RUN]",
		Short: "Per unit: replayed from where, or live and which identity field changed",
		Long: `Explain answers "why did this re-run?" for every unit of a run (default:
the latest): replayed from which run and unit, or live and why, with a
field-by-field diff of its identity preimage against the closest journaled
unit of the same task, role and attempt in the parent's lineage.
Read-only: it writes nothing.

` + exitStatusHelp(),
		Example: `  # Why each unit of the latest run replayed or ran live
  implloop explain

  # The units of task 10 in a given run
  implloop explain r-20261130-054012-3f9a --task 10

  # Only the units that ran live, and why
  implloop explain --json | jq -c '.units[] | select(.source == "live") | {task, reason}'`,
		Args:              maxArgs(1, "at most one RUN"),
		ValidArgsFunction: completeRunArg(io),
		RunE: func(cmd *cobra.Command, args []string) error {
			j, run, err := openRun(io, args)
			if err != nil {
				return err
			}
			defer j.Close()
			var lineage []string
			if run.ParentID != "" {
				if lineage, err = j.LineageIDs(run.ParentID); err != nil {
					return err
				}
			}
			units, err := j.Units(run.ID)
			if err != nil {
				return err
			}
			// Artifacts are identities of units of this run: which task's.
			byIdentity := map[string]cache.Unit{}
			for _, u := range units {
				byIdentity[u.Identity] = u
			}
			// The loop's own words, journaled when it decided, come
			// first; the identity diff adds the fields.
			dec, err := loop.DecisionsOf(j, run.ID)
			if err != nil {
				return err
			}
			var out []unitExplanation
			for _, u := range units {
				if taskID != "" && u.TaskID != taskID {
					continue
				}
				x := explainUnit(j, lineage, u, byIdentity)
				if why := dec.Unit[u.UnitID]; len(why) > 0 {
					x.Reason = strings.Join(why, ", ")
				}
				out = append(out, x)
			}
			// Tasks the resume planned otherwise than plain replay or
			// live: a restore, a gate re-run on a changed tree.
			var tasks []taskExplanation
			for _, t := range planOrder(dec) {
				if taskID != "" && t.Task != taskID {
					continue
				}
				if t.Action == loop.ActionRestore || (t.Action == loop.ActionReplay && len(t.Reasons) > 0) || t.Action == loop.ActionGate {
					tasks = append(tasks, taskExplanation{Task: t.Task, Action: t.Action, Reasons: t.Reasons, Restored: dec.Restored[t.Task]})
				}
			}
			if taskID != "" && len(out) == 0 {
				return errorf("run 'implloop show "+run.ID+"' for its tasks", "run %s has no unit of task %q", run.ID, taskID)
			}
			if asJSON {
				enc := json.NewEncoder(io.Out)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"run": run.ID, "parent": run.ParentID, "units": out, "tasks": tasks})
			}
			fmt.Fprintf(io.Out, "run %s", run.ID)
			if run.ParentID != "" {
				fmt.Fprintf(io.Out, " (resumes %s)", run.ParentID)
			}
			fmt.Fprintln(io.Out)
			for _, x := range out {
				fmt.Fprintf(io.Out, "task %s  %s  %s", x.Task, x.Unit, x.Source)
				if x.ReplayedFrom != "" {
					fmt.Fprintf(io.Out, " from %s", x.ReplayedFrom)
				}
				if x.Reason != "" {
					fmt.Fprintf(io.Out, ": %s", x.Reason)
				}
				fmt.Fprintln(io.Out)
				for _, c := range x.Changes {
					fmt.Fprintf(io.Out, "    %s\n", strings.ReplaceAll(c.Text, "\n", "\n    "))
				}
			}
			for _, t := range tasks {
				fmt.Fprintf(io.Out, "task %s  %s: %s\n", t.Task, t.Action, strings.Join(t.Reasons, "; "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&taskID, "task", "", "only this task's units")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.RegisterFlagCompletionFunc("task", completeRunTasks(io, runArg))
	return cmd
}

func explainUnit(j *cache.Journal, lineage []string, u cache.Unit, byIdentity map[string]cache.Unit) unitExplanation {
	x := unitExplanation{Task: u.TaskID, Unit: u.UnitID, Attempt: u.Attempt, Identity: u.Identity, Status: string(u.Status), Source: "live"}
	if u.Replayed() {
		x.Source = "replayed"
		x.ReplayedFrom = u.ReplayedFromRun + ":" + u.ReplayedFromUnit
		return x
	}
	if len(lineage) == 0 {
		x.Reason = "fresh run: never ran before"
		return x
	}
	c, ok, err := j.ClosestUnit(lineage, u.TaskID, u.Role, u.Attempt)
	if err != nil || !ok {
		x.Reason = "never ran in this run's lineage"
		return x
	}
	x.ComparedWith = c.RunID + ":" + c.UnitID
	if c.Identity == u.Identity {
		x.Reason = fmt.Sprintf("same identity, but the journaled unit is %s (only completed units replay)", c.Status)
		return x
	}
	changes, err := identity.Diff(c.Preimage, u.Preimage)
	if err != nil {
		x.Reason = "identity changed (the stored preimage could not be compared: " + err.Error() + ")"
		return x
	}
	x.Reason = changeReasons(changes, byIdentity)
	for _, ch := range changes {
		x.Changes = append(x.Changes, explainChange{Field: ch.Field, Old: ch.Old, New: ch.New, Text: ch.String()})
	}
	return x
}

// changeReasons is identity.Reasons, with a change of artifacts told as
// the dependencies it comes from: "dependency 1 ran live" (or "changed",
// when it replayed another unit than before) instead of "dependency
// artifacts changed", when the new artifacts are units of this run.
func changeReasons(changes []identity.Change, byIdentity map[string]cache.Unit) string {
	var out []string
	seen := map[string]bool{}
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, ch := range changes {
		var named []string
		if ch.Field == "artifacts" {
			var old, cur []string
			_ = json.Unmarshal(ch.Old, &old)
			_ = json.Unmarshal(ch.New, &cur)
			had := map[string]bool{}
			for _, a := range old {
				had[a] = true
			}
			for _, a := range cur {
				d, ok := byIdentity[a]
				switch {
				case had[a] || !ok:
				case d.Replayed():
					named = append(named, "dependency "+d.TaskID+" changed")
				default:
					named = append(named, "dependency "+d.TaskID+" ran live")
				}
			}
		}
		if len(named) == 0 {
			named = []string{ch.Reason()}
		}
		for _, r := range named {
			add(r)
		}
	}
	return strings.Join(out, ", ")
}
