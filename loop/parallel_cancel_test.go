package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/cache"
)

// returnsAsCancelled is an agent for a --jobs run: task T1's call does its
// work, then the run is interrupted as the call returns (Ctrl-C between
// the agent's exit and the engine's look at the context); every other
// call runs until the interrupt cuts it short. With cancel nil (the
// resume) every call writes its task's file and returns.
type returnsAsCancelled struct {
	cancel context.CancelFunc
}

func (returnsAsCancelled) Name() string { return "exec" }
func (returnsAsCancelled) Check() error { return nil }

func (a returnsAsCancelled) Run(ctx context.Context, req agent.Request) (agent.Result, error) {
	id := req.Env[agent.EnvTaskID]
	if a.cancel != nil && id != "T1" {
		<-ctx.Done()
		return agent.Result{ExitCode: -1}, ctx.Err()
	}
	if err := os.WriteFile(filepath.Join(req.Dir, id+".txt"), []byte(id+"\n"), 0o644); err != nil {
		return agent.Result{}, err
	}
	if a.cancel != nil {
		a.cancel()
	}
	return agent.Result{Text: "done"}, nil
}

// A call made ahead that returns as the run is interrupted finished its
// work: it is journaled completed at its turn, its work merged into the
// tree, and the resume replays it. (It was journaled FAILED, "its work in
// its worktree could not be read: <nil>", its worktree removed with the
// work in it, when the tree was not read once the run was cancelled; then
// the merge at its turn ran on the cancelled context, failed, and left
// the unit interrupted and the work outside the tree.)
func TestParallelCallReturnsAsRunIsCancelled(t *testing.T) {
	repo := newRepo(t, map[string]string{"plan.md": "# Plan\n\n- [ ] T1 [P] One\n- [ ] T2 [P] Two\n"})
	s := settingsFor("unused")
	s.Jobs = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := Run(ctx, Options{Settings: s, RepoRoot: repo, Agent: returnsAsCancelled{cancel}})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	if !out.Interrupted {
		t.Fatalf("outcome %+v, want interrupted", out)
	}
	j := openJournal(t, repo)
	us, err := j.Units(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		if u.TaskID == "T1" && (u.Status != cache.UnitCompleted || strings.Contains(u.Error, "could not be read")) {
			t.Errorf("task T1's unit: %s %q, want completed", u.Status, u.Error)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "T1.txt")); string(got) != "T1\n" {
		t.Errorf("T1.txt = %q: task T1's work was not merged into the tree", got)
	}
	as, err := j.AheadCalls(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].TaskID != "T1" || as[0].SettledBy != out.RunID {
		t.Errorf("calls made ahead %+v, want task T1's, journaled and settled at its turn", as)
	}

	res, rec := rsRun(t, repo, s, out.RunID, func(o *Options) { o.Agent = returnsAsCancelled{} })
	if res.Verdict != "DONE" {
		t.Fatalf("resume: %s", res.Verdict)
	}
	if got := rec.tasksWith(EvUnitReplayed, ""); strings.Join(got, ",") != "T1" {
		t.Errorf("replayed %v, want task T1's call", got)
	}
	if got := rec.tasksWith(EvUnitStarted, "live"); strings.Join(got, ",") != "T2" {
		t.Errorf("live %v, want task T2 only", got)
	}
}
