// Package extractor turns a parsed plan and a task range into the tasks the
// loop sees, in plan order: id, title, text, dependencies and verify command.
package extractor

// Task is one task as the loop sees it. Text is the exact source bytes of
// the task's span in the plan file (CRLF line endings turned into LF so that
// a CRLF file and its LF twin extract identically).
type Task struct {
	ID      string   `json:"id"`      // "10", "3.2", "T010", or the ordinal
	Ordinal int      `json:"ordinal"` // 1-based position among all the plan's tasks
	Title   string   `json:"title"`
	Text    string   `json:"text"`
	Line    int      `json:"line"`     // first line (1-based)
	EndLine int      `json:"end_line"` // last line (inclusive)
	Checked bool     `json:"checked"`  // `- [x]` in the plan
	Deps    []string `json:"deps,omitempty"`
	Verify  string   `json:"verify,omitempty"` // the task's own ```verify block
}

// Selection is what the loop runs: the plan's facts and the tasks in range.
type Selection struct {
	PlanPath       string // as given by the user
	PlanSHA256     string // hex sha256 of the raw plan bytes
	Preamble       string // text before the first task (LF line endings)
	PreambleSHA256 string // hex sha256 of Preamble
	Count          int    // number of tasks in the whole plan
	Tasks          []Task // the selected tasks, in plan order
}
