package loop

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
)

// TestResumeTakesB0Once: a resume reads the parent's last boundary first
// and takes its B0 once: one boundary commit per journaled boundary on the
// resume's ref, the first chained to the parent's last boundary commit and
// holding the parent's uncommitted work.
func TestResumeTakesB0Once(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), plainPlan(2))
	agentPath, _ := fakeAgent(t, `mkdir -p out && echo "work of $IMPLLOOP_TASK_ID" > "out/t$IMPLLOOP_TASK_ID.txt"`)
	s := settingsFor(agentPath)
	base := runIn(t, repo, s)
	if base.Verdict != "DONE" {
		t.Fatalf("base run: %s", base.Verdict)
	}
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: base.RunID, Full: true})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, repo)
	j := openJournal(t, repo)
	bs, err := j.Boundaries(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	pbs, err := j.Boundaries(base.RunID)
	if err != nil {
		t.Fatal(err)
	}
	ref := boundary.RunRef(out.RunID)
	if got := git(t, repo, "rev-list", "--first-parent", "--count", ref+"^{commit}", "^"+pbs[len(pbs)-1].Commit); got != strconv.Itoa(len(bs)) {
		t.Errorf("%s boundary commits for %d journaled boundaries", got, len(bs))
	}
	if len(bs) == 0 || len(bs[0].Verdict) == 0 {
		t.Fatalf("B0 of the resume has no comparison with the parent: %+v", bs)
	}
	if got := git(t, repo, "rev-parse", bs[0].Commit+"^1"); got != pbs[len(pbs)-1].Commit {
		t.Errorf("B0's first parent %s, want the parent's last boundary %s", got, pbs[len(pbs)-1].Commit)
	}
	// The parent's uncommitted work is in B0's tree.
	for _, p := range []string{"out/t1.txt", "out/t2.txt"} {
		if got := git(t, repo, "cat-file", "blob", bs[0].Commit+":"+p); !strings.HasPrefix(got, "work of") {
			t.Errorf("%s in B0: %q", p, got)
		}
	}
}
