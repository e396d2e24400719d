package travel_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/travel"
)

func TestMain(m *testing.M) {
	home, err := gittest.Isolate("implloop-travel-test-")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

const plan = "# Plan\n\n- [ ] 1. One\n- [ ] 2. Two\n"

// agent writes out-<task>.txt and a line to calls beside it.
const agentScript = "#!/bin/sh\ncat >/dev/null\necho \"$IMPLLOOP_TASK_ID\" >> \"$(dirname \"$0\")/calls\"\necho done > \"out-$IMPLLOOP_TASK_ID.txt\"\necho '{\"result\":\"ok <done>\",\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}'\n"

// ranRepo is a repository with the plan committed and one DONE run in it.
func ranRepo(t *testing.T) (*gittest.Repo, string) {
	t.Helper()
	r := planRepo(t)
	return r, runPlan(t, r, nil)
}

// planRepo is a repository with the plan committed.
func planRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	r := gittest.New(t)
	r.Write("plan.md", plan)
	r.Git("add", "plan.md")
	r.Git("commit", "-q", "-m", "start")
	return r
}

// runPlan runs the plan in r with agentScript (opts, when set, changes
// the run's options) and returns the run, which must end DONE.
func runPlan(t *testing.T, r *gittest.Repo, opts func(*loop.Options)) string {
	t.Helper()
	agentPath := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agentPath, []byte(agentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	s := loop.DefaultSettings()
	s.Plan, s.AgentCmd, s.Verify = "plan.md", agentPath, "test -f out-$IMPLLOOP_TASK_ID.txt"
	o := loop.Options{Settings: s, RepoRoot: r.Dir}
	if opts != nil {
		opts(&o)
	}
	out, err := loop.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	return out.RunID
}

func records(t *testing.T, dir, run string) *cache.Records {
	t.Helper()
	j, err := cache.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	rec, err := j.Records(run)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// A finished run's records are a commit on refs/implloop/records/<run>:
// the whole records on top of a commit without transcripts, on top of the
// run's last boundary. Writing them again gives the same commits.
func TestWriteRecords(t *testing.T) {
	r, run := ranRepo(t)
	ref := travel.RecordsRef(run)
	full := strings.TrimSpace(r.Git("rev-parse", ref))
	last := strings.TrimSpace(r.Git("rev-parse", boundary.RunRef(run)))
	if got := strings.TrimSpace(r.Git("rev-parse", ref+"^1^1")); got != last {
		t.Errorf("records' grandparent %s, want the last boundary %s", got, last)
	}
	files := r.Git("ls-tree", "--name-only", ref)
	for _, f := range []string{"records.json", "run.json", "tasks.json", "units.json", "gates.json", "boundaries.json", "events.json", "blobs"} {
		if !strings.Contains(files, f+"\n") {
			t.Errorf("records tree lacks %s:\n%s", f, files)
		}
	}
	rec := records(t, r.Dir, run)
	blobs := r.Git("ls-tree", "--name-only", ref+":blobs")
	for _, h := range rec.Blobs() {
		if !strings.Contains(blobs, h) {
			t.Errorf("blob %s is not in the records tree", h)
		}
	}
	// Without transcripts: the results stay, prompts and output do not.
	lite := r.Git("ls-tree", "--name-only", ref+"^1:blobs")
	u := rec.Units[0]
	if !strings.Contains(lite, u.Result) || strings.Contains(lite, u.Prompt) {
		t.Errorf("records without transcripts hold %s", lite)
	}
	var units []map[string]any
	if err := json.Unmarshal([]byte(r.Git("show", ref+"^1:units.json")), &units); err != nil {
		t.Fatal(err)
	}
	if units[0]["prompt"] != nil || units[0]["result"] != u.Result {
		t.Errorf("unit without transcripts: %v", units[0])
	}
	// Deterministic: written again, the same commit.
	r.Git("update-ref", "-d", ref)
	if again := writeRecords(t, r, run); again != full {
		t.Errorf("written again: %s, first %s", again, full)
	}
}

// Pulled records are the pushed ones, row for row: timestamps, preimage
// bytes and all; the pulled journal keeps its invariants.
func TestPushPullRoundTrip(t *testing.T) {
	ctx := context.Background()
	a, run := ranRepo(t)
	bare := t.TempDir()
	gittest.At(t, bare).Git("init", "-q", "--bare")
	ja, err := cache.Open(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := travel.Push(ctx, ja, travel.PushOptions{Remote: bare})
	ja.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Runs, []string{run}) {
		t.Fatalf("pushed %v", res.Runs)
	}
	b := gittest.New(t)
	open := func() (*cache.Journal, error) { return cache.Open(b.Dir) }
	pr, err := travel.Pull(ctx, b.Dir, bare, open)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pr.Imported, []string{run}) {
		t.Fatalf("imported %v", pr.Imported)
	}
	// Pulled without transcripts, and pushed on without them: the same
	// commit, not its parent.
	lite := strings.TrimSpace(a.Git("rev-parse", travel.RecordsRef(run)+"^1"))
	push := func(dir, remote string) {
		t.Helper()
		j, err := cache.OpenReadOnly(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if _, err := travel.Push(ctx, j, travel.PushOptions{Remote: remote, NoTranscripts: true}); err != nil {
			t.Fatal(err)
		}
	}
	bare2, bare3 := t.TempDir(), t.TempDir()
	gittest.At(t, bare2).Git("init", "-q", "--bare")
	gittest.At(t, bare3).Git("init", "-q", "--bare")
	push(a.Dir, bare2)
	c := gittest.New(t)
	if _, err := travel.Pull(ctx, c.Dir, bare2, func() (*cache.Journal, error) { return cache.Open(c.Dir) }); err != nil {
		t.Fatal(err)
	}
	push(c.Dir, bare3)
	if got := strings.TrimSpace(gittest.At(t, bare3).Git("rev-parse", travel.RecordsRef(run))); got != lite {
		t.Errorf("pushed on without transcripts: %s, want %s", got, lite)
	}
	want, got := records(t, a.Dir, run), records(t, b.Dir, run)
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Errorf("pulled records differ:\n got %s\nwant %s", gj, wj)
	}
	j, err := cache.Open(b.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	problems, err := j.Check(identity.DigestCanonical)
	if err != nil || len(problems) > 0 {
		t.Errorf("pulled journal: %v %v", err, problems)
	}
}

// A run killed before it ended has no records; once a resume took over,
// pushing the resume sends it too, written then, and a pull imports the
// two parent first. The killed run alone is not pushed.
func TestPushWritesAKilledParent(t *testing.T) {
	ctx := context.Background()
	a := gittest.New(t)
	j, err := cache.Open(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	killed := &cache.Run{ID: "r-20261130-100000-aaaa", PlanPath: "plan.md", PlanSHA256: "x", StartedAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if err := j.CreateRun(killed); err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	gittest.At(t, bare).Git("init", "-q", "--bare")
	if _, err := travel.Push(ctx, j, travel.PushOptions{Remote: bare, Runs: []string{killed.ID}}); !errors.Is(err, travel.ErrUnfinished) {
		t.Fatalf("push of the killed run: %v, want ErrUnfinished", err)
	}
	resume := &cache.Run{ID: "r-20261130-100500-bbbb", ParentID: killed.ID, PlanPath: "plan.md", PlanSHA256: "x", StartedAt: time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)}
	if err := j.CreateRun(resume); err != nil {
		t.Fatal(err)
	}
	if err := j.FinishRun(resume.ID, "DONE", 0, resume.StartedAt.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	res, err := travel.Push(ctx, j, travel.PushOptions{Remote: bare})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Runs, []string{killed.ID, resume.ID}) {
		t.Errorf("pushed %v, want the killed run then its resume", res.Runs)
	}
	b := gittest.New(t)
	pr, err := travel.Pull(ctx, b.Dir, bare, func() (*cache.Journal, error) { return cache.Open(b.Dir) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pr.Imported, []string{killed.ID, resume.ID}) {
		t.Errorf("imported %v", pr.Imported)
	}
	// Without its parent on the remote, the resume is refused.
	gittest.At(t, bare).Git("update-ref", "-d", travel.RecordsRef(killed.ID))
	c := gittest.New(t)
	_, err = travel.Pull(ctx, c.Dir, bare, func() (*cache.Journal, error) { return cache.Open(c.Dir) })
	var refused *travel.RefusedError
	if !errors.As(err, &refused) || refused.Run != resume.ID || !strings.Contains(err.Error(), "resumes run "+killed.ID) {
		t.Errorf("pull without the parent: %v", err)
	}
}

// A journal written by a newer implloop is not imported into.
func TestPullIntoANewerJournal(t *testing.T) {
	ctx := context.Background()
	a, _ := ranRepo(t)
	b := gittest.New(t)
	j, err := cache.Open(b.Dir)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	db, err := sql.Open("sqlite", filepath.Join(b.Dir, ".git", "implloop", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", cache.SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = travel.Pull(ctx, b.Dir, a.Dir, func() (*cache.Journal, error) { return cache.Open(b.Dir) })
	if !errors.Is(err, cache.ErrNewerSchema) {
		t.Fatalf("pull: %v, want ErrNewerSchema", err)
	}
	if out := b.Git("for-each-ref", "refs/implloop/", "refs/implloop-pull/"); out != "" {
		t.Errorf("refs after a refused pull:\n%s", out)
	}
}

// A fresh run from the tree another run started from replays that run's
// calls and writes their work into the tree; from another tree it runs
// live.
func TestReplayAcrossRuns(t *testing.T) {
	r, first := ranRepo(t)
	calls := func() int {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(agentOf(t, r.Dir, first)), "calls"))
		return strings.Count(string(b), "\n")
	}
	before := calls()
	run := func() *loop.Outcome {
		t.Helper()
		s := loop.DefaultSettings()
		s.Plan, s.AgentCmd, s.Verify = "plan.md", agentOf(t, r.Dir, first), "test -f out-$IMPLLOOP_TASK_ID.txt"
		out, err := loop.Run(context.Background(), loop.Options{Settings: s, RepoRoot: r.Dir})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	r.Git("clean", "-q", "-fd")
	if out := run(); out.Verdict != "DONE" || calls() != before {
		t.Fatalf("from the same tree: %s, %d agent calls (want %d)", out.Verdict, calls(), before)
	}
	for _, f := range []string{"out-1.txt", "out-2.txt"} {
		if _, err := os.Stat(r.Path(f)); err != nil {
			t.Errorf("%s was not written back: %v", f, err)
		}
	}
	r.Git("clean", "-q", "-fd")
	r.Write("other.txt", "another tree\n")
	if out := run(); out.Verdict != "DONE" || calls() != before+2 {
		t.Fatalf("from another tree: %s, %d agent calls (want %d)", out.Verdict, calls(), before+2)
	}
}

// agentOf is the agent command a run was started with.
func agentOf(t *testing.T, dir, run string) string {
	t.Helper()
	var s loop.Settings
	if err := json.Unmarshal(records(t, dir, run).Run.Settings, &s); err != nil {
		t.Fatal(err)
	}
	return s.AgentCmd
}

// What an interrupted pull left in the staging namespace is not imported
// and is gone after the next pull, which leaves nothing there either.
func TestPullPrunesWhatAnInterruptedPullLeft(t *testing.T) {
	ctx := context.Background()
	a, run := ranRepo(t)
	b := gittest.New(t)
	b.Git("commit", "-q", "--allow-empty", "-m", "stray")
	b.Git("update-ref", "refs/implloop-pull/r-20200101-000000-dead", "HEAD")
	pr, err := travel.Pull(ctx, b.Dir, a.Dir, func() (*cache.Journal, error) { return cache.Open(b.Dir) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pr.Imported, []string{run}) {
		t.Fatalf("imported %v", pr.Imported)
	}
	if out := b.Git("for-each-ref", "refs/implloop-pull/"); out != "" {
		t.Errorf("staging refs after a pull:\n%s", out)
	}
	if out := b.Git("for-each-ref", "--format=%(refname)", travel.RecordsRef(run)); strings.TrimSpace(out) != travel.RecordsRef(run) {
		t.Errorf("records ref after a pull: %q", out)
	}
}

// A pull killed after its import committed and before it set the refs
// (what pulls did until the refs went first) left runs in the journal
// with no ref keeping their records and boundary commits from git gc. The
// next pull, finding them there, sets those refs; and a pull now sets the
// refs before its import commits, so a kill between the two leaves refs
// whose runs the next pull imports.
func TestPullSetsTheRefsAKilledPullLacks(t *testing.T) {
	ctx := context.Background()
	a, run, b, open := pulledClone(t)
	refs := func() string {
		return b.Git("for-each-ref", "--format=%(refname) %(objectname)", "refs/implloop/")
	}
	want := refs()
	if !strings.Contains(want, boundary.RunRef(run)) || !strings.Contains(want, travel.RecordsRef(run)) {
		t.Fatalf("refs after a pull:\n%s", want)
	}
	b.Git("update-ref", "-d", travel.RecordsRef(run))
	b.Git("update-ref", "-d", boundary.RunRef(run))
	pr, err := travel.Pull(ctx, b.Dir, a.Dir, open)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Imported) != 0 || !reflect.DeepEqual(pr.Present, []string{run}) {
		t.Fatalf("second pull: imported %v, present %v", pr.Imported, pr.Present)
	}
	if got := refs(); got != want {
		t.Errorf("refs after the second pull:\n%s\nwant\n%s", got, want)
	}
}

// A run the journal has whose records ref is missing gets it back from a
// pull only when the fetched commit holds that run's records: the remote's
// ref may have been replaced since the run was imported, and a records ref
// is what push sends on, so an unchecked commit never becomes one.
func TestPullRefusesAForgedRecordOfARunItHas(t *testing.T) {
	ctx := context.Background()
	a, run, b, open := pulledClone(t)
	b.Git("update-ref", "-d", travel.RecordsRef(run))
	// The remote's records of the run replaced by a commit of anything.
	forged := strings.TrimSpace(a.Git("rev-parse", "HEAD"))
	a.Git("update-ref", travel.RecordsRef(run), forged)
	_, err := travel.Pull(ctx, b.Dir, a.Dir, open)
	var refused *travel.RefusedError
	if !errors.As(err, &refused) || refused.Run != run {
		t.Errorf("pull of a forged record of a run the journal has: %v, want it refused", err)
	}
	if got := strings.TrimSpace(b.Git("for-each-ref", "--format=%(objectname)", travel.RecordsRef(run))); got != "" {
		t.Errorf("records ref set to %s from a forged record (forged: %s)", got, forged)
	}
	// The records of another run of the remote's, under this run's name.
	b.Git("update-ref", "-d", travel.RecordsRef(run))
	b2, other := ranRepo(t)
	a.Git("fetch", "-q", b2.Dir, travel.RecordsRef(other)+":refs/tmp/other")
	a.Git("update-ref", travel.RecordsRef(run), "refs/tmp/other")
	if _, err := travel.Pull(ctx, b.Dir, a.Dir, open); !errors.As(err, &refused) {
		t.Errorf("pull of another run's records under a run the journal has: %v, want it refused", err)
	}
	if got := strings.TrimSpace(b.Git("for-each-ref", "--format=%(objectname)", travel.RecordsRef(run))); got != "" {
		t.Errorf("records ref set to %s from another run's records", got)
	}
}

// pulledClone is a repository with one DONE run (a) and another that
// pulled it (b), with the opener of b's journal.
func pulledClone(t *testing.T) (a *gittest.Repo, run string, b *gittest.Repo, open func() (*cache.Journal, error)) {
	t.Helper()
	a, run = ranRepo(t)
	b = gittest.New(t)
	open = func() (*cache.Journal, error) { return cache.Open(b.Dir) }
	if _, err := travel.Pull(context.Background(), b.Dir, a.Dir, open); err != nil {
		t.Fatal(err)
	}
	return a, run, b, open
}
