package boundary

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"
)

// Errors callers can recognise (with errors.Is) to add a hint.
var (
	// ErrNotRepository: the directory is not inside a git working tree.
	ErrNotRepository = errors.New("not a git repository")
	// ErrGitNotFound: no git executable on PATH.
	ErrGitNotFound = errors.New("git not found on PATH")
	// ErrBareRepository: a bare repository has no worktree to snapshot.
	ErrBareRepository = errors.New("bare repository (no worktree)")
	// ErrRefused: Restore left at least one path alone because its current
	// content is neither the lost content nor its base.
	ErrRefused = errors.New("restore refused")
)

// gitBinary finds git on PATH.
func gitBinary() (string, error) {
	p, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrGitNotFound, err)
	}
	return p, nil
}

// findRoot returns the worktree's top-level directory: the nearest ancestor
// of dir (dir included) holding a .git directory or file, the same walk git
// and go-git make.
func findRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("repository path %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("repository path: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("repository path %s: not a directory", abs)
	}
	for p := abs; ; {
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("looking for .git in %s: %w", p, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", fmt.Errorf("%w: %s (or any of its parents)", ErrNotRepository, abs)
		}
		p = parent
	}
}

// openRepo opens the repository whose worktree is root with go-git; linked
// worktrees find their objects and refs in the common directory.
func openRepo(root string) (*git.Repository, error) {
	repo, err := git.PlainOpenWithOptions(root, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return nil, fmt.Errorf("%w: %s", ErrNotRepository, root)
		}
		return nil, fmt.Errorf("opening %s with go-git: %w", root, err)
	}
	return repo, nil
}

// runGit runs git in dir and returns its stdout; a failure carries git's
// stderr, and "not a git repository" becomes ErrNotRepository.
func runGit(ctx context.Context, gitPath, dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, gitPath, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, gitError(ctx, dir, args, err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

func gitError(ctx context.Context, dir string, args []string, err error, stderr []byte) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := strings.TrimSpace(string(stderr))
	if strings.Contains(msg, "not a git repository") {
		return fmt.Errorf("%w: %s", ErrNotRepository, dir)
	}
	if strings.Contains(msg, "must be run in a work tree") {
		return fmt.Errorf("%w: %s", ErrBareRepository, dir)
	}
	name := "git"
	if len(args) > 0 {
		name = "git " + args[0]
		if args[0] == "--no-optional-locks" && len(args) > 1 {
			name = "git " + args[1]
		}
	}
	if msg != "" {
		return fmt.Errorf("%s in %s: %v: %s", name, dir, err, msg)
	}
	return fmt.Errorf("%s in %s: %w", name, dir, err)
}

// quoteCPath quotes a path for git's --stdin-paths input when it needs it:
// a newline would end the path, and a leading quote would start a quoted one.
func quoteCPath(p string) string {
	need := strings.HasPrefix(p, `"`)
	for i := 0; i < len(p) && !need; i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' || c == '"' {
			need = true
		}
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
