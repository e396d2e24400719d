package loop

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestParallelDiscardAttributedByContent is issue 26's "--jobs blames the
// wrong task": task 2's agent, running ahead in its worktree, deletes
// what task 1 left uncommitted in the main tree, by its absolute path.
// The boundary after task 2 (whose turn comes first) sees it. When task
// 3's own work deleted the file too, the content says it is task 3's:
// task 3 is blocked at its turn, task 2 is done. When it did not, the
// content cannot tell: tasks 2, 3 and 4 are all blocked, never task 2
// alone while task 3 passes. Either way restore brings the file back from
// the block's task.
func TestParallelDiscardAttributedByContent(t *testing.T) {
	for _, c := range []struct {
		name    string
		culprit string // what task 3's agent runs
		want    map[string]string
	}{
		{"by content", `rm -f keep.txt; rm -f "$MAIN/keep.txt"`,
			map[string]string{"1": "done", "2": "done", "3": "blocked", "4": "done"}},
		{"unknown", `rm -f "$MAIN/keep.txt"`,
			map[string]string{"1": "done", "2": "blocked", "3": "blocked", "4": "blocked"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t, map[string]string{"plan.md": parPlan("1", "2[P]", "3[P]", "4[P]")})
			agentPath, _ := parAgent(t, map[string]string{
				"1": "echo keep > keep.txt",
				// Task 2's call returns after task 3's has deleted the
				// file: its turn's boundary sees it gone.
				"2": "sleep 1; echo two > two.txt",
				"3": "MAIN=" + shellQuote(repo) + "; " + c.culprit + "; echo three > three.txt",
				"4": "sleep 0.2; echo four > four.txt",
			})
			s := settingsFor(agentPath)
			s.Jobs, s.MaxAttempts, s.OnBlocked = 3, 1, "continue"
			out := runIn(t, repo, s)
			rows := taskRows(t, openJournal(t, repo), out.RunID)
			for id, want := range c.want {
				if got := string(rows[id].Status); got != want {
					t.Errorf("task %s: %s (%q), want %s", id, got, rows[id].BlockReason, want)
				}
			}
			blocked := readFile(t, filepath.Join(repo, BlockedFile))
			if !strings.Contains(blocked, "keep.txt") || !strings.Contains(blocked, "implloop restore --run "+out.RunID+" --task 3") {
				t.Errorf("BLOCKED.md does not name keep.txt and task 3's restore:\n%s", blocked)
			}
			if !strings.Contains(rows["3"].BlockReason, "while its call ran ahead") {
				t.Errorf("task 3's reason: %q", rows["3"].BlockReason)
			}
			lost, err := lostContent(openJournal(t, repo), out.RunID, "3", nil)
			if err != nil || len(lost) != 1 || lost[0].Path != "keep.txt" {
				t.Errorf("task 3's lost content: %+v, %v", lost, err)
			}
		})
	}
}
