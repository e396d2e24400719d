package loop

import (
	"strings"
	"testing"
)

// explainRun on real runs: a fresh run's units never ran before; a resume
// after an edit of task 2 replays tasks 1 and 3 from the parent and says,
// in the loop's words, why task 2 ran live and which preimage field
// changed.
func TestExplain(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo, parent := rsBase(t, rsPlan(3, "Shared context."), s)
	rsEditPlan(t, repo, func(p string) string { return strings.Replace(p, "hello 2", "hello two", 1) })
	out, _ := rsRun(t, repo, s, parent)
	j := openJournal(t, repo)

	run, err := j.GetRun(parent)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := explainRun(j, run, "")
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Parent != "" || len(fresh.Units) != 3 || len(fresh.Tasks) != 0 {
		t.Fatalf("fresh run: %+v", fresh)
	}
	for _, u := range fresh.Units {
		if u.Source != "live" || u.Reason != "fresh run: never ran before" {
			t.Errorf("fresh run, task %s: %s %q", u.Task, u.Source, u.Reason)
		}
	}

	run, err = j.GetRun(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	x, err := explainRun(j, run, "")
	if err != nil {
		t.Fatal(err)
	}
	if x.Run != out.RunID || x.Parent != parent || len(x.Units) != 3 {
		t.Fatalf("resume: %+v", x)
	}
	for _, u := range x.Units {
		switch u.Task {
		case "2":
			if u.Source != "live" || !strings.Contains(u.Reason, "task text changed") || u.ComparedWith == "" ||
				len(u.Changes) == 0 || u.Changes[0].Field != "task.text" {
				t.Errorf("task 2: %+v", u)
			}
		default:
			if u.Source != "replayed" || !strings.HasPrefix(u.ReplayedFrom, parent+":") {
				t.Errorf("task %s: %+v", u.Task, u)
			}
		}
	}
	only, err := explainRun(j, run, "2")
	if err != nil || len(only.Units) != 1 || only.Units[0].Task != "2" {
		t.Errorf("task 2 only: %+v %v", only, err)
	}
}
