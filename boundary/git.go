package boundary

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"

	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gitobj"
	"github.com/implloop/implloop/internal/words"
)

// Errors callers can recognise (with errors.Is) to add a hint.
var (
	// ErrNotRepository: the directory is not inside a git working tree.
	ErrNotRepository = errors.New("not a git repository")
	// ErrGitNotFound: no git executable on PATH.
	ErrGitNotFound = gitcmd.ErrNotInstalled
	// ErrBareRepository: a bare repository has no worktree to snapshot.
	ErrBareRepository = errors.New("bare repository (no worktree)")
	// ErrRefused: Restore left at least one path alone because its current
	// content is neither the lost content nor its base.
	ErrRefused = errors.New("restore refused")
)

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

// gitRepo runs git in one work tree.
type gitRepo struct {
	ctx       context.Context
	root      string // the work tree's top level
	gitDir    string // its git directory (per work tree), absolute
	commonDir string // the repository's common directory, absolute
	sha256    bool   // object format
	// w is the object writer objects gives without an env, opened once
	// (opening reads git's configuration files, and makes a compressor).
	wOnce sync.Once
	w     *gitobj.Writer
}

// openGit finds the work tree containing dir and its git directories.
func openGit(ctx context.Context, dir string) (*gitRepo, error) {
	if _, err := gitcmd.Path(); err != nil {
		return nil, err
	}
	root, err := findRoot(dir)
	if err != nil {
		return nil, err
	}
	g := &gitRepo{ctx: ctx, root: root}
	out, _, err := g.run(nil, nil, "rev-parse", "--absolute-git-dir", "--git-common-dir", "--show-object-format", "--is-bare-repository")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 4 {
		return nil, fmt.Errorf("git rev-parse in %s: unexpected output %q", root, out)
	}
	if lines[3] == "true" {
		return nil, fmt.Errorf("%w: %s", ErrBareRepository, root)
	}
	g.gitDir, g.commonDir = lines[0], lines[1]
	if !filepath.IsAbs(g.commonDir) {
		g.commonDir = filepath.Join(root, g.commonDir)
	}
	g.sha256 = lines[2] == "sha256"
	return g, nil
}

// reopenGit is openGit, without asking git where the git directories are
// when prev (the previous boundary, taken by this process) knows them for
// the same work tree and they are still there; without prev, when repo
// (LearnRepo) does.
func reopenGit(ctx context.Context, dir string, prev *Snapshot, repo *Repo) (*gitRepo, error) {
	if (prev == nil || prev.gitDir == "") && repo != nil {
		if _, err := gitcmd.Path(); err != nil {
			return nil, err
		}
		root, err := findRoot(dir)
		if err != nil {
			return nil, err
		}
		if g := repo.gitRepo(ctx, root); g != nil {
			return g, nil
		}
		return openGit(ctx, dir)
	}
	if prev == nil || prev.gitDir == "" {
		return openGit(ctx, dir)
	}
	if _, err := gitcmd.Path(); err != nil {
		return nil, err
	}
	root, err := findRoot(dir)
	if err != nil {
		return nil, err
	}
	if root != prev.Root {
		return openGit(ctx, dir)
	}
	if fi, err := os.Stat(filepath.Join(prev.gitDir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return openGit(ctx, dir)
	}
	g := &gitRepo{ctx: ctx, root: root, gitDir: prev.gitDir, commonDir: prev.commonDir}
	if len(prev.Head) == 64 || len(prev.Tree) == 64 {
		g.sha256 = true
	}
	if prev.Tree == "" && prev.Head == "" {
		return openGit(ctx, dir)
	}
	return g, nil
}

// run runs git with env added to the environment and returns its stdout
// and stderr; a failure carries git's stderr, and "not a git repository"
// becomes ErrNotRepository.
func (g *gitRepo) run(env []string, stdin []byte, args ...string) ([]byte, []byte, error) {
	o := gitcmd.Options{Dir: g.root, Env: env}
	if stdin != nil {
		o.Stdin = bytes.NewReader(stdin)
	}
	stdout, stderr, err := gitcmd.Run(g.ctx, o, args...)
	if err != nil {
		return stdout, stderr, gitError(g.ctx, g.root, err, stderr)
	}
	return stdout, stderr, nil
}

// gitError names the two failures callers recognise (not a repository, a
// bare one) in a failed git's error.
func gitError(ctx context.Context, dir string, err error, stderr []byte) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := string(stderr)
	if strings.Contains(msg, "not a git repository") {
		return fmt.Errorf("%w: %s", ErrNotRepository, dir)
	}
	if strings.Contains(msg, "must be run in a work tree") {
		return fmt.Errorf("%w: %s", ErrBareRepository, dir)
	}
	return err
}

// exitCode is the exit status of a failed git, -1 when it did not exit.
func exitCode(err error) int { return gitcmd.ExitCode(err) }

// head returns the commit HEAD points at ("" when unborn) and the branch
// checked out ("" when detached). It reads HEAD and the ref files itself,
// which saves two git processes per snapshot; a layout it does not know
// (reftable) is left to git.
func (g *gitRepo) head() (oid, branch string, err error) {
	if oid, branch, ok := g.readHead(); ok {
		return oid, branch, nil
	}
	out, _, err := g.run(nil, nil, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	switch {
	case err == nil:
		oid = strings.TrimSpace(string(out))
	case exitCode(err) != 1:
		return "", "", err
	}
	out, _, err = g.run(nil, nil, "symbolic-ref", "-q", "--short", "HEAD")
	switch {
	case err == nil:
		branch = strings.TrimSpace(string(out))
	case exitCode(err) != 1:
		return "", "", err
	}
	return oid, branch, nil
}

// readHead reads HEAD from the files backend: ok is false when it cannot
// say for sure.
func (g *gitRepo) readHead() (oid, branch string, ok bool) {
	b, err := os.ReadFile(filepath.Join(g.gitDir, "HEAD"))
	if err != nil {
		return "", "", false
	}
	h := strings.TrimSpace(string(b))
	if isHexID(h) {
		return h, "", true
	}
	ref, found := strings.CutPrefix(h, "ref: ")
	if !found || !strings.HasPrefix(ref, "refs/heads/") || ref == "refs/heads/.invalid" {
		return "", "", false
	}
	oid, ok = g.readRef(ref)
	return oid, strings.TrimPrefix(ref, "refs/heads/"), ok
}

// readRef resolves a ref of the files backend (loose, then packed) to an
// object id; "" and ok when it does not exist. ok is false when the ref is
// not a plain id (a symbolic ref) or cannot be read.
func (g *gitRepo) readRef(ref string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(g.commonDir, filepath.FromSlash(ref)))
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		return id, isHexID(id)
	case !errors.Is(err, os.ErrNotExist) && !isNotDirErr(err):
		return "", false
	}
	packed, err := os.ReadFile(filepath.Join(g.commonDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return "", true
	}
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(packed), "\n") {
		id, name, found := strings.Cut(line, " ")
		if found && name == ref && isHexID(id) {
			return id, true
		}
	}
	return "", true
}

// isNotDirErr: a path under a file (refs/heads/a when refs/heads is a
// file) does not exist either.
func isNotDirErr(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// hasObject reports whether the object database holds id.
func (g *gitRepo) hasObject(id string) bool {
	_, _, err := g.run(nil, nil, "cat-file", "-e", id)
	return err == nil
}

// newHash returns the repository's object hash.
func (g *gitRepo) newHash() hash.Hash {
	if g.sha256 {
		return sha256.New()
	}
	return sha1.New()
}

// emptyTree is the id of the empty tree in this repository's hash.
func (g *gitRepo) emptyTree() string {
	h := g.newHash()
	h.Write([]byte("tree 0\x00"))
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Change is one path whose content differs between two trees (or a tree
// and the index): what `git diff-tree -r` reports.
type Change struct {
	// Path is the path after the change, relative to the root,
	// slash-separated, any bytes but NUL.
	Path string `json:"path"`
	// From is where a rename or copy came from ("" otherwise).
	From string `json:"from,omitempty"`
	// Status is git's letter: A, D, M, T, R, C (U: unmerged, index only).
	Status byte `json:"-"`
	// Score is a rename or copy's similarity (0-100).
	Score  int  `json:"score,omitempty"`
	Before Blob `json:"before"`
	After  Blob `json:"after"`
}

// diffTree lists the changes from tree-ish a to tree-ish b, recursively.
func (g *gitRepo) diffTree(env []string, a, b string, renames bool) ([]Change, error) {
	args := []string{"diff-tree", "-r", "-z", "--no-commit-id", "--no-ext-diff", "--no-renames"}
	if renames {
		args[len(args)-1] = "-M"
	}
	// diff-tree reads the index although it compares two trees: at
	// 100,000 files that is most of its time. A path that does not exist
	// is an empty index to git.
	env = append(env[:len(env):len(env)], "GIT_INDEX_FILE="+g.noIndex())
	out, _, err := g.run(env, nil, append(args, a, b)...)
	if err != nil {
		return nil, err
	}
	return parseRaw(out)
}

// noIndex is an index file that does not exist (an empty index to git),
// for commands that read the index although they only compare trees.
func (g *gitRepo) noIndex() string {
	return filepath.Join(g.gitDir, "implloop", "no-index", "index")
}

// diffIndex lists how the index differs from tree-ish a (staged renames
// detected), without looking at the work tree.
func (g *gitRepo) diffIndex(a string) ([]Change, error) {
	out, _, err := g.run(nil, nil, "diff-index", "--cached", "-z", "-M", "--no-ext-diff", a)
	if err != nil {
		return nil, err
	}
	return parseRaw(out)
}

// parseRaw parses git's raw diff output (-z): records
// ":<mode a> <mode b> <id a> <id b> <status>[score]" NUL path NUL, with a
// second path for renames and copies (source first). It never panics on
// malformed input: every malformed record is an error naming it.
func parseRaw(data []byte) ([]Change, error) {
	var out []Change
	next := func() (string, bool) {
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			return "", false
		}
		s := string(data[:i])
		data = data[i+1:]
		return s, true
	}
	for len(data) > 0 {
		meta, ok := next()
		if !ok {
			return nil, fmt.Errorf("raw diff: record %q is not NUL-terminated", clip(data))
		}
		f := strings.Fields(strings.TrimPrefix(meta, ":"))
		if !strings.HasPrefix(meta, ":") || len(f) != 5 || f[4] == "" {
			return nil, fmt.Errorf("raw diff: cannot parse %q", clip([]byte(meta)))
		}
		ma, err1 := strconv.ParseUint(f[0], 8, 32)
		mb, err2 := strconv.ParseUint(f[1], 8, 32)
		if err1 != nil || err2 != nil || !isHexID(f[2]) || !isHexID(f[3]) {
			return nil, fmt.Errorf("raw diff: cannot parse %q", clip([]byte(meta)))
		}
		c := Change{Status: f[4][0], Before: blobOf(Mode(ma), f[2]), After: blobOf(Mode(mb), f[3])}
		if len(f[4]) > 1 {
			n, err := strconv.Atoi(f[4][1:])
			if err != nil || n < 0 || n > 100 {
				return nil, fmt.Errorf("raw diff: bad score in %q", clip([]byte(meta)))
			}
			c.Score = n
		}
		p, ok := next()
		if !ok || p == "" {
			return nil, fmt.Errorf("raw diff: %q has no path", clip([]byte(meta)))
		}
		c.Path = p
		if c.Status == 'R' || c.Status == 'C' {
			p2, ok := next()
			if !ok || p2 == "" {
				return nil, fmt.Errorf("raw diff: %c of %q has no destination", c.Status, p)
			}
			c.From, c.Path = p, p2
		}
		out = append(out, c)
	}
	return out, nil
}

// blobOf turns a raw diff's (mode, id) pair into a Blob; git prints zeros
// for an absent side (and for a work-tree side it has not hashed).
func blobOf(m Mode, h string) Blob {
	if m == ModeAbsent {
		return Blob{}
	}
	if strings.Trim(h, "0") == "" {
		h = ""
	}
	return Blob{Hash: h, Mode: m}
}

func isHexID(s string) bool { return gitcmd.IsObjectID(s) }

// clip is git output cut short for an error message.
func clip(b []byte) string { return words.Clip(string(b), 80) }

// nestedHead is the commit checked out in the repository whose work tree
// is dir (a submodule or a nested repository: dir holds its own .git),
// and whether there is one.
func (g *gitRepo) nestedHead(dir string) (string, bool) {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
		return "", false
	}
	id, err := gitcmd.Output(g.ctx, dir, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil || !isHexID(id) {
		return "", false
	}
	return id, true
}

// objects is the object writer of the repository: objects written in
// process where git would write them the same way (gitobj), by git (in
// the work tree, with env added) otherwise. It starts no process: the
// directories and the object format are what openGit learnt.
func (g *gitRepo) objects(env []string) *gitobj.Writer {
	open := func() *gitobj.Writer {
		h := gitobj.SHA1
		if g.sha256 {
			h = gitobj.SHA256
		}
		return gitobj.Open(gitobj.Repo{Dir: g.root, GitDir: g.gitDir, CommonDir: g.commonDir, Hash: h, HashKnown: true, Env: env})
	}
	if env != nil {
		return open()
	}
	g.wOnce.Do(func() { g.w = open() })
	return g.w
}
