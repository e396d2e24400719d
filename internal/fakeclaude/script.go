package fakeclaude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/internal/scripted"
)

// Prompt is the text Claude Code was given on stdin: the text blocks of
// the first user message, less the <system-reminder> blocks it adds.
func (r *Request) Prompt() string {
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		var parts []string
		for _, b := range m.Content {
			if b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// ContextJSON decodes the first fenced json block of the prompt (a fence of
// three or more backticks with info string "json") into v, and reports
// whether there was one that decoded.
func (r *Request) ContextJSON(v any) bool { return scripted.ContextJSON(r.Prompt(), v) }

// TaskText is the task text implloop attached to the prompt (the
// "task"."text" field of the first fenced json block that has one), or the
// whole prompt when no block has it.
func (r *Request) TaskText() string { return scripted.TaskText(r.Prompt()) }

// Turns answers the n-th agent turn of each conversation (n =
// Request.Turn(), 0 for the first call of a prompt) with turns[n], and
// every turn past the last with Reply("done").
func Turns(turns ...Handler) Handler {
	return scripted.Turns(Handler(func(*Request) Response { return Reply("done") }), turns...)
}

// WriteTask is an agent Handler that carries out the FileOps of the
// request's task text (see TaskText) with Claude Code's own tools, under
// the repository Claude Code reports (WorkingDir):
//   - first a Read of every target that already exists (Claude Code's
//     Write refuses to overwrite a file it has not read),
//   - then one Write per file, all in one turn,
//   - then, once the results are back, Reply("done").
//
// A task with no file to write is answered Reply("nothing to write").
func WriteTask(r *Request) Response {
	ops := scripted.FileOps(r.TaskText())
	if len(ops) == 0 {
		return Reply("nothing to write")
	}
	dir := r.WorkingDir()
	if dir == "" {
		return Reply("fakeclaude: the request names no working directory")
	}
	wrote, read := map[string]bool{}, map[string]bool{}
	for _, u := range r.ToolUses() {
		var in struct {
			FilePath string `json:"file_path"`
		}
		_ = json.Unmarshal(u.Input, &in)
		switch u.Name {
		case "Write":
			wrote[in.FilePath] = true
		case "Read":
			read[in.FilePath] = true
		}
	}
	if len(wrote) > 0 {
		return Reply("done")
	}
	var reads, writes []Content
	for _, op := range ops {
		abs := filepath.Join(dir, filepath.FromSlash(op.Path))
		if _, err := os.Stat(abs); err == nil && !read[abs] {
			reads = append(reads, ToolUse("Read", map[string]string{"file_path": abs}))
		}
		writes = append(writes, Write(abs, op.Content))
	}
	if len(reads) > 0 {
		return UseTools(reads...)
	}
	return UseTools(writes...)
}
