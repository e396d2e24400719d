package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

// testDigest stands in for identity.DigestCanonical: cache must not import
// identity, and Check takes the digest as a function.
func testDigest(b []byte) string {
	s := sha256.Sum256(append([]byte("implloop.unit\x00v1\x00"), b...))
	return "u1:" + hex.EncodeToString(s[:])
}

// newRepo is an empty git repository in a temp dir.
func newRepo(t testing.TB) string {
	t.Helper()
	return gittest.New(t).Dir
}

func openT(t testing.TB, root string) *Journal {
	t.Helper()
	j, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func mustRun(t testing.TB, j *Journal, parent string) *Run {
	t.Helper()
	r := &Run{ParentID: parent, PlanPath: "plan.md", PlanSHA256: strings.Repeat("a", 64), Settings: []byte(`{"agent":"builtin"}`)}
	if err := j.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// unitFor builds a unit whose preimage digests (testDigest) to its identity.
func unitFor(runID, taskID string, attempt int, text string) Unit {
	pre := []byte(fmt.Sprintf(`{"attempt":%d,"role":"implement","task":{"id":%q,"text":%q}}`, attempt, taskID, text))
	return Unit{RunID: runID, UnitID: fmt.Sprintf("%s/implement~a%d", taskID, attempt), TaskID: taskID,
		Role: "implement", Attempt: attempt, Identity: testDigest(pre), Preimage: pre}
}

// complete starts and completes u with a stored result.
func complete(t testing.TB, j *Journal, u Unit) Unit {
	t.Helper()
	if err := j.StartUnit(u); err != nil {
		t.Fatal(err)
	}
	res, err := j.PutBlob([]byte(`{"result":"ok ` + u.UnitID + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := j.PutBlob([]byte("stdout of " + u.UnitID))
	if err := j.FinishUnit(u.RunID, u.UnitID, Outcome{Status: UnitCompleted, Result: res, Stdout: out,
		TokensIn: 100, TokensOut: 20, CostUSD: 0.01}); err != nil {
		t.Fatal(err)
	}
	got, err := j.GetUnit(u.RunID, u.UnitID)
	if err != nil {
		t.Fatal(err)
	}
	return *got
}

func checkClean(t testing.TB, j *Journal) {
	t.Helper()
	ps, err := j.Check(testDigest)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Errorf("check: %s", p)
	}
}

func TestMigrateFromEmptyFile(t *testing.T) {
	root := newRepo(t)
	// An empty state.db (as a crash right after creating it would leave).
	d := stateDirT(t, root)
	if err := os.MkdirAll(d.State, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.State, "state.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j := openT(t, root)
	var v int
	if err := j.st.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("user_version = %d, %v; want %d", v, err, SchemaVersion())
	}
	var mode string
	j.st.db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	var fk int
	j.st.db.QueryRow("PRAGMA foreign_keys").Scan(&fk)
	if fk != 1 {
		t.Errorf("foreign_keys = %d", fk)
	}
	// Foreign keys hold: no task of an unknown run.
	if err := j.PutTask(Task{RunID: "nope", TaskID: "1", Status: TaskPending}); err == nil {
		t.Error("task of an unknown run accepted")
	}
	// Reopening does not re-run migrations.
	j.Close()
	j2 := openT(t, root)
	mustRun(t, j2, "")
}

func TestNewerSchemaRefused(t *testing.T) {
	root := newRepo(t)
	j := openT(t, root)
	if _, err := j.st.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if _, err := Open(root); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("Open: %v, want ErrNewerSchema", err)
	}
	if _, err := OpenReadOnly(root); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("OpenReadOnly: %v, want ErrNewerSchema", err)
	}
}

func TestDurableAcrossReopen(t *testing.T) {
	root := newRepo(t)
	j := openT(t, root)
	r := mustRun(t, j, "")
	u := complete(t, j, unitFor(r.ID, "1", 1, "write a"))
	if err := j.PutTask(Task{RunID: r.ID, TaskID: "1", Ordinal: 1, Title: "A", Status: TaskDone,
		Source: SourceLive, Attempts: 1, Duration: 1500 * time.Millisecond, LostPaths: []string{"x.go"},
		Concerns: []string{"HEAD moved"}}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutGate(Gate{RunID: r.ID, TaskID: "1", Attempt: 1, Command: "go test ./...", Passed: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.PutBoundary(Boundary{RunID: r.ID, Head: "abc", Snapshot: []byte(`{"paths":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.AppendEvent(r.ID, "run_started", map[string]string{"run": r.ID}); err != nil {
		t.Fatal(err)
	}
	if err := j.FinishRun(r.ID, "DONE", 0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// Close leaves one self-contained file.
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(filepath.Join(j.Dir(), "state.db"+suffix)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("state.db%s left after Close: %v", suffix, err)
		}
	}

	j2 := openT(t, root)
	got, err := j2.GetRun(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != "DONE" || !got.Finished() || string(got.Settings) != `{"agent":"builtin"}` || got.PID != os.Getpid() {
		t.Errorf("run = %+v", got)
	}
	gu, err := j2.GetUnit(r.ID, u.UnitID)
	if err != nil || gu.Status != UnitCompleted || gu.TokensIn != 100 || gu.CostUSD != 0.01 || !bytes.Equal(gu.Preimage, u.Preimage) {
		t.Errorf("unit = %+v, %v", gu, err)
	}
	ts, _ := j2.Tasks(r.ID)
	if len(ts) != 1 || ts[0].Duration != 1500*time.Millisecond || ts[0].LostPaths[0] != "x.go" || ts[0].Concerns[0] != "HEAD moved" {
		t.Errorf("tasks = %+v", ts)
	}
	if gs, _ := j2.Gates(r.ID, "1"); len(gs) != 1 || !gs[0].Passed {
		t.Errorf("gates = %+v", gs)
	}
	if es, _ := j2.Events(r.ID); len(es) != 1 || es[0].Type != "run_started" {
		t.Errorf("events = %+v", es)
	}
	if b, ok, _ := j2.LastBoundary(r.ID); !ok || b.Head != "abc" || b.Seq != 0 {
		t.Errorf("boundary = %+v", b)
	}
	checkClean(t, j2)
}

func TestRunningNeverReplayed(t *testing.T) {
	j := openT(t, newRepo(t))
	r := mustRun(t, j, "")
	u := unitFor(r.ID, "3", 1, "task three")
	if err := j.StartUnit(u); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := j.FindCompleted([]string{r.ID}, u.Identity); ok || err != nil {
		t.Fatalf("running unit found: %v %v", ok, err)
	}
	// Failed and interrupted units are no hits either.
	f := unitFor(r.ID, "4", 1, "task four")
	j.StartUnit(f)
	if err := j.FinishUnit(r.ID, f.UnitID, Outcome{Status: UnitFailed, ExitCode: 1, Error: "exit 1"}); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkInterrupted(r.ID, u.UnitID, "", ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{u.Identity, f.Identity} {
		if _, ok, _ := j.FindCompleted([]string{r.ID}, id); ok {
			t.Errorf("non-completed unit %s found", id)
		}
	}
	// Completed without a stored result is refused outright.
	g := unitFor(r.ID, "5", 1, "task five")
	j.StartUnit(g)
	if err := j.FinishUnit(r.ID, g.UnitID, Outcome{Status: UnitCompleted, Result: strings.Repeat("0", 64)}); err == nil {
		t.Error("completed without its result blob accepted")
	}
	// Finishing twice, or a unit that is not running, fails.
	if err := j.FinishUnit(r.ID, f.UnitID, Outcome{Status: UnitFailed}); !errors.Is(err, ErrNotFound) {
		t.Errorf("second finish: %v", err)
	}
	// Starting the same unit twice in a run fails.
	if err := j.StartUnit(u); err == nil {
		t.Error("duplicate unit row accepted")
	}
	checkClean(t, j)
}

func TestLineageAndFindCompleted(t *testing.T) {
	j := openT(t, newRepo(t))
	a := mustRun(t, j, "")
	b := mustRun(t, j, a.ID)
	c := mustRun(t, j, b.ID)
	sib := mustRun(t, j, a.ID) // a sibling of b

	ids, err := j.LineageIDs(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != strings.Join([]string{c.ID, b.ID, a.ID}, ",") {
		t.Fatalf("lineage = %v", ids)
	}

	ua := complete(t, j, unitFor(a.ID, "1", 1, "one"))
	us := complete(t, j, unitFor(sib.ID, "2", 1, "two"))
	// In b, task 1 replays from a; the replay points at the original.
	rb, err := j.AddReplayedUnit(b.ID, ua.UnitID, &ua)
	if err != nil {
		t.Fatal(err)
	}
	if rb.ReplayedFromRun != a.ID || rb.ReplayedFromUnit != ua.UnitID {
		t.Errorf("replayed_from = %s/%s", rb.ReplayedFromRun, rb.ReplayedFromUnit)
	}

	got, ok, err := j.FindCompleted(ids, ua.Identity)
	if err != nil || !ok {
		t.Fatalf("FindCompleted: %v %v", ok, err)
	}
	if got.RunID != b.ID { // the nearest run of the lineage
		t.Errorf("found in %s, want %s", got.RunID, b.ID)
	}
	// Replaying a replay still points at the live original.
	rc, err := j.AddReplayedUnit(c.ID, got.UnitID, got)
	if err != nil || rc.ReplayedFromRun != a.ID {
		t.Errorf("replay of replay: %+v %v", rc, err)
	}
	// The sibling's unit is outside c's lineage.
	if _, ok, _ := j.FindCompleted(ids, us.Identity); ok {
		t.Error("found a unit of a sibling run")
	}
	if _, ok, _ := j.FindCompleted([]string{sib.ID}, us.Identity); !ok {
		t.Error("sibling's own unit not found")
	}
	// A completed unit whose result blob went missing is not a hit.
	os.Chmod(filepath.Dir(mustPath(t, j, ua.Result)), 0o755)
	if err := os.Remove(mustPath(t, j, ua.Result)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := j.FindCompleted([]string{a.ID}, ua.Identity); ok {
		t.Error("unit without its result blob found")
	}
	ps, _ := j.Check(testDigest)
	if len(ps) == 0 {
		t.Error("Check missed the missing result blob")
	}
}

func mustPath(t testing.TB, j *Journal, h string) string {
	p, err := j.Blobs().Path(h)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClosestUnit(t *testing.T) {
	j := openT(t, newRepo(t))
	a := mustRun(t, j, "")
	b := mustRun(t, j, a.ID)
	complete(t, j, unitFor(a.ID, "2", 1, "v1"))
	complete(t, j, unitFor(a.ID, "2", 3, "v1"))
	complete(t, j, unitFor(b.ID, "2", 1, "v2"))
	lin := []string{b.ID, a.ID}
	cases := []struct {
		attempt     int
		wantRun     string
		wantAttempt int
	}{
		{1, b.ID, 1}, // same attempt, nearest run
		{3, a.ID, 3},
		{2, b.ID, 1}, // no attempt 2: tie between 1 and 3 goes to the lower
		{7, a.ID, 3},
	}
	for _, c := range cases {
		u, ok, err := j.ClosestUnit(lin, "2", "implement", c.attempt)
		if err != nil || !ok || u.RunID != c.wantRun || u.Attempt != c.wantAttempt {
			t.Errorf("attempt %d: got %v/%v (%v %v), want %s/%d", c.attempt, u.RunID, u.Attempt, ok, err, c.wantRun, c.wantAttempt)
		}
	}
	if _, ok, _ := j.ClosestUnit(lin, "9", "implement", 1); ok {
		t.Error("closest unit of an unknown task")
	}
}

func TestGatesBoundariesEvents(t *testing.T) {
	j := openT(t, newRepo(t))
	a := mustRun(t, j, "")
	b := mustRun(t, j, a.ID)
	for at := 1; at <= 3; at++ {
		if err := j.PutGate(Gate{RunID: a.ID, TaskID: "10", Attempt: at, Command: "go test", Passed: at == 3, ExitCode: 3 - at, Feedback: fmt.Sprint("fail ", at)}); err != nil {
			t.Fatal(err)
		}
	}
	g, ok, err := j.LastGate([]string{b.ID, a.ID}, "10")
	if err != nil || !ok || g.Attempt != 3 || !g.Passed {
		t.Errorf("LastGate = %+v %v %v", g, ok, err)
	}
	if err := j.PutGate(Gate{RunID: b.ID, TaskID: "10", Attempt: 3, Command: "go test", Passed: false, ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	if g, _, _ := j.LastGate([]string{b.ID, a.ID}, "10"); g.RunID != b.ID || g.Passed {
		t.Errorf("LastGate prefers the nearest run: %+v", g)
	}
	for i := range 3 {
		bd, err := j.PutBoundary(Boundary{RunID: a.ID, AfterTask: fmt.Sprint(i)})
		if err != nil || bd.Seq != i {
			t.Fatalf("boundary %d: seq %d, %v", i, bd.Seq, err)
		}
	}
	if _, err := j.PutBoundary(Boundary{RunID: a.ID, Snapshot: []byte("{not json")}); err == nil {
		t.Error("bad snapshot JSON accepted")
	}
	for i := range 3 {
		seq, err := j.AppendEvent(b.ID, "task_started", []byte(fmt.Sprintf(`{"i":%d}`, i)))
		if err != nil || seq != i {
			t.Fatalf("event %d: %d %v", i, seq, err)
		}
	}
	checkClean(t, j)
	// A gap in boundary seqs is reported.
	if _, err := j.st.db.Exec(`DELETE FROM boundaries WHERE run_id = ? AND seq = 1`, a.ID); err != nil {
		t.Fatal(err)
	}
	ps, _ := j.Check(testDigest)
	if len(ps) != 1 || ps[0].Kind != "boundary" {
		t.Errorf("problems = %v", ps)
	}
}

func TestCheckFindsBrokenInvariants(t *testing.T) {
	j := openT(t, newRepo(t))
	r := mustRun(t, j, "")
	u := complete(t, j, unitFor(r.ID, "1", 1, "one"))
	j.PutTask(Task{RunID: r.ID, TaskID: "1", Ordinal: 1, Status: TaskRunning})
	j.StartUnit(unitFor(r.ID, "2", 1, "two"))
	j.FinishRun(r.ID, "DONE", 0, time.Time{})
	if _, err := j.st.db.Exec(`UPDATE units SET preimage = ? WHERE unit_id = ?`, []byte(`{"tampered":true}`), u.UnitID); err != nil {
		t.Fatal(err)
	}
	ps, err := j.Check(testDigest)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, p := range ps {
		kinds = append(kinds, p.Kind)
	}
	sort.Strings(kinds)
	if strings.Join(kinds, ",") != "identity,task,unit" {
		t.Errorf("problems = %v", ps)
	}
}

func TestRunsListing(t *testing.T) {
	j := openT(t, newRepo(t))
	t0 := time.Date(2025, 11, 30, 5, 0, 0, 0, time.UTC)
	var ids []string
	for i, plan := range []string{"a.md", "b.md", "a.md"} {
		r := &Run{PlanPath: plan, StartedAt: t0.Add(time.Duration(i) * time.Minute)}
		if err := j.CreateRun(r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	rs, _ := j.ListRuns()
	if len(rs) != 3 || rs[0].ID != ids[2] || rs[2].ID != ids[0] {
		t.Errorf("ListRuns not newest first: %v", rs)
	}
	if r, _ := j.LatestRun("b.md"); r.ID != ids[1] {
		t.Errorf("LatestRun(b.md) = %s", r.ID)
	}
	if r, _ := j.LatestRun(""); r.ID != ids[2] {
		t.Errorf("LatestRun() = %s", r.ID)
	}
	if _, err := j.LatestRun("zz.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("LatestRun(unknown) = %v", err)
	}
	if _, err := j.GetRun("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRun(nope) = %v", err)
	}
	// Unique prefixes resolve; all three ids share the date prefix.
	if r, err := j.ResolveRun(ids[1][:18]); err != nil || r.ID != ids[1] {
		t.Errorf("ResolveRun(prefix) = %v, %v", r, err)
	}
	if _, err := j.ResolveRun("r-2025"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if err := j.CreateRun(&Run{ID: ids[0]}); err == nil {
		t.Error("duplicate run id accepted")
	}
	if err := j.CreateRun(&Run{ParentID: "missing"}); err == nil {
		t.Error("run with an unknown parent accepted")
	}
}

// snapshotTree maps every path under root to its bytes (directories to "").
func snapshotTree(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			m[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		m[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func diffTrees(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, "removed "+k)
		} else if v != w {
			d = append(d, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	sort.Strings(d)
	return d
}

func readEverything(t testing.TB, j *Journal) {
	t.Helper()
	rs, err := j.ListRuns()
	if err != nil || len(rs) == 0 {
		t.Fatalf("ListRuns: %v %v", rs, err)
	}
	for _, r := range rs {
		ids, err := j.LineageIDs(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		us, err := j.Units(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if _, _, err := j.FindCompleted(ids, u.Identity); err != nil {
				t.Fatal(err)
			}
			if _, _, err := j.ClosestUnit(ids, u.TaskID, u.Role, u.Attempt); err != nil {
				t.Fatal(err)
			}
			if u.Result != "" {
				if _, err := j.ReadBlob(u.Result); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := j.Tasks(r.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Gates(r.ID, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Boundaries(r.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Events(r.ID); err != nil {
			t.Fatal(err)
		}
	}
	checkClean(t, j)
}

func TestReadOnlyWritesNothing(t *testing.T) {
	root := newRepo(t)
	// No journal: ErrNoJournal and no state directory.
	before := snapshotTree(t, root)
	if _, err := OpenReadOnly(root); !errors.Is(err, ErrNoJournal) {
		t.Fatalf("OpenReadOnly without a journal: %v", err)
	}
	if d := diffTrees(before, snapshotTree(t, root)); len(d) > 0 {
		t.Fatalf("OpenReadOnly without a journal wrote: %v", d)
	}

	j := openT(t, root)
	a := mustRun(t, j, "")
	complete(t, j, unitFor(a.ID, "1", 1, "one"))
	b := mustRun(t, j, a.ID)
	j.PutTask(Task{RunID: b.ID, TaskID: "1", Ordinal: 1, Status: TaskDone})
	j.PutBoundary(Boundary{RunID: b.ID})
	j.AppendEvent(b.ID, "run_finished", nil)
	j.FinishRun(b.ID, "DONE", 0, time.Time{})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	before = snapshotTree(t, root)
	for range 2 {
		r, err := OpenReadOnly(root)
		if err != nil {
			t.Fatal(err)
		}
		readEverything(t, r)
		if err := r.PutTask(Task{RunID: b.ID, TaskID: "2", Status: TaskDone}); !errors.Is(err, ErrReadOnly) {
			t.Errorf("write through a read-only journal: %v", err)
		}
		if _, err := r.PutBlob([]byte("new")); !errors.Is(err, ErrReadOnly) {
			t.Errorf("blob write through a read-only journal: %v", err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if d := diffTrees(before, snapshotTree(t, root)); len(d) > 0 {
		t.Errorf("read-only use changed the repository: %v", d)
	}
}

func TestReadOnlyWhileWriterOpen(t *testing.T) {
	root := newRepo(t)
	w := openT(t, root)
	a := mustRun(t, w, "")
	complete(t, w, unitFor(a.ID, "1", 1, "one"))
	r, err := OpenReadOnly(root)
	if err != nil {
		t.Fatal(err)
	}
	// The reader sees what the writer committed, including the WAL's tail.
	if us, err := r.Units(a.ID); err != nil || len(us) != 1 {
		t.Fatalf("reader sees %d units, %v", len(us), err)
	}
	complete(t, w, unitFor(a.ID, "2", 1, "two"))
	if us, _ := r.Units(a.ID); len(us) != 2 {
		t.Errorf("reader sees %d units after a second write", len(us))
	}
	r.Close()
	w.Close()
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(filepath.Join(w.Dir(), "state.db"+suffix)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("state.db%s left after the writer's Close: %v", suffix, err)
		}
	}
}

func TestConcurrentReaders(t *testing.T) {
	root := newRepo(t)
	w := openT(t, root)
	run := mustRun(t, w, "")
	const n = 60
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 16)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				r, err := OpenReadOnly(root)
				if err != nil {
					errs <- err
					return
				}
				us, err := r.Units(run.ID)
				r.Close()
				if err != nil {
					errs <- err
					return
				}
				if len(us) < last {
					errs <- fmt.Errorf("units went from %d to %d", last, len(us))
					return
				}
				last = len(us)
				for _, u := range us {
					if u.Status == UnitCompleted && u.Result == "" {
						errs <- fmt.Errorf("reader saw a completed unit without result")
						return
					}
				}
			}
		}()
	}
	for i := range n {
		complete(t, w, unitFor(run.ID, fmt.Sprint(i), 1, "t"))
		w.AppendEvent(run.ID, "unit_finished", nil)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkClean(t, w)
}

func TestBatch(t *testing.T) {
	j := openT(t, newRepo(t))
	a := mustRun(t, j, "")
	b := mustRun(t, j, a.ID)
	u := complete(t, j, unitFor(a.ID, "1", 1, "one"))
	lin := []string{b.ID, a.ID}
	// A failing batch leaves nothing behind.
	boom := errors.New("boom")
	err := j.Batch(false, func(w *Journal) error {
		if _, err := w.AddReplayedUnit(b.ID, u.UnitID, &u); err != nil {
			return err
		}
		if err := w.PutTask(Task{RunID: b.ID, TaskID: "1", Ordinal: 1, Status: TaskDone, Source: SourceReplayed}); err != nil {
			return err
		}
		// Reads inside the batch see its writes.
		if got, ok, _ := w.FindCompleted(lin, u.Identity); !ok || got.RunID != b.ID {
			t.Errorf("inside the batch: %+v %v", got, ok)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Batch = %v", err)
	}
	if us, _ := j.Units(b.ID); len(us) != 0 {
		t.Errorf("rolled-back batch left %d units", len(us))
	}
	if ts, _ := j.Tasks(b.ID); len(ts) != 0 {
		t.Errorf("rolled-back batch left %d tasks", len(ts))
	}
	// A durable batch commits everything, durable writes included.
	err = j.Batch(true, func(w *Journal) error {
		if _, err := w.AddReplayedUnit(b.ID, u.UnitID, &u); err != nil {
			return err
		}
		if _, err := w.PutBoundary(Boundary{RunID: b.ID}); err != nil {
			return err
		}
		_, err := w.AppendEvent(b.ID, "unit_replayed", nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if us, _ := j.Units(b.ID); len(us) != 1 || !us[0].Replayed() {
		t.Errorf("units after batch: %+v", us)
	}
	checkClean(t, j)
}
