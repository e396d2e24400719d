package loop

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
)

// A resume whose plan, settings and tree are as its parent left them is
// answered without a run: the parent's verdict and report, one
// nothing_changed event, and nothing written to the journal or the refs.
func TestResumeUpToDate(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	repo, parent := rsBase(t, rsPlan(3, "Shared context."), s)
	before := gitDirContents(t, repo)

	rec := &rsRecorder{}
	out, err := Run(t.Context(), Options{Settings: s, RepoRoot: repo, Parent: parent, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	if !out.UpToDate || !out.NoOp || out.RunID != parent || out.Verdict != "DONE" || out.Headline != "DONE 3/3" {
		t.Fatalf("resume: UpToDate=%v NoOp=%v run %q %s %q; want the parent's DONE 3/3 answered without a run",
			out.UpToDate, out.NoOp, out.RunID, out.Verdict, out.Headline)
	}
	if want := filepath.Join(repo, ".git", "implloop", "runs", parent, "report.md"); out.ReportPath != want {
		t.Errorf("report %q, want the parent's %q", out.ReportPath, want)
	}
	if len(rec.ev) != 1 || rec.ev[0].Type != EvNothingChanged || rec.ev[0].RunID != parent || *rec.ev[0].Done != 3 || rec.ev[0].Count != 3 {
		t.Errorf("events %+v, want one nothing_changed of the parent, 3 of 3 done", rec.ev)
	}
	if after := gitDirContents(t, repo); !sameContents(before, after) {
		t.Errorf("the answer wrote to the git directory: %s", diffContents(before, after))
	}

	// A commit of the work changes no content: still up to date.
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "the work")
	if out, _ := rsRun(t, repo, s, parent); !out.UpToDate {
		t.Error("after committing the work: not up to date")
	}
}

// Whatever could change what a resume does sends it down the full path.
func TestResumeNotUpToDate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// change returns the settings of the resume (s, or a copy of it
		// changed).
		change func(t *testing.T, repo, parent string, s Settings) Settings
		// noop: the full resume still changes nothing.
		noop bool
	}{
		{name: "a task's output deleted", change: func(t *testing.T, repo, _ string, s Settings) Settings {
			if err := os.Remove(filepath.Join(repo, "out", "f2.txt")); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "a new file", change: func(t *testing.T, repo, _ string, s Settings) Settings {
			writeFile(t, filepath.Join(repo, "notes.txt"), "mine\n")
			return s
		}},
		{name: "a parent without an inputs digest", noop: true, change: func(t *testing.T, repo, _ string, s Settings) Settings {
			execSQL(t, repo, `UPDATE runs SET inputs = ''`)
			return s
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := rsBuiltin()
			repo, parent := rsBase(t, rsPlan(3, "Shared context."), s)
			rs := tc.change(t, repo, parent, s)
			out, _ := rsRun(t, repo, rs, parent)
			if out.UpToDate || out.RunID == parent || out.Verdict != "DONE" {
				t.Fatalf("resume: UpToDate=%v run %s %s; want a new DONE run", out.UpToDate, out.RunID, out.Verdict)
			}
			if out.NoOp != tc.noop {
				t.Errorf("NoOp=%v, want %v", out.NoOp, tc.noop)
			}
			// The run it made is the parent of the next: up to date now.
			if again, _ := rsRun(t, repo, rs, out.RunID); !again.UpToDate {
				t.Errorf("the resume after: not up to date")
			}
		})
	}
}

// A PARTIAL parent is never up to date (its blocked task runs again), and
// neither is a work tree whose lock another run holds: that resume fails
// as it always did.
func TestResumeUpToDateNeedsDoneAndTheLock(t *testing.T) {
	t.Parallel()
	s := rsBuiltin()
	s.MaxAttempts = 1
	repo, first := rsPartial(t, s)
	if out, _ := rsRun(t, repo, s, first); out.UpToDate {
		t.Error("a PARTIAL parent answered as up to date")
	}

	s = rsBuiltin()
	repo, parent := rsBase(t, rsPlan(2, "Shared context."), s)
	dirs, err := cache.StateDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := acquireLock(dirs.Lock, "r-other", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = Run(t.Context(), Options{Settings: s, RepoRoot: repo, Parent: parent})
	if locked := (*LockedError)(nil); !errors.As(err, &locked) {
		t.Errorf("resume while another run holds the lock: %v, want LockedError", err)
	}
}

func execSQL(t *testing.T, repo, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(repo, ".git", "implloop", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

// gitDirContents hashes every file under repo's .git by content (mtimes
// aside: git refreshes a split index's shared part when it reads it).
func gitDirContents(t *testing.T, repo string) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := filepath.Join(repo, ".git")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(root, p)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameContents(a, b map[string]string) bool { return diffContents(a, b) == "" }

func diffContents(a, b map[string]string) string {
	var d []string
	for p, h := range a {
		if b[p] != h {
			d = append(d, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, p+" (new)")
		}
	}
	return strings.Join(d, ", ")
}

// A resume whose inputs differ in nothing an identity covers (a setting no
// identity holds, plan bytes normalization forgives) replays everything:
// it is answered as an up-to-date one, without a run and writing nothing,
// however often it is asked (it used to journal a run each time, then say
// that nothing changed).
func TestResumeUpToDateOtherInputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, repo string, s Settings) Settings
	}{
		{"a setting", func(_ *testing.T, _ string, s Settings) Settings { s.MaxAttempts = 5; return s }},
		{"the plan's bytes", func(t *testing.T, repo string, s Settings) Settings {
			rsEditPlan(t, repo, func(p string) string { return p + "\n" })
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rsBuiltin()
			repo, parent := rsBase(t, rsPlan(3, "Shared context."), s)
			rs := tc.change(t, repo, s)
			before := gitDirContents(t, repo)
			for range 2 {
				out, err := Run(t.Context(), Options{Settings: rs, RepoRoot: repo, Parent: parent})
				if err != nil {
					t.Fatal(err)
				}
				if !out.UpToDate || out.RunID != parent || out.Verdict != "DONE" {
					t.Fatalf("resume: UpToDate=%v run %s %s; want the parent's answer", out.UpToDate, out.RunID, out.Verdict)
				}
			}
			if after := gitDirContents(t, repo); !sameContents(before, after) {
				t.Errorf("the answer wrote to the git directory: %s", diffContents(before, after))
			}
		})
	}
}
