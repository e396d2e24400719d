package loop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/report"
)

// parAgent is an agent that logs "start ID" and "end ID" (one line each,
// appended: atomic) around running $SCRIPTS/ID-ATTEMPT.sh, else
// $SCRIPTS/ID.sh, in its working directory.
func parAgent(t testing.TB, scripts map[string]string) (agentPath, order string) {
	t.Helper()
	dir := t.TempDir()
	sdir := filepath.Join(dir, "scripts")
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range scripts {
		writeFile(t, filepath.Join(sdir, name+".sh"), body+"\n")
	}
	order = filepath.Join(dir, "order")
	agentPath = filepath.Join(dir, "agent.sh")
	writeFile(t, agentPath, "#!/bin/sh\ncat >/dev/null\n"+
		"echo \"start $IMPLLOOP_TASK_ID\" >> "+shellQuote(order)+"\n"+
		"S="+shellQuote(sdir)+"\n"+
		"if [ -f \"$S/$IMPLLOOP_TASK_ID-$IMPLLOOP_ATTEMPT.sh\" ]; then . \"$S/$IMPLLOOP_TASK_ID-$IMPLLOOP_ATTEMPT.sh\"\n"+
		"elif [ -f \"$S/$IMPLLOOP_TASK_ID.sh\" ]; then . \"$S/$IMPLLOOP_TASK_ID.sh\"; fi\n"+
		"echo \"end $IMPLLOOP_TASK_ID\" >> "+shellQuote(order)+"\n")
	if err := os.Chmod(agentPath, 0o755); err != nil {
		t.Fatal(err)
	}
	return agentPath, order
}

// parPlan is a heading plan: each spec is "ID", "ID[P]" or "ID:DEP,DEP".
func parPlan(specs ...string) string {
	var b strings.Builder
	b.WriteString("# Plan\n\nShared context.\n\n")
	for _, sp := range specs {
		id, deps, _ := strings.Cut(sp, ":")
		marker := ""
		if strings.HasSuffix(id, "[P]") {
			id, marker = strings.TrimSuffix(id, "[P]"), "[P] "
		}
		fmt.Fprintf(&b, "### Task %s: %sStep %s\n\nDo step %s.\n", id, marker, id, id)
		if deps != "" {
			fmt.Fprintf(&b, "\nDepends on %s.\n", deps)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func parRun(t *testing.T, repo, agentPath string, jobs int) *Outcome {
	t.Helper()
	s := settingsFor(agentPath)
	s.Jobs = jobs
	s.OnBlocked = "continue"
	out := runIn(t, repo, s)
	if got := git(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees left behind:\n%s", got)
	}
	if d := filepath.Join(repo, ".git", "implloop", "worktrees"); dirHasEntries(d) {
		t.Errorf("%s still has entries", d)
	}
	return out
}

func dirHasEntries(d string) bool {
	es, _ := os.ReadDir(d)
	return len(es) > 0
}

// No task starts before what it waits for has ended, and the tasks of a
// wave do run at once.
func TestParallelOrder(t *testing.T) {
	t.Parallel()
	for _, specs := range [][]string{
		{"1", "2[P]", "3[P]", "4[P]", "5"},
		{"1", "2:1", "3:1", "4:2,3", "5"},
		{"1[P]", "2[P]", "3", "4[P]", "5[P]"},
	} {
		t.Run(strings.Join(specs, " "), func(t *testing.T) {
			repo := newRepo(t, nil)
			plan := parPlan(specs...)
			writeFile(t, filepath.Join(repo, "plan.md"), plan)
			// Every task writes its own file, after a pause long enough
			// for the calls of a wave to overlap even on a loaded machine
			// (the worktrees are made one at a time).
			scripts := map[string]string{}
			for _, sp := range specs {
				id, _, _ := strings.Cut(strings.TrimSuffix(strings.Split(sp, ":")[0], "[P]"), ":")
				scripts[id] = "sleep 0.8; echo \"task " + id + "\" > f" + id + ".txt"
			}
			agentPath, order := parAgent(t, scripts)
			out := parRun(t, repo, agentPath, 4)
			if out.Verdict != "DONE" {
				t.Fatalf("verdict %s", out.Verdict)
			}
			var term bytes.Buffer
			// Which task of a wave takes lane 1 is the scheduler's: only
			// that there are lanes is asked.
			if err := report.Terminal(&term, out.Report); err != nil || !strings.Contains(term.String(), "lanes (tasks that ran at once):\n  lane 1: task ") || !strings.Contains(term.String(), "\n  lane 2: task ") {
				t.Errorf("the report does not draw the lanes: %v\n%s", err, term.String())
			}
			lines := strings.Split(strings.TrimSpace(readFile(t, order)), "\n")
			pos := map[string]int{}
			for i, l := range lines {
				pos[l] = i
			}
			sel, err := loadPlan(filepath.Join(repo, "plan.md"), "")
			if err != nil {
				t.Fatal(err)
			}
			after := extractor.After(sel.Tasks)
			for _, x := range sel.Tasks {
				for _, a := range after[x.ID] {
					if pos["end "+a] > pos["start "+x.ID] {
						t.Errorf("task %s started before task %s (which it waits for) ended: %v", x.ID, a, lines)
					}
				}
				if got := readFile(t, filepath.Join(repo, "f"+x.ID+".txt")); got != "task "+x.ID+"\n" {
					t.Errorf("f%s.txt = %q", x.ID, got)
				}
			}
			for _, w := range extractor.Waves(sel.Tasks) {
				if len(w) < 2 {
					continue
				}
				if pos["start "+w[1].ID] > pos["end "+w[0].ID] {
					t.Errorf("wave %s,%s did not run at once: %v", w[0].ID, w[1].ID, lines)
				}
			}
		})
	}
}

// parWave runs a plan of two [P] tasks with --jobs 2 in a repository of
// files: the tasks' agents run one and two (after a pause, so that they
// overlap). The run must end DONE.
func parWave(t *testing.T, files map[string]string, one, two string) (string, *Outcome) {
	t.Helper()
	repo := newRepo(t, files)
	writeFile(t, filepath.Join(repo, "plan.md"), parPlan("1[P]", "2[P]"))
	agentPath, _ := parAgent(t, map[string]string{"1": "sleep 0.2; " + one, "2": "sleep 0.2; " + two})
	out := parRun(t, repo, agentPath, 2)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	return repo, out
}

// Two tasks of a wave that change different lines of one file: both
// changes are in it.
func TestParallelCleanMerge(t *testing.T) {
	t.Parallel()
	repo, _ := parWave(t, map[string]string{"doc.txt": "a\nb\nc\nd\ne\nf\ng\n"},
		"sed 's/^a$/A/' doc.txt > doc.tmp && mv doc.tmp doc.txt",
		"sed 's/^g$/G/' doc.txt > doc.tmp && mv doc.tmp doc.txt")
	if got := readFile(t, filepath.Join(repo, "doc.txt")); got != "A\nb\nc\nd\ne\nf\nG\n" {
		t.Errorf("doc.txt = %q, want both edits", got)
	}
}

// Two tasks of a wave that change the same line: the second to settle
// conflicts, its attempt fails with the paths as feedback, and its next
// attempt runs on the merged tree.
func TestParallelConflict(t *testing.T) {
	t.Parallel()
	repo, out := parWave(t, map[string]string{"shared.txt": "line\n"}, "echo one > shared.txt", "echo two > shared.txt")
	if got := readFile(t, filepath.Join(repo, "shared.txt")); got != "two\n" {
		t.Errorf("shared.txt = %q, want task 2's second attempt on top of task 1", got)
	}
	j := openJournal(t, repo)
	us, err := j.Units(out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var a1 *cache.Unit
	for i := range us {
		if us[i].UnitID == "2/implement~a1" {
			a1 = &us[i]
		}
	}
	if a1 == nil || a1.Status != cache.UnitFailed || !strings.Contains(a1.Error, "conflicts") || !strings.Contains(a1.Error, "shared.txt") {
		t.Fatalf("task 2's first attempt: %+v, want failed with the conflict", a1)
	}
	if rows := taskRows(t, j, out.RunID); rows["2"].Attempts != 2 || rows["1"].Attempts != 1 {
		t.Errorf("attempts: task 1 %d, task 2 %d; want 1 and 2", rows["1"].Attempts, rows["2"].Attempts)
	}
}

// A task that, in its worktree, deletes what an earlier task left
// uncommitted discards it in the main tree when it merges: blocked, as in
// a serial run, with the path to restore.
func TestParallelDiscardIsBlocked(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), parPlan("1", "2[P]", "3[P]"))
	agentPath, _ := parAgent(t, map[string]string{
		"1": "echo keep > keep.txt",
		"2": "sleep 0.2; echo two > two.txt",
		"3": "sleep 0.2; rm -f keep.txt",
	})
	s := settingsFor(agentPath)
	s.Jobs, s.MaxAttempts = 3, 1
	out := runIn(t, repo, s)
	if out.Verdict != "PARTIAL" || !out.Blocked {
		t.Fatalf("verdict %s blocked %v, want PARTIAL and blocked", out.Verdict, out.Blocked)
	}
	blocked := readFile(t, filepath.Join(repo, BlockedFile))
	if !strings.Contains(blocked, "keep.txt") {
		t.Errorf("BLOCKED.md does not name keep.txt:\n%s", blocked)
	}
	if got := git(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees left behind:\n%s", got)
	}
}

// A task that commits in its worktree: the content arrives, uncommitted;
// the user's branch does not move.
func TestParallelCommitInWorktree(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), parPlan("1[P]", "2[P]"))
	head := git(t, repo, "rev-parse", "HEAD")
	agentPath, _ := parAgent(t, map[string]string{
		"1": "echo one > one.txt && git add one.txt && git -c user.name=a -c user.email=a@b commit -q -m one",
		"2": "echo two > two.txt",
	})
	out := parRun(t, repo, agentPath, 2)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	if got := git(t, repo, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved: %s -> %s", head, got)
	}
	if st := git(t, repo, "status", "--porcelain"); !strings.Contains(st, "?? one.txt") || !strings.Contains(st, "?? two.txt") {
		t.Errorf("status:\n%s", st)
	}
}

// Worktrees a killed run left are removed by the next run; the plan's
// tasks run serially with --jobs 1, with the same results.
func TestParallelStrayWorktreesAndJobs1(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), parPlan("1[P]", "2[P]"))
	dir, err := boundary.WorktreeDir(context.Background(), repo, "r-20260101-000000-dead")
	if err != nil {
		t.Fatal(err)
	}
	if err := boundary.AddWorktree(context.Background(), repo, filepath.Join(dir, "t-1"), git(t, repo, "rev-parse", "HEAD")); err != nil {
		t.Fatal(err)
	}
	agentPath, order := parAgent(t, map[string]string{"1": "echo one > one.txt", "2": "echo two > two.txt"})
	out := parRun(t, repo, agentPath, 1)
	if out.Verdict != "DONE" {
		t.Fatalf("verdict %s", out.Verdict)
	}
	if got := strings.Fields(readFile(t, order)); !slices.Equal(got, []string{"start", "1", "end", "1", "start", "2", "end", "2"}) {
		t.Errorf("--jobs 1 order %v", got)
	}
}

// A parallel run resumes serially with every unit replayed: how many ran
// at once is in no identity.
func TestParallelResumesSerially(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, nil)
	writeFile(t, filepath.Join(repo, "plan.md"), parPlan("1", "2[P]", "3[P]", "4"))
	agentPath, _ := parAgent(t, map[string]string{
		"1": "echo one > one.txt", "2": "sleep 0.2; echo two > two.txt",
		"3": "sleep 0.2; echo three > three.txt", "4": "echo four > four.txt",
	})
	base := parRun(t, repo, agentPath, 3)
	if base.Verdict != "DONE" {
		t.Fatalf("verdict %s", base.Verdict)
	}
	s := settingsFor(agentPath)
	s.OnBlocked = "continue"
	out, rec := rsRun(t, repo, s, base.RunID, func(o *Options) { o.Full = true })
	if live := rec.tasksWith(EvUnitStarted, ""); len(live) != 0 || !out.NoOp || out.Verdict != "DONE" {
		t.Errorf("serial resume: live %v NoOp=%v %s, want everything replayed", live, out.NoOp, out.Verdict)
	}
}

// TestParallelStopSettlesPaidCallsPastAReplay: a wave whose first task
// blocks (on_blocked stop) still settles the calls it made ahead for later
// tasks, past a task of the wave that was not called ahead (a resume's
// replay, or a task that will replay across runs): that one does not run,
// as the run stops; the paid call after it is journaled and merged.
func TestParallelStopSettlesPaidCallsPastAReplay(t *testing.T) {
	t.Parallel()
	plan := "# Plan\n\n- [ ] T001 [P] One\n- [ ] T002 [P] Two\n- [ ] T003 [P] Three\n"
	repo := newRepo(t, map[string]string{"plan.md": plan})
	agentPath, logDir := fakeAgent(t, `
	if [ "$IMPLLOOP_TASK_ID" = T001 ] && [ -e "$LOG/fail" ]; then exit 1; fi
	echo "$IMPLLOOP_TASK_ID" > "out-$IMPLLOOP_TASK_ID.txt"`)
	s := settingsFor(agentPath)
	s.Jobs, s.MaxAttempts = 3, 1
	first := runIn(t, repo, s)
	if first.Verdict != "DONE" {
		t.Fatalf("first run: %s", first.Verdict)
	}
	writeFile(t, filepath.Join(logDir, "fail"), "")
	writeFile(t, filepath.Join(repo, "plan.md"), strings.NewReplacer("One", "One, again", "Three", "Three, again").Replace(plan))
	if err := os.Remove(filepath.Join(repo, "out-T003.txt")); err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Options{Settings: s, RepoRoot: repo, Parent: first.RunID})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	checkJournal(t, repo)
	rows := taskRows(t, openJournal(t, repo), out.RunID)
	if rows["T001"].Status != "blocked" || rows["T002"].Status != "pending" || rows["T003"].Status != "done" {
		t.Errorf("statuses T001 %s, T002 %s, T003 %s; want blocked, pending (not run: the run stops), done (its paid call settled)",
			rows["T001"].Status, rows["T002"].Status, rows["T003"].Status)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(repo, "out-T003.txt"))); got != "T003" {
		t.Errorf("out-T003.txt = %q, want its settled work", got)
	}
}
