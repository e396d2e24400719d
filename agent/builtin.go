package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// builtin is the in-process agent. It carries out a fully specified task:
// every fenced block whose info string has path=REL is written to REL with
// the block's content, and every block with delete=REL removes REL. It
// reads the task text from the request's context JSON (or, failing that,
// from the context block at the end of the prompt), reports zero tokens,
// and refuses, before touching anything, any path that is absolute, climbs
// out with "..", points into .git or .implloop, or goes through a symlink
// that leaves the repository.
type builtin struct{}

func (builtin) Name() string { return "builtin" }

func (builtin) Check() error { return nil }

// Version is the implloop build's own; the builtin has no separate version.
func (builtin) Version(context.Context) (string, error) { return "builtin", nil }

// fileOp is one block's instruction.
type fileOp struct {
	rel     string // as written in the info string
	del     bool
	content []byte
	target  string // resolved absolute path
}

func (b builtin) Run(ctx context.Context, req Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("agent builtin: not started: %w", err)
	}
	taskText, err := builtinTaskText(req)
	if err != nil {
		return Result{}, fmt.Errorf("agent builtin: %w", err)
	}
	ops, err := fileBlocks([]byte(taskText))
	if err != nil {
		return Result{}, fmt.Errorf("agent builtin: %w", err)
	}
	stdout := orDiscard(req.Stdout)
	if len(ops) == 0 {
		msg := "the task has no fenced block with path=FILE or delete=FILE; the builtin agent only carries out fully specified tasks"
		fmt.Fprintln(orDiscard(req.Stderr), "builtin:", msg)
		return Result{ExitCode: 1, IsError: true, Text: msg}, nil
	}
	root, err := filepath.Abs(req.Dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return Result{}, fmt.Errorf("agent builtin: repository %q: %w", req.Dir, err)
	}
	// Resolve and check every path before writing anything.
	for i := range ops {
		t, err := resolveInside(root, ops[i].rel, ops[i].del)
		if err != nil {
			return Result{}, fmt.Errorf("agent builtin: refusing %s: %w", ops[i].rel, err)
		}
		ops[i].target = t
	}
	var done []string
	for _, op := range ops {
		if op.del {
			err := os.Remove(op.target)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				fmt.Fprintf(stdout, "builtin: %s already absent\n", op.rel)
			case err != nil:
				return Result{}, fmt.Errorf("agent builtin: delete %s: %w", op.rel, err)
			default:
				fmt.Fprintf(stdout, "builtin: deleted %s\n", op.rel)
				done = append(done, "deleted "+op.rel)
			}
			continue
		}
		if err := writeFile(op.target, op.content); err != nil {
			return Result{}, fmt.Errorf("agent builtin: write %s: %w", op.rel, err)
		}
		fmt.Fprintf(stdout, "builtin: wrote %s (%d bytes)\n", op.rel, len(op.content))
		done = append(done, "wrote "+op.rel)
	}
	return Result{Text: strings.Join(done, "; ")}, nil
}

// builtinTaskText finds task.text in the request's context, or in the
// context block the prompt ends with.
func builtinTaskText(req Request) (string, error) {
	ctxJSON := req.Context
	if len(ctxJSON) == 0 {
		ctxJSON = promptContext(req.Prompt)
	}
	if len(ctxJSON) == 0 {
		return "", fmt.Errorf("no attached context: neither Request.Context nor a ```json block at the end of the prompt")
	}
	var doc struct {
		Task *struct {
			Text *string `json:"text"`
		} `json:"task"`
	}
	if err := json.Unmarshal(ctxJSON, &doc); err != nil {
		return "", fmt.Errorf("attached context: %w", err)
	}
	if doc.Task == nil || doc.Task.Text == nil {
		return "", fmt.Errorf("attached context has no task.text")
	}
	return *doc.Task.Text, nil
}

// promptContext returns the body of the fenced json block that ends the
// prompt, or nil.
func promptContext(prompt []byte) []byte {
	p := bytes.TrimRight(prompt, "\n")
	nl := bytes.LastIndexByte(p, '\n')
	fence := p[nl+1:]
	if len(fence) < 3 || len(bytes.Trim(fence, "`")) != 0 {
		return nil
	}
	open := append(append([]byte{'\n'}, fence...), "json\n"...)
	start := bytes.LastIndex(p[:nl+1], open)
	if start < 0 {
		return nil
	}
	return p[start+len(open) : nl+1]
}

// fileBlocks returns the task's path= and delete= blocks in order.
func fileBlocks(src []byte) ([]fileOp, error) {
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	var ops []fileOp
	var bad error
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		fc, ok := n.(*ast.FencedCodeBlock)
		if !entering || !ok || fc.Info == nil {
			return ast.WalkContinue, nil
		}
		info := string(fc.Info.Segment.Value(src))
		path, del := infoAttr(info, "path"), infoAttr(info, "delete")
		if path == "" && del == "" {
			return ast.WalkContinue, nil
		}
		if path != "" && del != "" {
			bad = fmt.Errorf("a block has both path= and delete=: %q", info)
			return ast.WalkStop, nil
		}
		if del != "" {
			ops = append(ops, fileOp{rel: del, del: true})
			return ast.WalkSkipChildren, nil
		}
		var content []byte
		lines := fc.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			content = append(content, seg.Value(src)...)
		}
		ops = append(ops, fileOp{rel: path, content: content})
		return ast.WalkSkipChildren, nil
	})
	return ops, bad
}

// infoAttr returns the value of key=VALUE in a fence's info string; VALUE
// may be double-quoted.
func infoAttr(info, key string) string {
	prefix := key + "="
	for rest := info; rest != ""; {
		rest = strings.TrimLeft(rest, " \t")
		if !strings.HasPrefix(rest, prefix) {
			i := strings.IndexAny(rest, " \t")
			if i < 0 {
				return ""
			}
			rest = rest[i:]
			continue
		}
		v := rest[len(prefix):]
		if strings.HasPrefix(v, `"`) {
			if end := strings.IndexByte(v[1:], '"'); end >= 0 {
				return v[1 : 1+end]
			}
			return ""
		}
		if i := strings.IndexAny(v, " \t"); i >= 0 {
			v = v[:i]
		}
		return v
	}
	return ""
}

// resolveInside maps rel to an absolute path under root, refusing absolute
// paths, ".." escapes, .git and .implloop, and symlinks (in the directories
// on the way, or as the file itself when writing) that lead outside root.
// For a delete, a symlink as the last element is the thing removed. The
// path returned has no symlink left in it, and it is what gets written.
func resolveInside(root, rel string, del bool) (string, error) {
	if rel == "" {
		return "", fmt.Errorf("empty path")
	}
	if filepath.IsAbs(rel) {
		return "", fmt.Errorf("absolute path")
	}
	clean := filepath.Clean(rel)
	if clean == "." {
		return "", fmt.Errorf("path names the repository root")
	}
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path escapes the repository with ..")
	}
	return resolveFrom(root, clean, del, 0)
}

// resolveFrom walks clean (relative, no leading ..) from root one element
// at a time, replacing each symlink met by its target and starting over
// from root with the rest.
func resolveFrom(root, clean string, del bool, hops int) (string, error) {
	if hops > 40 {
		return "", fmt.Errorf("too many levels of symlinks")
	}
	parts := strings.Split(clean, "/")
	switch parts[0] {
	case ".git", ".implloop":
		return "", fmt.Errorf("path is inside %s/", parts[0])
	}
	cur := root
	for i, part := range parts {
		next := filepath.Join(cur, part)
		last := i == len(parts)-1
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing on disk from here on: no symlink can redirect the rest.
			return checkResolved(root, filepath.Join(append([]string{cur}, parts[i:]...)...))
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 || last && del {
			cur = next
			continue
		}
		link, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(cur, link)
		}
		link = filepath.Clean(link)
		name := filepath.Join(parts[:i+1]...)
		if !within(root, link) {
			return "", fmt.Errorf("symlink %s leaves the repository (-> %s)", name, link)
		}
		rest, _ := filepath.Rel(root, link)
		if rest == "." {
			if last {
				return "", fmt.Errorf("symlink %s points at the repository root", name)
			}
			return resolveFrom(root, filepath.Join(parts[i+1:]...), del, hops+1)
		}
		return resolveFrom(root, filepath.Join(append([]string{rest}, parts[i+1:]...)...), del, hops+1)
	}
	return checkResolved(root, cur)
}

// checkResolved refuses a resolved path that is the root itself or lies in
// .git or .implloop (reached through an in-repo symlink).
func checkResolved(root, p string) (string, error) {
	r, err := filepath.Rel(root, p)
	if err != nil || r == "." {
		return "", fmt.Errorf("path resolves to the repository root")
	}
	switch first, _, _ := strings.Cut(r, "/"); first {
	case ".git", ".implloop":
		return "", fmt.Errorf("path resolves inside %s/", first)
	}
	return p, nil
}

func within(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, "../") && !filepath.IsAbs(r)
}

// writeFile writes content to path, creating parent directories and
// keeping an existing file's mode.
func writeFile(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("is a directory")
		}
		mode = fi.Mode().Perm()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, bytes.NewReader(content)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
