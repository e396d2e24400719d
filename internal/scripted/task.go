package scripted

import (
	"encoding/json"
	"strings"
)

// FencedJSON returns the bodies of the fenced blocks of s whose info string
// is "json", honouring fence length (a longer fence may hold shorter runs).
func FencedJSON(s string) []string {
	lines := strings.Split(s, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		n := len(l) - len(strings.TrimLeft(l, "`"))
		if n < 3 || strings.TrimSpace(l[n:]) != "json" {
			continue
		}
		fence := l[:n]
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			t := strings.TrimRight(lines[j], " \t\r")
			if strings.HasPrefix(t, fence) && strings.Trim(t, "`") == "" {
				break
			}
			body = append(body, lines[j])
		}
		if j < len(lines) {
			out = append(out, strings.Join(body, "\n"))
		}
		i = j
	}
	return out
}

// ContextJSON decodes the first fenced json block of prompt that decodes
// into v, and reports whether there was one.
func ContextJSON(prompt string, v any) bool {
	for _, body := range FencedJSON(prompt) {
		if json.Unmarshal([]byte(body), v) == nil {
			return true
		}
	}
	return false
}

// TaskText is the task text implloop attached to prompt (the
// "task"."text" field of the first fenced json block that has one), or the
// whole prompt when no block has it.
func TaskText(prompt string) string {
	for _, body := range FencedJSON(prompt) {
		var ctx struct {
			Task struct {
				Text string `json:"text"`
			} `json:"task"`
		}
		if json.Unmarshal([]byte(body), &ctx) == nil && ctx.Task.Text != "" {
			return ctx.Task.Text
		}
	}
	return prompt
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
