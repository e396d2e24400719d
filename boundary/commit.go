package boundary

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/implloop/implloop/internal/files"
	"github.com/implloop/implloop/internal/gitobj"
	"github.com/implloop/implloop/internal/runid"
)

// checkRunID refuses a run id that cannot name the run's refs and
// directories (runid.RefSafe).
func checkRunID(run string) error {
	if !runid.RefSafe(run) {
		return fmt.Errorf("boundary: run id %q cannot be a ref name component", run)
	}
	return nil
}

// StateDir is where a work tree's boundary index lives: implloop/ under its
// own git directory (linked worktrees each have one).
func stateDir(gitDir string) string { return filepath.Join(gitDir, "implloop") }

// prepareIndex points t.env at the index the snapshot is built in.
//
// With WithRun it is the work tree's private index,
// <git-dir>/implloop/boundary-index, kept from one boundary to the next
// (and from one run to the next) so that only files whose stat data
// changed are hashed again (see addChanged). It is a split index
// (core.splitIndex): git then rewrites only the few entries that changed,
// not the whole index, at every boundary; the shared part is a sharedindex.<id> file in the git
// directory, which git expires itself once unused. The private index is
// seeded from the real index when it does not exist yet (so the first
// snapshot hashes only what is dirty). After that addChanged alone keeps
// it equal to the work tree, but for two things it cannot see: the
// excluded paths (the plan file) are dropped from it here when they
// change, and a file the real index tracks although an ignore rule covers
// it is added after the fact (trackedMissing, in Take).
//
// Without WithRun nothing may be written to the repository: the index is a
// temporary copy of the real index, and new objects go to a temporary
// object directory. The real one is not even its alternate while objects
// are written: git "freshens" (touches) an object it finds already stored
// instead of writing it, and that is a write too. It is one when the trees
// are read (t.readEnv).
func (t *taker) prepareIndex() error {
	g := t.g
	real := filepath.Join(g.gitDir, "index")
	fp, err := indexFingerprint(real)
	if err != nil {
		return err
	}
	t.indexFP = fp
	if t.o.run == "" {
		return t.scratchIndex(real)
	}
	return t.privateIndex(real)
}

// scratchIndex sets up a snapshot outside a run (no run id): a copy of the
// real index (or of the private one, WithBoundaryIndex) and an object
// directory in a temporary directory, so that nothing of the repository's
// changes.
func (t *taker) scratchIndex(real string) error {
	g := t.g
	if err := t.makeTemp(); err != nil {
		return err
	}
	tmp := t.tmp
	index := filepath.Join(tmp, "index")
	from, excludedAlready := real, false
	if private := filepath.Join(stateDir(g.gitDir), "boundary-index"); t.o.fromPrivate && files.IsFile(private) {
		// The private index left out the paths its seed file names
		// (see below); when they are today's, there is nothing to drop.
		seed, _ := os.ReadFile(private + ".seed")
		from, excludedAlready = private, string(seed) == strings.Join(t.excludes(), "\x00")
	}
	if err := copyIndex(from, index); err != nil {
		return err
	}
	t.env = []string{
		"GIT_INDEX_FILE=" + index,
		"GIT_OBJECT_DIRECTORY=" + filepath.Join(tmp, "objects"),
	}
	t.readEnv = append(t.env[:2:2], "GIT_ALTERNATE_OBJECT_DIRECTORIES="+filepath.Join(g.commonDir, "objects"))
	if from != real {
		// WithBoundaryIndex: the index's cached trees are valid only
		// while git can see their objects, else write-tree writes
		// every tree again (a second at 100,000 files). Git may
		// then freshen a stored object it would have written.
		t.env = t.readEnv
	}
	if excludedAlready {
		return nil
	}
	return t.removeExcluded()
}

// privateIndex sets up a run's boundary: the private index, kept between
// boundaries in implloop's state directory, seeded from the real index the
// first time, and cleared of the excluded paths whenever they change.
func (t *taker) privateIndex(real string) error {
	g := t.g
	dir := stateDir(g.gitDir)
	private := filepath.Join(dir, "boundary-index")
	seedFile := private + ".seed"
	t.env = []string{"GIT_INDEX_FILE=" + private}
	t.readEnv = t.env
	clearStaleLock(private + ".lock")
	excl := strings.Join(t.excludes(), "\x00")
	var oldExcl string
	if b, err := os.ReadFile(seedFile); err == nil {
		oldExcl = string(b)
	}
	_, statErr := os.Stat(private)
	switch {
	case errors.Is(statErr, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("boundary index: %w", err)
		}
		if err := copyIndex(real, private); err != nil {
			return err
		}
		if err := t.removeExcluded(); err != nil {
			return err
		}
		os.Remove(private + ".lag")
		t.seeded = true
	case statErr != nil:
		return fmt.Errorf("boundary index: %w", statErr)
	case oldExcl != excl:
		if err := t.removeExcluded(); err != nil {
			return err
		}
	}
	if oldExcl != excl {
		if err := os.WriteFile(seedFile, []byte(excl), 0o644); err != nil {
			return fmt.Errorf("boundary index: %w", err)
		}
	}
	return nil
}

// catchUp brings the private index's entries to the last boundary's
// tree where boundaries taken from a watcher's paths (changes.go) left it
// behind: they record what they changed in <private index>.lag, in `git
// update-index --index-info -z`'s form, for the next boundary that uses
// the private index. Without it, a file such a boundary removed would
// still be in the index, and stay in the snapshot (an index entry is never
// ignored). The entries come without stat data, so git status hashes them
// once.
//
// The index file keeps the modification time it had: git's untracked
// cache trusts a directory whose stat data it recorded unless that data
// is as new as the index file ("racy"), so an index written later than
// the status that recorded it, by anything but a status, would hide the
// files made in such a directory in the same second (git add has the
// same hole). The watcher's boundaries let the whole interval pass
// between that status and this write; with the old time the directories
// changed in the status's second are looked at again.
func (t *taker) catchUp() error {
	private := filepath.Join(stateDir(t.g.gitDir), "boundary-index")
	lag, err := os.ReadFile(private + ".lag")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("boundary index: %w", err)
	}
	if len(lag) > 0 {
		fi, err := os.Stat(private)
		if err != nil {
			return fmt.Errorf("boundary index: %w", err)
		}
		if _, _, err := t.g.run(t.env, lag, t.indexConfig("update-index", "-z", "--index-info")...); err != nil {
			return fmt.Errorf("boundary index: catching up: %w", err)
		}
		if err := os.Chtimes(private, time.Time{}, fi.ModTime()); err != nil {
			return fmt.Errorf("boundary index: %w", err)
		}
	}
	if err := os.Remove(private + ".lag"); err != nil {
		return fmt.Errorf("boundary index: %w", err)
	}
	return nil
}

// noteLag appends what a boundary taken from a watcher's paths changed
// to the private index's lag file (see catchUp): the files it dropped
// with their directories (gone), then the paths it set.
func (t *taker) noteLag() error {
	var b bytes.Buffer
	zero := strings.Repeat("0", t.g.newHash().Size()*2)
	for _, p := range t.lagGone {
		fmt.Fprintf(&b, "0 %s\t%s\x00", zero, p)
	}
	paths := make([]string, 0, len(t.lagSet))
	for p := range t.lagSet {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		c := t.lagSet[p]
		if c.Present() {
			fmt.Fprintf(&b, "%s %s\t%s\x00", c.Mode, c.Hash, p)
		} else {
			fmt.Fprintf(&b, "0 %s\t%s\x00", zero, p)
		}
	}
	f, err := os.OpenFile(filepath.Join(stateDir(t.g.gitDir), "boundary-index.lag"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("boundary index: %w", err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("boundary index: %w", err)
	}
	return f.Close()
}

// clearStaleLock removes the lock file a git killed with its implloop
// (kill -9 during a boundary) left on the private index; every later
// boundary would fail on it. Only a run holding implloop's work-tree lock
// takes boundaries, so a lock file here belongs to a git started by a run
// that is gone: one still finishing gets two seconds.
func clearStaleLock(lock string) {
	for i := 0; i < 40; i++ {
		if _, err := os.Lstat(lock); errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	os.Remove(lock)
}

// indexConfig prefixes a git command that writes the index Take uses with
// its configuration: the private index is split (see prepareIndex) and
// keeps an untracked cache for `git status --untracked-files=all` (see
// addChanged: the cache is used only when status.showUntrackedFiles
// agrees with the command line); a temporary one is neither (its shared
// part would be written to the git directory).
func (t *taker) indexConfig(args ...string) []string {
	if t.o.run == "" {
		return append([]string{"-c", "core.splitIndex=false", "-c", "advice.addIgnoredFile=false"}, args...)
	}
	return append([]string{"-c", "core.splitIndex=true", "-c", "core.untrackedCache=true", "-c", "status.showUntrackedFiles=all",
		"-c", "advice.addIgnoredFile=false"}, args...)
}

// removeExcluded drops implloop's own files and the excluded paths from a
// freshly seeded index: the user may have committed them, and `git add -A`
// with an exclude pathspec leaves an index entry as it is.
func (t *taker) removeExcluded() error {
	var in bytes.Buffer
	for _, p := range append([]string{"BLOCKED.md"}, t.o.exclude...) {
		if p != "" {
			in.WriteString(p)
			in.WriteByte(0)
		}
	}
	if _, _, err := t.g.run(t.env, in.Bytes(), t.indexConfig("update-index", "--force-remove", "-z", "--stdin")...); err != nil {
		return fmt.Errorf("boundary index: %w", err)
	}
	return nil
}

// indexFingerprint identifies the real index's current state: its stat
// data and git's checksum at its end.
func indexFingerprint(path string) (string, error) {
	var b strings.Builder
	f, err := os.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		b.WriteString("none\n")
	case err != nil:
		return "", fmt.Errorf("reading the index: %w", err)
	default:
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return "", fmt.Errorf("reading the index: %w", err)
		}
		st := fileStat(fi)
		fmt.Fprintf(&b, "%d %d %d %d\n", st.Size, st.Mtime, st.Ctime, st.Ino)
		if fi.Size() >= 32 {
			tail := make([]byte, 32)
			if _, err := f.ReadAt(tail, fi.Size()-32); err == nil {
				b.WriteString(hex.EncodeToString(tail))
			}
		}
	}
	return strings.ReplaceAll(b.String(), "\n", " "), nil
}

// copyIndex copies an index file, keeping its modification time: git
// judges an entry racily clean against the index file's own mtime, and a
// copy that looked newer would hide an edit made in the same second the
// original was written. A missing source means an empty index.
func copyIndex(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Remove(dst); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("boundary index: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("boundary index: %w", err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("boundary index: %w", err)
	}
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("boundary index: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(tmp)
		return fmt.Errorf("boundary index: %w", err)
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("boundary index: %w", err)
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("boundary index: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("boundary index: %w", err)
	}
	return nil
}

// commit records the snapshot tree as a commit whose parents are the
// previous boundary (when given and still there) and HEAD, and moves the
// run's ref to it (when the Take ends: moveRefs). Before that it checks
// that the ref still holds the previous boundary: an agent that deleted
// or moved it is reported (Snapshot.Vanished), and the chain goes on from
// here.
func (t *taker) commit(snap *Snapshot) error {
	g := t.g
	ref := RunRef(t.o.run)
	cur, ok := g.readRef(ref)
	if !ok {
		out, _, err := g.run(nil, nil, "rev-parse", "-q", "--verify", ref+"^{commit}")
		switch {
		case err == nil:
			cur = strings.TrimSpace(string(out))
		case exitCode(err) != 1:
			return fmt.Errorf("boundary: reading %s: %w", ref, err)
		}
	}
	prev := ""
	if p := t.o.prev; p != nil && p.Commit != "" {
		prev = p.Commit
		if p.Ref == ref && cur != p.Commit {
			if cur == "" {
				snap.Vanished = append(snap.Vanished, fmt.Sprintf("%s was deleted", ref))
			} else {
				snap.Vanished = append(snap.Vanished, fmt.Sprintf("%s was moved from %.12s to %.12s", ref, p.Commit, cur))
			}
			if !g.hasObject(p.Commit + "^{commit}") {
				snap.Vanished = append(snap.Vanished, fmt.Sprintf("boundary commit %.12s is gone from the object database", p.Commit))
				prev = ""
			}
		}
	}
	label := t.o.label
	if label == "" {
		label = "boundary"
	}
	id, err := t.writeCommit(snap, prev, label)
	if err != nil {
		return err
	}
	// The ref moves when the Take ends (moveRefs), with the kept ref when
	// that moves too.
	t.moves = append(t.moves, refMove{ref: ref, id: id, old: cur, msg: "implloop: " + label, wrap: "boundary"})
	snap.Commit, snap.Ref = id, ref
	return nil
}

// writeCommit writes the boundary commit of snap (parents: prev, the
// previous boundary, and HEAD) and returns its id: written in process
// where git would write it the same way (gitobj), as commit-tree
// --no-gpg-sign would.
func (t *taker) writeCommit(snap *Snapshot, prev, label string) (string, error) {
	g := t.g
	head := snap.Head
	if head == "" {
		head = "(unborn)"
	}
	msg := fmt.Sprintf("implloop: run %s, %s\n\nThe work tree as it was (tracked and untracked, not ignored).\n\nImplloop-Run: %s\nImplloop-Head: %s\n",
		t.o.run, label, t.o.run, head)
	var parents []string
	if prev != "" {
		parents = append(parents, prev)
	}
	if snap.Head != "" {
		parents = append(parents, snap.Head)
	}
	us := gitobj.Ident{Name: "implloop", Email: "implloop@localhost"}
	id, err := g.objects(nil).Commit(g.ctx, gitobj.Commit{Tree: snap.Tree, Parents: parents, Author: us, Committer: us, Message: msg})
	if err != nil {
		return "", fmt.Errorf("boundary: %w", err)
	}
	return id, nil
}

// Load rebuilds a snapshot recorded as a boundary commit (s carries at
// least Tree and Head, as the journal keeps them): its dirty set is the
// tree's difference from HEAD. The index of that moment was not recorded,
// so Index is taken to be HEAD's content. exclude are the paths the
// boundary was taken without (WithExclude).
func Load(ctx context.Context, repoDir string, s Snapshot, exclude ...string) (Snapshot, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return Snapshot{}, err
	}
	if s.Tree == "" {
		return Snapshot{}, fmt.Errorf("boundary: no tree recorded")
	}
	from := s.Head
	if from == "" {
		from = g.emptyTree()
	}
	changes, err := g.diffTree(nil, from, s.Tree, false)
	if err != nil {
		return Snapshot{}, fmt.Errorf("boundary %.12s: %w", s.Commit, err)
	}
	s.Root = g.root
	s.Paths = s.Paths[:0]
	t := &taker{o: &options{exclude: exclude}}
	for _, c := range changes {
		if t.excluded(c.Path) {
			continue
		}
		e := Entry{Path: c.Path, Head: c.Before, Index: c.Before, Worktree: c.After}
		e.Status, e.XY = classify(&e, false)
		if e.Status == StatusAdded {
			e.Status, e.XY = StatusUntracked, "??"
		}
		s.Paths = append(s.Paths, e)
	}
	return s, nil
}

// Diff lists the changes between two boundary commits (or trees), renames
// detected: a task's effect. from "" is the empty tree.
func Diff(ctx context.Context, repoDir, from, to string) ([]Change, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	if from == "" {
		from = g.emptyTree()
	}
	changes, err := g.diffTree(nil, from, to, true)
	if err != nil {
		return nil, err
	}
	out := changes[:0]
	for _, c := range changes {
		if !Excluded(c.Path) {
			out = append(out, c)
		}
	}
	return out, nil
}

// DiffOptions say how DiffText prints a diff.
type DiffOptions struct {
	// Stat asks for a diffstat; Patch for the patch too. Without Stat the
	// patch is printed whatever Patch says.
	Stat, Patch bool
	// Color asks for git's colors.
	Color bool
}

// DiffText is `git diff` between two boundary commits (or trees) as git
// prints it: a diffstat, a patch, or both (opts).
func DiffText(ctx context.Context, repoDir, from, to string, opts DiffOptions) ([]byte, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	if from == "" {
		from = g.emptyTree()
	}
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "-M"}
	if opts.Stat {
		args = append(args, "--stat")
	}
	if opts.Stat && opts.Patch {
		args = append(args, "--patch")
	}
	if opts.Color {
		args = append(args, "--color=always")
	} else {
		args = append(args, "--color=never")
	}
	out, _, err := g.run(nil, nil, append(args, from, to, "--")...)
	return out, err
}

// Effects lists, for each pair of boundary commits (or trees), the changes
// from the first to the second (renames not detected), in one git call
// however many pairs there are.
func Effects(ctx context.Context, repoDir string, pairs [][2]string) ([][]Change, error) {
	out := make([][]Change, len(pairs))
	if len(pairs) == 0 {
		return out, nil
	}
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	raw, _, err := g.run(nil, g.diffTreeInput(pairs).Bytes(), "diff-tree", "--stdin", "--always", "-r", "-z", "--no-renames", "--no-ext-diff")
	if err != nil {
		return nil, err
	}
	// Each line's output starts with its first id (a pair of trees: both),
	// NUL-terminated, then
	// its raw records.
	i := -1
	for len(raw) > 0 {
		j := bytes.IndexByte(raw, 0)
		if j < 0 {
			return nil, fmt.Errorf("git diff-tree --stdin: output not NUL-terminated")
		}
		if raw[0] != ':' {
			i++
			if i < len(pairs) && !strings.HasPrefix(string(raw[:j]), pairs[i][1]) {
				return nil, missingPair(pairs[i])
			}
			if i >= len(pairs) {
				return nil, fmt.Errorf("git diff-tree --stdin: unexpected header %q", clip(raw[:j]))
			}
			// A pair of trees gets a header ended by a newline, not a NUL.
			if nl := bytes.IndexByte(raw[:j], '\n'); nl >= 0 {
				raw = raw[nl+1:]
			} else {
				raw = raw[j+1:]
			}
			continue
		}
		// One record: its meta and path (no renames: one path).
		k := bytes.IndexByte(raw[j+1:], 0)
		if k < 0 || i < 0 {
			return nil, fmt.Errorf("git diff-tree --stdin: malformed record %q", clip(raw[:j]))
		}
		end := j + 1 + k + 1
		cs, err := parseRaw(raw[:end])
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if !Excluded(c.Path) {
				out[i] = append(out[i], c)
			}
		}
		raw = raw[end:]
	}
	if i < len(pairs)-1 {
		return nil, missingPair(pairs[i+1])
	}
	return out, nil
}

// missingPair is the error for a pair diff-tree --stdin said nothing
// about: it skips, silently, a pair whose objects are not in the
// repository (a forgotten run's boundaries, collected by git gc). An
// effect read as empty there would be a task that did nothing.
func missingPair(p [2]string) error {
	return fmt.Errorf("boundary commits %.12s..%.12s are not in the repository (their run's refs deleted and collected by git gc?)", p[0], p[1])
}

// diffTreeInput is git diff-tree --stdin's input for pairs (from, to):
// a line "<to> <from>" each, from "" standing for the empty tree.
func (g *gitRepo) diffTreeInput(pairs [][2]string) *bytes.Buffer {
	var in bytes.Buffer
	for _, p := range pairs {
		from := p[0]
		if from == "" {
			from = g.emptyTree()
		}
		fmt.Fprintf(&in, "%s %s\n", p[1], from)
	}
	return &in
}
