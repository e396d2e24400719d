package loop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BlockedFile is the file a block writes at the repo root. implloop refuses
// to resume while it exists, so the user reads it first.
const BlockedFile = "BLOCKED.md"

// blockInfo is what BLOCKED.md explains.
type blockInfo struct {
	RunID    string
	PlanPath string
	TaskID   string
	Title    string
	Attempts int
	Reason   string   // one line
	Gate     string   // the gate command, when the gate failed
	Output   string   // the gate output tail
	Lost     []string // paths the guard saw discarded
}

func writeBlocked(repoRoot string, b blockInfo) error {
	var s strings.Builder
	fmt.Fprintf(&s, "# BLOCKED: task %s", b.TaskID)
	if b.Title != "" {
		fmt.Fprintf(&s, " (%s)", b.Title)
	}
	fmt.Fprintf(&s, "\n\nRun `%s` stopped at task %s of `%s` after %d attempt(s).\n\n", b.RunID, b.TaskID, b.PlanPath, b.Attempts)
	fmt.Fprintf(&s, "## Why\n\n%s\n", b.Reason)
	if len(b.Lost) > 0 {
		s.WriteString("\nThe task discarded uncommitted work of earlier tasks. implloop kept a copy of each lost file:\n\n")
		for _, p := range b.Lost {
			fmt.Fprintf(&s, "- `%s`\n", p)
		}
	}
	if b.Gate != "" {
		fmt.Fprintf(&s, "\nThe gate `%s` failed. The end of its output:\n\n", b.Gate)
		fence := fenceFor(b.Output)
		fmt.Fprintf(&s, "%stext\n%s\n%s\n", fence, strings.TrimRight(b.Output, "\n"), fence)
	}
	s.WriteString("\n## Repair\n\n")
	n := 1
	step := func(format string, args ...any) {
		fmt.Fprintf(&s, "%d. "+format+"\n", append([]any{n}, args...)...)
		n++
	}
	if len(b.Lost) > 0 {
		step("Bring the lost files back: `implloop restore --run %s --task %s` (add `--force` to overwrite newer edits).", b.RunID, b.TaskID)
	}
	step("Fix the cause: the task's text in `%s`, the code, or the gate command.", b.PlanPath)
	step("Commit what is good (optional: implloop compares content, so committing never looks like a loss).")
	step("Remove this file: `rm %s`.", BlockedFile)
	step("Resume: `implloop resume --run %s`. Unchanged tasks replay from the journal; task %s runs its gate first and continues only if it still fails.", b.RunID, b.TaskID)
	return os.WriteFile(filepath.Join(repoRoot, BlockedFile), []byte(s.String()), 0o644)
}

// fenceFor returns a backtick fence longer than any backtick run in s.
func fenceFor(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			if run > longest {
				longest = run
			}
		} else {
			run = 0
		}
	}
	if longest < 3 {
		return "```"
	}
	return strings.Repeat("`", longest+1)
}
