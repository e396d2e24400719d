package loop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/internal/bytepath"
	"github.com/implloop/implloop/internal/mdfence"
)

// BlockedFile is the file a block writes at the repo root. implloop refuses
// to resume while it exists, so the user reads it first.
const BlockedFile = "BLOCKED.md"

// blockInfo is what BLOCKED.md explains about one blocked task.
type blockInfo struct {
	RunID        string
	PlanPath     string
	TaskID       string
	Title        string
	Attempts     int
	Reason       string   // one line
	Gate         string   // the gate command, when the gate failed
	Output       string   // the gate output tail
	AgentFailure string   // why the agent call failed, when it did (with its stderr tail)
	NoGate       bool     // the task has no gate (no verify block, no --verify)
	Lost         []string // paths the guard saw discarded
	// LostKinds says what a lost path was when it was not a file of the
	// tree: "ignored" (one of the user's ignored files, kept by implloop),
	// "plan" (the plan file), "submodule:<path>" (inside that submodule).
	LostKinds map[string]string
	// Sandbox is the tool the task's calls ran in (--sandbox), "" none.
	Sandbox string
	// Interrupted: the task was interrupted (Ctrl-C) and the guard, run
	// at the interrupt, saw it discard work. Its status stays interrupted.
	Interrupted bool
	// JournalGone: the task took implloop's journal away (vanished.go).
	// Nothing can be resumed or restored through implloop then, so the
	// repair steps say what to do instead.
	JournalGone bool
	// Stash is a stash entry made during the run (an agent's `git stash`)
	// and still there when the task was blocked: the work it put away.
	Stash boundary.Stash
	// Unfinished is set when a resume (RunID) found, before running
	// anything, that the parent run (Unfinished) had stopped without
	// finishing task TaskID, and that work was discarded since the
	// parent's last boundary. The verdict is journaled on the resume's
	// first boundary, so the restore command names no task.
	Unfinished string
}

// writeBlocked writes BLOCKED.md for the run's blocks so far (more than
// one with --on-blocked continue): each task, why, and the repair steps.
func writeBlocked(repoRoot string, blocks []blockInfo) error {
	if len(blocks) == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(repoRoot, BlockedFile), []byte(blockedText(blocks)), 0o644)
}

// blockedText is BLOCKED.md for blocks: a heading naming the blocked
// tasks, what happened to each, then the steps to repair.
func blockedText(blocks []blockInfo) string {
	var s strings.Builder
	first := blocks[0]
	if len(blocks) == 1 {
		fmt.Fprintf(&s, "# BLOCKED: task %s", first.TaskID)
		if first.Title != "" {
			fmt.Fprintf(&s, " (%s)", first.Title)
		}
		s.WriteString("\n\n")
	} else {
		ids := make([]string, len(blocks))
		for i, b := range blocks {
			ids[i] = b.TaskID
		}
		fmt.Fprintf(&s, "# BLOCKED: tasks %s\n\n", strings.Join(ids, ", "))
	}
	for _, b := range blocks {
		h := "##"
		if len(blocks) > 1 {
			h = "###"
			fmt.Fprintf(&s, "## Task %s", b.TaskID)
			if b.Title != "" {
				fmt.Fprintf(&s, " (%s)", b.Title)
			}
			s.WriteString("\n\n")
		}
		writeBlock(&s, b, h)
	}
	writeRepair(&s, blocks)
	return s.String()
}

// writeBlock writes to s what happened to the task of block b, under
// headings of level h: how it came to be blocked, why, and what it lost,
// its gate or its agent said, a stash made meanwhile, a write its sandbox
// refused.
func writeBlock(s *strings.Builder, b blockInfo, h string) {
	switch {
	case b.Unfinished != "":
		fmt.Fprintf(s, "Run `%s` stopped without finishing task %s of `%s` (killed, or the machine went down), "+
			"so the guard never checked that task. This resume, run `%s`, compared the repository with `%s`'s last "+
			"boundary before running anything, found work discarded, and stopped.\n\n",
			b.Unfinished, b.TaskID, b.PlanPath, b.RunID, b.Unfinished)
	case b.Interrupted:
		fmt.Fprintf(s, "Task %s of `%s` was interrupted in run `%s`, and the guard, run at the interrupt, "+
			"found that it had discarded work.\n\n", b.TaskID, b.PlanPath, b.RunID)
	default:
		fmt.Fprintf(s, "Task %s of `%s` is blocked in run `%s` after %d attempt(s).\n\n", b.TaskID, b.PlanPath, b.RunID, b.Attempts)
	}
	fmt.Fprintf(s, "%s Why\n\n%s\n", h, b.Reason)
	if b.JournalGone {
		s.WriteString("\nimplloop keeps its journal in the git directory, and the task took it away: the record of this run " +
			"and of the runs before it is gone, so there is nothing to resume. The work tree is as the task left it.\n")
	}
	if len(b.Lost) > 0 {
		s.WriteString("\nThe task discarded work of earlier tasks (uncommitted, or in a commit it dropped). implloop kept a copy of each lost file:\n\n")
		for _, p := range b.Lost {
			fmt.Fprintf(s, "- `%s`%s\n", bytepath.Display(p), lostNote(b.LostKinds[p]))
		}
	}
	if b.Gate != "" {
		fmt.Fprintf(s, "\nThe gate `%s` failed. The end of its output:\n\n", b.Gate)
		writeFenced(s, b.Output)
	}
	if b.AgentFailure != "" {
		s.WriteString("\nThe agent call itself failed (no gate ran):\n\n")
		writeFenced(s, b.AgentFailure)
	}
	if b.Stash.Commit != "" {
		fmt.Fprintf(s, "\nA stash was made during the run (by the agent: implloop never stashes): `stash@{0}`, %q (commit %.12s). "+
			"`git stash show -p stash@{0}` shows what it put away; `git stash pop` brings it back into the tree, "+
			"`git stash drop` throws it away.", b.Stash.Subject, b.Stash.Commit)
		if len(b.Lost) > 0 {
			// Both write the same files: pop refuses ("already
			// exists, no checkout") once restore has written them.
			s.WriteString(" It may hold the lost files listed above: bring those back one way, not both " +
				"(`git stash pop` refuses to write over a file `implloop restore` brought back; " +
				"after the restore, `git stash show --include-untracked stash@{0}` says what else it holds).")
		}
		s.WriteString("\n")
	}
	if b.Sandbox != "" && refusedWrite(b.AgentFailure+b.Output) {
		fmt.Fprintf(s, "\nThe agent ran sandboxed (%s): a write it was refused (\"Read-only file system\", \"Operation not permitted\") "+
			"was outside what the sandbox lets it write. Change the task so its work stays in the tree, or allow the path "+
			"(`implloop resume --sandbox-allow PATH`); see \"Sandbox\" in docs/agents.md.\n", b.Sandbox)
	}
	s.WriteString("\n")
}

// writeRepair writes to s the numbered steps that repair blocks: bring
// lost files back, fix the cause, optionally start a task over, commit,
// remove BLOCKED.md, and resume (or start again, the journal gone).
func writeRepair(s *strings.Builder, blocks []blockInfo) {
	first := blocks[0]
	s.WriteString("## Repair\n\n")
	n := 1
	step := func(format string, args ...any) {
		fmt.Fprintf(s, "%d. "+format+"\n", append([]any{n}, args...)...)
		n++
	}
	gone := false
	for _, b := range blocks {
		gone = gone || b.JournalGone
		switch {
		case len(b.Lost) == 0:
		case b.JournalGone:
			// restore reads the lost paths from the journal; git still
			// has their content.
			step("Bring the lost files back from git: `git log --first-parent --format='%%h %%s' %s` lists a commit per boundary; "+
				"`git show <commit>:<path>` prints a file as it was there.", boundary.RunRef(b.RunID))
		case b.Unfinished != "":
			step("Bring the lost files back: `implloop restore --run %s` (add `--force` to overwrite newer edits). "+
				"If you removed them yourself on purpose between the runs, skip this step.", b.RunID)
		default:
			step("Bring the lost files back: `implloop restore --run %s --task %s` (add `--force` to overwrite newer edits).", b.RunID, b.TaskID)
		}
	}
	step("Fix the cause: the task's text in `%s`, the code, the gate command, or the agent's setup.", first.PlanPath)
	for _, b := range blocks {
		if b.JournalGone || b.Unfinished != "" || len(b.Lost) > 0 && b.Gate == "" && b.AgentFailure == "" {
			continue
		}
		// The failed attempts' edits stay in the tree, and the next
		// attempt starts from them; a fresh start is one command.
		step("Optional, to start task %s again from the tree as it was before it (its next attempt otherwise builds on "+
			"the failed attempts' edits): `implloop show %s --task %s --stat` lists what they changed; "+
			"`implloop restore --run %s --task %s --before` puts those paths back (or, by hand, `git checkout -- PATH` "+
			"for a tracked file, `rm PATH` for a new one).", b.TaskID, b.RunID, b.TaskID, b.RunID, b.TaskID)
	}
	// Removed before the commit, or `git add -A` would commit it.
	step("Remove this file: `rm %s`.", BlockedFile)
	step("Commit what is good (optional: implloop compares content, so committing never looks like a loss).")
	if gone {
		step("Start again: `implloop run %s`. With the journal gone every task runs live again; tick (`- [x]`) the tasks "+
			"whose work is done and committed to skip them.", first.PlanPath)
	} else {
		step("Resume: `implloop resume --run %s`. Unchanged tasks replay from the journal; %s.", first.RunID, onResume(blocks))
	}
}

// lostNote is what BLOCKED.md says of a lost path that was not a file of
// the tree, by its kind (blockInfo.LostKinds).
func lostNote(kind string) string {
	switch {
	case kind == "ignored":
		return " (ignored by git: implloop kept its bytes, locally; `git` alone cannot bring it back)"
	case kind == "plan":
		return " (the plan: deleted or rewritten beyond its boxes; implloop kept it as it was before the task)"
	case strings.HasPrefix(kind, "submodule:"):
		return fmt.Sprintf(" (uncommitted work in the submodule `%s`: implloop kept it in that repository's own boundaries)",
			bytepath.Display(strings.TrimPrefix(kind, "submodule:")))
	}
	return ""
}

// onResume says what the resume does with the blocked tasks (resume.go,
// startOf): a task with a gate re-runs it first; one without has nothing
// to re-run, so after an agent failure it goes on with a new attempt and
// otherwise (a guard block) its journaled attempt replays and it is done.
func onResume(blocks []blockInfo) string {
	var gated, failed, replayed, again []string
	for _, b := range blocks {
		switch {
		case b.Interrupted || b.Unfinished != "":
			again = append(again, b.TaskID)
		case !b.NoGate:
			gated = append(gated, b.TaskID)
		case b.AgentFailure != "":
			failed = append(failed, b.TaskID)
		default:
			replayed = append(replayed, b.TaskID)
		}
	}
	var out []string
	for _, g := range []struct {
		ids       []string
		one, many string
	}{
		{again, "task %s did not finish: it runs again, its unfinished agent call redone",
			"tasks %s did not finish: they run again, their unfinished agent calls redone"},
		{gated, "task %s runs its gate first and continues only if it still fails",
			"tasks %s run their gates first and continue only if they still fail"},
		{failed, "task %s has no gate: it goes on with a new agent call, told why the last one failed",
			"tasks %s have no gate: they go on with a new agent call, told why the last one failed"},
		{replayed, "task %s has no gate to re-run: its journaled attempt replays, no agent call, and it is done (nothing checks it again, so repair first)",
			"tasks %s have no gate to re-run: their journaled attempts replay, no agent call, and they are done (nothing checks them again, so repair first)"},
	} {
		if len(g.ids) > 0 {
			out = append(out, pick(g.ids, g.one, g.many))
		}
	}
	return strings.Join(out, "; ")
}

func pick(ids []string, one, many string) string {
	if len(ids) == 1 {
		return fmt.Sprintf(one, ids[0])
	}
	return fmt.Sprintf(many, strings.Join(ids, ", "))
}

// writeFenced writes text in a fenced block that no backtick run in it can
// close early.
func writeFenced(s *strings.Builder, text string) {
	fence := mdfence.For(text)
	fmt.Fprintf(s, "%stext\n%s\n%s\n", fence, strings.TrimRight(text, "\n"), fence)
}

// shownPaths is a list of paths as a person reads it (internal/bytepath).
func shownPaths(ps []string) string {
	shown := make([]string, len(ps))
	for i, p := range ps {
		shown[i] = bytepath.Display(p)
	}
	return strings.Join(shown, ", ")
}

// refusedWrite reports whether output holds the error a sandbox's refused
// write gives: EROFS or EBUSY (Linux), EPERM (macOS).
func refusedWrite(output string) bool {
	for _, e := range []string{"Read-only file system", "Device or resource busy", "Operation not permitted"} {
		if strings.Contains(output, e) {
			return true
		}
	}
	return false
}
