package boundary

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/implloop/implloop/internal/gitcmd"
)

// LostContent is one path whose content a task discarded, with what Restore
// needs to bring it back. The guard builds these from the earlier boundary.
type LostContent struct {
	Path string `json:"path"`
	// Lost is the content that was discarded (Mode 0: the path had been
	// deleted, and restoring means deleting it again).
	Lost Blob `json:"lost"`
	// Raw is the blob holding the worktree's raw bytes when they differ
	// from Lost.Hash. Only journals written before boundaries became
	// commits have it: Restore now writes Lost through git's smudge side
	// (autocrlf, eol and filter attributes), as a checkout would.
	Raw string `json:"raw,omitempty"`
	// Base is the content the path was reverted to, which the lost work
	// was based on: HEAD's content at the earlier boundary, or its index
	// content then when the task restored it from the index
	// (`git checkout -- path`). A path still holding it may be overwritten
	// safely.
	Base Blob `json:"base"`
	// Repo is the nested repository (a submodule; its path from the
	// root, slash-separated) whose object store keeps the content, when
	// the path is inside one: Path starts with Repo + "/".
	Repo string `json:"repo,omitempty"`
}

// RestoreAction is what Restore did with one path.
type RestoreAction string

// The outcomes of restoring one path.
const (
	RestoreWritten   RestoreAction = "restored"  // content written back
	RestoreRemoved   RestoreAction = "removed"   // a discarded deletion redone
	RestoreUnchanged RestoreAction = "unchanged" // already holds the lost content
	RestoreRefused   RestoreAction = "refused"   // current content is neither lost nor base (use force)
	RestoreFailed    RestoreAction = "failed"    // could not be restored (Reason says why)
)

// RestoreResult reports one path.
type RestoreResult struct {
	Path   string        `json:"path"`
	Action RestoreAction `json:"action"`
	Reason string        `json:"reason,omitempty"`
}

// Restore writes lost content back into the worktree of the repository
// containing repoDir from the object database (the boundary commits keep
// it reachable), as `git checkout` would write the blob. A path whose current content is neither the lost content
// nor its recorded base is left alone unless force is set. Every path gets a
// result; the error wraps ErrRefused when a path was refused, and reports
// any path that failed.
func Restore(ctx context.Context, repoDir string, lost []LostContent, force bool) ([]RestoreResult, error) {
	return restore(ctx, repoDir, lost, force, false)
}

// RestorePreview is what Restore would do, path by path, and its error,
// with nothing written (restore --dry-run): the same checks, no write.
func RestorePreview(ctx context.Context, repoDir string, lost []LostContent, force bool) ([]RestoreResult, error) {
	return restore(ctx, repoDir, lost, force, true)
}

func restore(ctx context.Context, repoDir string, lost []LostContent, force, dry bool) ([]RestoreResult, error) {
	root, err := findRoot(repoDir)
	if err != nil {
		return nil, err
	}
	g, err := openGit(ctx, root)
	if err != nil {
		return nil, err
	}
	r := &restorer{ctx: ctx, root: g.root, g: g, dry: dry}
	nested := map[string]*restorer{}
	var results []RestoreResult
	var refused, failed []string
	for _, l := range lost {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		var res RestoreResult
		if l.Repo != "" {
			res = r.inNested(nested, l, force)
		} else {
			res = r.one(l, force)
		}
		results = append(results, res)
		switch res.Action {
		case RestoreRefused:
			refused = append(refused, l.Path)
		case RestoreFailed:
			failed = append(failed, fmt.Sprintf("%s: %s", l.Path, res.Reason))
		}
	}
	var errs []error
	if len(refused) > 0 {
		errs = append(errs, fmt.Errorf("%w: %d path(s) hold content that is neither the lost content nor its base: %s", ErrRefused, len(refused), strings.Join(refused, ", ")))
	}
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("restore failed for %s", strings.Join(failed, "; ")))
	}
	return results, errors.Join(errs...)
}

type restorer struct {
	ctx  context.Context
	root string
	g    *gitRepo
	dry  bool // decide, write nothing (RestorePreview)
}

// inNested restores l, a path inside the nested repository l.Repo, from
// that repository's object store (its own boundaries keep it).
func (r *restorer) inNested(nested map[string]*restorer, l LostContent, force bool) RestoreResult {
	rel, ok := strings.CutPrefix(l.Path, l.Repo+"/")
	if !validRepoPath(l.Repo) || !ok || r.checkParents(l.Path) != nil {
		return RestoreResult{Path: l.Path, Action: RestoreFailed, Reason: "not a path inside the nested repository " + l.Repo}
	}
	n, ok := nested[l.Repo]
	if !ok {
		dir := filepath.Join(r.root, filepath.FromSlash(l.Repo))
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
			return RestoreResult{Path: l.Path, Action: RestoreFailed, Reason: fmt.Sprintf(
				"%s is no longer a repository (for a submodule: git submodule update --init %s, then restore again)", l.Repo, shellQuote(l.Repo))}
		}
		g, err := openGit(r.ctx, dir)
		if err != nil || g.root != dir {
			return RestoreResult{Path: l.Path, Action: RestoreFailed, Reason: fmt.Sprintf("%s: not a repository of its own", l.Repo)}
		}
		n = &restorer{ctx: r.ctx, root: g.root, g: g, dry: r.dry}
		nested[l.Repo] = n
	}
	full := l.Path
	l.Path, l.Repo = rel, ""
	res := n.one(l, force)
	res.Path = full
	return res
}

func (r *restorer) one(l LostContent, force bool) RestoreResult {
	res := RestoreResult{Path: l.Path}
	fail := func(format string, args ...any) RestoreResult {
		res.Action, res.Reason = RestoreFailed, fmt.Sprintf(format, args...)
		return res
	}
	if !validRepoPath(l.Path) {
		return fail("not a path inside the worktree")
	}
	full := filepath.Join(r.root, filepath.FromSlash(l.Path))
	if err := r.checkParents(l.Path); err != nil {
		return fail("%v", err)
	}
	cur, err := r.current(l, full)
	if err != nil {
		return fail("reading current content: %v", err)
	}
	lostRaw := l.Lost
	if l.Raw != "" {
		lostRaw.Hash = l.Raw
	}
	if cur.Same(lostRaw) || cur.Same(l.Lost) {
		res.Action = RestoreUnchanged
		return res
	}
	if l.Lost.Mode == ModeGitlink {
		// Checking a commit out could throw away what is uncommitted in
		// the submodule: that is the user's call, so say which commit.
		return fail("a submodule, at %s now: implloop does not check submodules out; to restore it: git -C %s checkout %s",
			describe(cur), shellQuote(l.Path), l.Lost.Hash)
	}
	unchanged, safe := r.cleaned(l, cur)
	if unchanged {
		res.Action = RestoreUnchanged
		return res
	}
	if !safe && !force {
		res.Action = RestoreRefused
		res.Reason = fmt.Sprintf("current content (%s) is neither the lost content nor its base", describe(cur))
		return res
	}
	action, err := r.put(l, full, cur)
	if err != nil {
		return fail("%v", err)
	}
	res.Action = action
	return res
}

// current is what stands at the lost path now, hashed the way the lost
// content was; a submodule's content is the commit checked out in it.
func (r *restorer) current(l LostContent, full string) (Blob, error) {
	newHash := hashFor(l.Lost.Hash, l.Base.Hash, l.Raw)
	cur, err := currentContent(newHash, full)
	if err != nil {
		return Blob{}, err
	}
	if cur.Mode == ModeDir && (l.Lost.Mode == ModeGitlink || l.Base.Mode == ModeGitlink) {
		if head, ok := r.g.nestedHead(full); ok {
			cur = Blob{Hash: head, Mode: ModeGitlink}
		}
	}
	return cur, nil
}

// cleaned says whether the current content is the lost content, or its
// base (safe to overwrite), once git's conversions are counted: the raw
// bytes may differ from git's view only by conversion (autocrlf), so a
// file that is neither as it stands is asked of git before it is refused.
func (r *restorer) cleaned(l LostContent, cur Blob) (unchanged, safe bool) {
	if cur.Same(l.Base) {
		return false, true
	}
	if !cur.Present() || cur.Mode.normalize() == ModeSymlink || cur.Mode == ModeDir {
		return false, false
	}
	id, err := r.gitHash(l.Path)
	if err != nil {
		return false, false
	}
	cg := Blob{Hash: id, Mode: cur.Mode}
	return cg.Same(l.Lost), cg.Same(l.Base)
}

// put writes the lost content at full, or removes the file when the lost
// content is its absence (a dry run only says which), clearing a
// directory in the way.
func (r *restorer) put(l LostContent, full string, cur Blob) (RestoreAction, error) {
	m := l.Lost.Mode.normalize()
	if r.dry {
		switch m {
		case ModeAbsent:
			return RestoreRemoved, nil
		case ModeRegular, ModeExecutable, ModeSymlink:
			return RestoreWritten, nil
		}
		return RestoreFailed, fmt.Errorf("unsupported mode %s", l.Lost.Mode)
	}
	if cur.Mode == ModeDir {
		if err := os.Remove(full); err != nil {
			return RestoreFailed, fmt.Errorf("a directory is in the way: %v", err)
		}
	}
	switch m {
	case ModeAbsent:
		if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
			return RestoreFailed, err
		}
		return RestoreRemoved, nil
	case ModeRegular, ModeExecutable, ModeSymlink:
	default:
		return RestoreFailed, fmt.Errorf("unsupported mode %s", l.Lost.Mode)
	}
	if err := r.write(full, l, m); err != nil {
		return RestoreFailed, err
	}
	return RestoreWritten, nil
}

// write puts the lost blob at full, atomically for regular files.
func (r *restorer) write(full string, l LostContent, mode Mode) error {
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	if mode == ModeSymlink {
		var target bytes.Buffer
		if err := r.catFile(&target, "blob", l.Lost.Hash); err != nil {
			return err
		}
		if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return os.Symlink(target.String(), full)
	}
	tmp, err := os.CreateTemp(filepath.Dir(full), ".implloop-restore-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if l.Raw != "" {
		err = r.catFile(tmp, "blob", l.Raw)
	} else {
		err = r.catFile(tmp, "--filters", "--path="+l.Path, l.Lost.Hash)
	}
	if err != nil {
		tmp.Close()
		return err
	}
	perm := os.FileMode(0o644)
	if mode == ModeExecutable {
		perm = 0o755
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), full)
}

// catFile streams `git cat-file args...` into w.
func (r *restorer) catFile(w io.Writer, args ...string) error {
	_, stderr, err := gitcmd.Run(r.ctx, gitcmd.Options{Dir: r.root, Stdout: w}, append([]string{"cat-file"}, args...)...)
	if err != nil {
		id := args[len(args)-1]
		return fmt.Errorf("content %.12s is not in the object database: %w", id, gitError(r.ctx, r.root, err, stderr))
	}
	return nil
}

// checkParents refuses to write through a symlinked or non-directory parent:
// restore must not reach outside the worktree.
func (r *restorer) checkParents(path string) error {
	parts := strings.Split(path, "/")
	p := r.root
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil // created by MkdirAll
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("parent %s is a symlink", p)
		}
		if !fi.IsDir() {
			return fmt.Errorf("parent %s is not a directory", p)
		}
	}
	return nil
}

func (r *restorer) gitHash(path string) (string, error) {
	out, _, err := r.g.run(nil, []byte(gitcmd.QuotePath(path)+"\n"), "hash-object", "--stdin-paths")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if !isHexID(id) {
		return "", fmt.Errorf("git hash-object: bad id %q", id)
	}
	return id, nil
}

// currentContent reads a worktree path's raw content id and mode.
func currentContent(newHash func() hash.Hash, full string) (Blob, error) {
	fi, err := os.Lstat(full)
	if errors.Is(err, os.ErrNotExist) {
		return Blob{}, nil
	}
	if err != nil {
		return Blob{}, err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return Blob{}, err
		}
		h := newHash()
		fmt.Fprintf(h, "blob %d\x00%s", len(target), target)
		return Blob{Hash: fmt.Sprintf("%x", h.Sum(nil)), Mode: ModeSymlink}, nil
	case fi.IsDir():
		return Blob{Mode: ModeDir}, nil
	case fi.Mode().IsRegular():
		id, err := hashFile(newHash, full)
		if err != nil {
			return Blob{}, err
		}
		mode := ModeRegular
		if fi.Mode()&0o111 != 0 {
			mode = ModeExecutable
		}
		return Blob{Hash: id, Mode: mode}, nil
	}
	return Blob{Mode: Mode(0o170000)}, nil // something git does not store
}

// hashFor picks the object hash the ids were made with.
func hashFor(ids ...string) func() hash.Hash {
	for _, id := range ids {
		if len(id) == 64 {
			return sha256.New
		}
	}
	return sha1.New
}

func describe(b Blob) string {
	switch {
	case !b.Present():
		return "absent"
	case b.Mode == ModeDir:
		return "a directory"
	case b.Mode == ModeGitlink:
		return fmt.Sprintf("commit %.12s", b.Hash)
	case b.Hash == "":
		return "mode " + b.Mode.String()
	}
	return fmt.Sprintf("%s %.12s", b.Mode, b.Hash)
}

// validRepoPath accepts a clean, relative, slash-separated path that stays in
// the worktree and out of .git.
func validRepoPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\x00") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

// hashFile returns the id of a blob holding the file's raw bytes, reading it
// as a stream.
func hashFile(newHash func() hash.Hash, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	h := newHash()
	h.Write([]byte("blob " + strconv.FormatInt(fi.Size(), 10) + "\x00"))
	n, err := io.Copy(h, bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return "", err
	}
	if n != fi.Size() {
		return "", fmt.Errorf("%s changed size while being read", path)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// shellQuote quotes p for a command line a person copies, when it needs it.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
