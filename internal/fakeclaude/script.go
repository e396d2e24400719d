package fakeclaude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
func (r *Request) ContextJSON(v any) bool {
	for _, body := range fencedJSON(r.Prompt()) {
		if json.Unmarshal([]byte(body), v) == nil {
			return true
		}
	}
	return false
}

// TaskText is the task text implloop attached to the prompt (the
// "task"."text" field of the first fenced json block that has one), or the
// whole prompt when no block has it.
func (r *Request) TaskText() string {
	for _, body := range fencedJSON(r.Prompt()) {
		var ctx struct {
			Task struct {
				Text string `json:"text"`
			} `json:"task"`
		}
		if json.Unmarshal([]byte(body), &ctx) == nil && ctx.Task.Text != "" {
			return ctx.Task.Text
		}
	}
	return r.Prompt()
}

// Turns answers the n-th agent turn of each conversation (n =
// Request.Turn(), 0 for the first call of a prompt) with turns[n], and
// every turn past the last with Reply("done").
func Turns(turns ...Handler) Handler {
	return func(r *Request) Response {
		if n := r.Turn(); n < len(turns) {
			return turns[n](r)
		}
		return Reply("done")
	}
}

// FileOp is a file a task asks to be written, with a path relative to the
// repository.
type FileOp struct {
	Path    string
	Content string
}

// FileOps reads the files a task text asks for, in order:
//   - a line "WRITE rel/path text..." asks for rel/path holding the rest of
//     the line and a newline ("WRITE out/f1.txt hello" -> "hello\n");
//   - a fenced block whose info string has a word "path=rel/path" asks for
//     rel/path holding the block's body (as the builtin agent reads it).
func FileOps(text string) []FileOp {
	var ops []FileOp
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r")
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "WRITE "); ok {
			path, content, _ := strings.Cut(strings.TrimSpace(rest), " ")
			ops = append(ops, FileOp{Path: path, Content: content + "\n"})
			continue
		}
		fence, info, ok := openingFence(line)
		if !ok {
			continue
		}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			t := strings.TrimSpace(strings.TrimRight(lines[j], "\r"))
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				break
			}
			body = append(body, strings.TrimRight(lines[j], "\r"))
		}
		for _, w := range strings.Fields(info) {
			if p, ok := strings.CutPrefix(w, "path="); ok && p != "" {
				c := strings.Join(body, "\n")
				if len(body) > 0 {
					c += "\n"
				}
				ops = append(ops, FileOp{Path: p, Content: c})
			}
		}
		i = j
	}
	return ops
}

// openingFence reports a fence line (``` or ~~~, three or more, indented
// at most three spaces): the fence itself and its info string.
func openingFence(line string) (fence, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", false
	}
	n := len(t) - len(strings.TrimLeft(t, t[:1]))
	if n < 3 {
		return "", "", false
	}
	return t[:n], strings.TrimSpace(t[n:]), true
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
	ops := FileOps(r.TaskText())
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
