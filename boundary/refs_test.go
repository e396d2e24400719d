package boundary

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// countGit puts a git on PATH that notes each command's arguments (one
// line each, in the returned file) and runs the real git: the processes
// the code under test starts, counted. Not for parallel tests.
func countGit(t *testing.T) (log string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log = filepath.Join(bin, "calls")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// calls are the noted git commands starting with prefix (e.g.
// "update-ref"), since the file was last truncated.
func calls(t *testing.T, log, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	os.Remove(log)
	return out
}

// TestFirstBoundaryMovesRefsOnce: a run's first boundary moves the run's
// ref and its kept ref with one git, where nothing can tell that from
// two: no reflog of either, no reference-transaction hook. Where one can
// (core.logAllRefUpdates=always, set as an agent would between runs; a
// hook; a reflog already there), each moves in its own transaction, with
// its own reflog message, as before.
func TestFirstBoundaryMovesRefsOnce(t *testing.T) {
	r := newTestRepo(t)
	r.write("plan.md", "- [ ] Task 1\n")
	r.write("a.txt", "a\n")
	r.commitAll("init")
	log := countGit(t)
	k := Keep{Plan: "plan.md"}
	first := func(run string) Snapshot {
		t.Helper()
		s := r.take(WithRun(run), WithLabel("before the first task"), WithExclude("plan.md"), WithKeep(k))
		if got := strings.TrimSpace(r.git("rev-parse", RunRef(run))); got != s.Commit {
			t.Errorf("%s at %s, want %s", RunRef(run), got, s.Commit)
		}
		if got := strings.TrimSpace(r.git("rev-parse", KeptRef(run))); s.Kept == "" || got != s.Kept {
			t.Errorf("%s at %s, want %s", KeptRef(run), got, s.Kept)
		}
		return s
	}
	reflog := func(ref string) string {
		t.Helper()
		out, _ := r.gitErr(nil, "reflog", "show", "--format=%gs", ref, "--")
		return strings.TrimSpace(out)
	}

	s0 := first("quiet")
	if got := calls(t, log, "update-ref"); len(got) != 1 || !strings.Contains(got[0], "--stdin") {
		t.Errorf("quiet first boundary: update-ref %q, want one with --stdin", got)
	}
	if reflog(RunRef("quiet")) != "" || reflog(KeptRef("quiet")) != "" {
		t.Error("reflogs written where git would write none")
	}

	// Later boundaries move the run's ref alone, as before.
	r.write("a.txt", "b\n")
	r.take(WithRun("quiet"), WithLabel("after task 1"), WithExclude("plan.md"), WithKeep(k), WithPrev(s0))
	if got := calls(t, log, "update-ref"); len(got) != 1 || strings.Contains(got[0], "--stdin") {
		t.Errorf("later boundary: update-ref %q, want the run's ref's alone", got)
	}

	r.git("config", "core.logAllRefUpdates", "always")
	first("logged")
	if got := calls(t, log, "update-ref"); len(got) != 2 {
		t.Errorf("logged first boundary: update-ref %q, want two", got)
	}
	if got := reflog(RunRef("logged")); got != "implloop: before the first task" {
		t.Errorf("reflog of the run's ref %q", got)
	}
	if got := reflog(KeptRef("logged")); got != "implloop: kept" {
		t.Errorf("reflog of the kept ref %q", got)
	}
	r.git("config", "core.logAllRefUpdates", "true") // as git init writes it

	// A reflog there before the run's ref (git appends to one there).
	os.MkdirAll(filepath.Join(r.dir, ".git", "logs", "refs", "implloop", "runs"), 0o755)
	os.WriteFile(filepath.Join(r.dir, ".git", "logs", "refs", "implloop", "runs", "made"), nil, 0o644)
	calls(t, log, "")
	first("made")
	if got := calls(t, log, "update-ref"); len(got) != 2 {
		t.Errorf("first boundary with a reflog there: update-ref %q, want two", got)
	}
	if got := reflog(RunRef("made")); got != "implloop: before the first task" {
		t.Errorf("reflog of the run's ref %q", got)
	}

	// A reference-transaction hook sees two transactions, as before.
	hook := filepath.Join(r.dir, ".git", "hooks", "reference-transaction")
	seen := filepath.Join(t.TempDir(), "seen")
	r.writeMode(".git/hooks/reference-transaction", "#!/bin/sh\n[ \"$1\" = committed ] && echo committed >> '"+seen+"'\nexit 0\n", 0o755)
	first("hooked")
	if got := calls(t, log, "update-ref"); len(got) != 2 {
		t.Errorf("hooked first boundary: update-ref %q, want two", got)
	}
	if b, _ := os.ReadFile(seen); strings.Count(string(b), "committed") != 2 {
		t.Errorf("the hook saw %q, want two transactions", b)
	}
	os.Remove(hook)
}

// TestMoveRefsFallsBack: a batch whose check fails moves nothing, and the
// moves are then made one by one as before: the run's ref only from the
// value it held (else the boundary fails, the kept ref untouched), the
// kept ref from anywhere.
func TestMoveRefsFallsBack(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	c1 := r.commitAll("one")
	r.write("a.txt", "b\n")
	c2 := r.commitAll("two")
	g, err := openGit(context.Background(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	run, kept := RunRef("x"), KeptRef("x")
	r.git("update-ref", kept, c1) // moved by someone: the batch's check fails
	err = g.moveRefs([]refMove{
		{ref: run, id: c2, old: "", msg: "implloop: b", wrap: "boundary"},
		{ref: kept, id: c2, old: "", msg: "implloop: kept", anyOld: true, wrap: "kept files"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{run, kept} {
		if got := strings.TrimSpace(r.git("rev-parse", ref)); got != c2 {
			t.Errorf("%s at %s, want %s", ref, got, c2)
		}
	}
	// The run's ref moved meanwhile: an error, the kept ref not moved.
	err = g.moveRefs([]refMove{
		{ref: run, id: c1, old: c1, msg: "implloop: b", wrap: "boundary"},
		{ref: kept, id: c1, old: c2, msg: "implloop: kept", anyOld: true, wrap: "kept files"},
	})
	if err == nil || !strings.HasPrefix(err.Error(), "boundary: ") {
		t.Errorf("moving the run's ref from where it is not: %v", err)
	}
	if got := strings.TrimSpace(r.git("rev-parse", kept)); got != c2 {
		t.Errorf("kept ref moved to %s after the run's ref failed", got)
	}
}
