package loop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
)

// A task that takes the journal away is blocked, never done, and the run
// stops there BLOCKED, with --on-blocked continue too, whether the agent
// or the gate removed it, and whether the task was blocked already.
func TestJournalTakenAway(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, agent, verify, want string
	}{
		{"agent removes it", `[ "$IMPLLOOP_TASK_ID" = 2 ] && rm -rf .git/implloop; echo ok > "out-$IMPLLOOP_TASK_ID.txt"`, "",
			"implloop's journal .git/implloop/state.db was removed during the task"},
		{"gate removes it", `echo ok > "out-$IMPLLOOP_TASK_ID.txt"`, `[ "$IMPLLOOP_TASK_ID" != 2 ] || rm -rf .git/implloop`,
			"implloop's journal .git/implloop/state.db was removed during the task"},
		{"agent replaces it", `[ "$IMPLLOOP_TASK_ID" = 2 ] && mv .git/implloop .git/im && cp -r .git/im .git/implloop; echo ok > "out-$IMPLLOOP_TASK_ID.txt"`, "",
			"implloop's journal .git/implloop/state.db was replaced during the task"},
		{"blocked already", `[ "$IMPLLOOP_TASK_ID" = 2 ] && rm -rf .git/implloop; echo ok > "out-$IMPLLOOP_TASK_ID.txt"`, `[ "$IMPLLOOP_TASK_ID" != 2 ]`,
			"implloop's journal .git/implloop/state.db was removed during the task; and the gate failed on 1 attempt(s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t, map[string]string{"plan.md": plainPlan(3)})
			agentPath, _ := fakeAgent(t, c.agent)
			s := settingsFor(agentPath)
			s.Verify, s.OnBlocked, s.MaxAttempts = c.verify, "continue", 1
			out := runIn(t, repo, s)
			if out.Verdict != "BLOCKED" || !out.Blocked || out.JournalGone == "" {
				t.Fatalf("verdict %s, blocked %v, journal gone %q", out.Verdict, out.Blocked, out.JournalGone)
			}
			if _, err := os.Stat(filepath.Join(repo, "out-3.txt")); err == nil {
				t.Error("task 3 ran after the journal went")
			}
			b := readFile(t, filepath.Join(repo, BlockedFile))
			if !strings.Contains(b, c.want) || strings.Contains(b, "implloop resume") {
				t.Errorf("BLOCKED.md:\n%s", b)
			}
			if got := out.Report.Outcome.Verdict; got != "BLOCKED" {
				t.Errorf("report verdict %s", got)
			}
			var task2 *string
			for _, rt := range out.Report.Tasks {
				if rt.ID == "2" {
					st := string(rt.Status)
					task2 = &st
					if rt.BlockReason != c.want {
						t.Errorf("task 2 block reason %q, want %q", rt.BlockReason, c.want)
					}
				}
			}
			if task2 == nil || *task2 != string(cache.TaskBlocked) {
				t.Errorf("task 2 status %v", task2)
			}
			if _, err := os.Stat(out.ReportPath); err != nil {
				t.Errorf("report: %v", err)
			}
		})
	}
}

// A journal left in place is never taken for gone: the check costs a stat
// per task that ran something, and nothing else changes.
func TestJournalInPlaceNotGone(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"plan.md": plainPlan(2)})
	agentPath, _ := fakeAgent(t, `rm -rf .implloop; echo ok > "out-$IMPLLOOP_TASK_ID.txt"`)
	out := runIn(t, repo, settingsFor(agentPath))
	if out.Verdict != "DONE" || out.JournalGone != "" {
		t.Fatalf("verdict %s, journal gone %q", out.Verdict, out.JournalGone)
	}
}

// TestWriteBackWithoutGit: when the boundary commits cannot be read at
// all (no repository there), every path is left alone with why, never
// counted as written back.
func TestWriteBackWithoutGit(t *testing.T) {
	t.Parallel()
	done, left := writeBack(t.Context(), t.TempDir(), []boundary.LostContent{{Path: "a.txt"}, {Path: "b.txt"}})
	if len(done) != 0 || len(left) != 2 || !strings.HasPrefix(left[0], "a.txt (") || left[0] == "a.txt ()" {
		t.Errorf("done %q, left %q: want both left alone, with why", done, left)
	}
}
