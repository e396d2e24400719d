package fakeopenai

import (
	"strings"

	"github.com/implloop/implloop/internal/scripted"
)

// Turns answers the n-th turn of each conversation (n = Request.Turn(), 0
// for the first call of a prompt) with turns[n], and every turn past the
// last with Reply("done").
func Turns(turns ...Handler) Handler {
	return scripted.Turns(Handler(func(*Request) Response { return Reply("done") }), turns...)
}

// WriteTask is a Handler that carries out the scripted.FileOps of the
// request's task text with codex's own shell tool: one ShellWrite per file,
// all in the first answer, then, once their outputs are back, Reply("done")
// (or, when a command did not exit 0, a reply that says which).
//
// A task with no file to write is answered Reply("nothing to write").
func WriteTask(r *Request) Response {
	ops := scripted.FileOps(r.TaskText())
	if len(ops) == 0 {
		return Reply("nothing to write")
	}
	if r.Turn() == 0 {
		calls := make([]Output, 0, len(ops))
		for _, op := range ops {
			calls = append(calls, ShellWrite(op.Path, op.Content))
		}
		return UseTools(calls...)
	}
	outputs := r.ToolOutputs()
	for _, c := range r.ToolCalls() {
		if out, ok := outputs[c.CallID]; !ok || !ShellSucceeded(out) {
			return Reply("failed: " + c.Arguments + ": " + out)
		}
	}
	return Reply("done")
}

// ShellSucceeded reports whether a shell tool output says the command
// exited 0 ("Process exited with code 0").
func ShellSucceeded(output string) bool {
	return strings.Contains(output, "exited with code 0")
}
