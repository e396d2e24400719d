package loop

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
)

// TestResumeTakesB0Once: a resume reads the parent's last boundary first
// and takes its B0 once (one salvage commit for boundary 0, one salvage
// commit per journaled boundary), tracking the parent's dirty paths.
func TestResumeTakesB0Once(t *testing.T) {
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), plainPlan(2))
	agentPath, _ := fakeAgent(t, `mkdir -p out && echo "work of $IMPLLOOP_TASK_ID" > "out/t$IMPLLOOP_TASK_ID.txt"`)
	s := settingsFor(agentPath)
	base := runIn(t, repo, s)
	if base.Verdict != "DONE" {
		t.Fatalf("base run: %s", base.Verdict)
	}
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: base.RunID})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	ref := boundary.SalvageRef(out.RunID)
	log := git(t, repo, "log", "--format=%B", ref)
	if n := strings.Count(log, "Implloop-Boundary: 0\n"); n != 1 {
		t.Errorf("%d salvage commits for B0 of the resume, want 1:\n%s", n, log)
	}
	j := openJournal(t, repo)
	bs, err := j.Boundaries(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, repo, "rev-list", "--count", ref); got != strconv.Itoa(len(bs)) {
		t.Errorf("%s salvage commits for %d journaled boundaries", got, len(bs))
	}
	if len(bs) == 0 || len(bs[0].Verdict) == 0 {
		t.Fatalf("B0 of the resume has no comparison with the parent: %+v", bs)
	}
	// The parent's dirty paths are still dirty: B0 lists them, salvaged.
	var b0 boundary.Snapshot
	if err := json.Unmarshal(bs[0].Snapshot, &b0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"out/t1.txt", "out/t2.txt"} {
		if e, ok := b0.Lookup(p); !ok || e.Salvaged == "" {
			t.Errorf("%s: %+v %v", p, e, ok)
		}
	}
}
