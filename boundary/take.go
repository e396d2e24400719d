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
	"sort"
	"strconv"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Option configures Take.
type Option func(*options)

type options struct {
	track       []string
	salvageRun  string
	salvageSeq  int
	salvageWant bool
	prevHead    string
	prevGiven   bool
	prevPaths   []Entry // WithPrev: the previous boundary's entries, for salvage
}

// WithTrack asks Take to record, for each of paths that is not dirty now, its
// content at the current HEAD (Snapshot.Tracked). Pass the previous
// boundary's PathNames so that guard.Compare can tell a committed path from a
// reverted one without reading git itself.
func WithTrack(paths ...string) Option {
	return func(o *options) { o.track = append(o.track, paths...) }
}

// WithSalvage makes Take store the raw worktree content of every dirty path
// in the object database, as boundary seq of run: a commit on
// refs/implloop/salvage/<run> (see docs/boundary.md). The bytes stored are
// the bytes read for this snapshot. run must be usable as one ref name
// component (letters, digits, '.', '_', '-').
func WithSalvage(run string, seq int) Option {
	return func(o *options) { o.salvageRun, o.salvageSeq, o.salvageWant = run, seq, true }
}

// statusArgs is the one git invocation a snapshot costs.
var statusArgs = []string{"--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"}

// Take snapshots the repository whose worktree contains repoDir. It writes
// nothing unless WithSalvage is given.
func Take(ctx context.Context, repoDir string, opts ...Option) (Snapshot, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.salvageWant {
		if err := checkRunID(o.salvageRun); err != nil {
			return Snapshot{}, err
		}
	}
	gitPath, err := gitBinary()
	if err != nil {
		return Snapshot{}, err
	}
	root, err := findRoot(repoDir)
	if err != nil {
		return Snapshot{}, err
	}
	out, err := runGit(ctx, gitPath, root, nil, statusArgs...)
	if err != nil {
		return Snapshot{}, err
	}
	st, err := parsePorcelainV2(out)
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading git status in %s: %w", root, err)
	}
	t := &taker{ctx: ctx, gitPath: gitPath, root: root, st: st}
	snap := Snapshot{Root: root, Head: st.oid}
	switch st.head {
	case "(detached)":
		snap.Detached = true
	default:
		snap.Branch = st.head
	}
	entries, err := t.entries()
	if err != nil {
		return Snapshot{}, err
	}
	if err := t.resolveWorktree(entries); err != nil {
		return Snapshot{}, err
	}
	snap.Paths = make([]Entry, len(entries))
	for i, e := range entries {
		e.Entry.Status = e.status()
		snap.Paths[i] = e.Entry
	}
	if len(o.track) > 0 {
		snap.Tracked = t.track(&snap, o.track)
	}
	if o.prevGiven && o.prevHead != snap.Head {
		for path, b := range t.headChange(&snap, &o) {
			if _, dirty := snap.Lookup(path); dirty {
				continue
			}
			if snap.Tracked == nil {
				snap.Tracked = map[string]Blob{}
			}
			snap.Tracked[path] = b
		}
	}
	if o.salvageWant {
		info, err := t.salvage(&snap, o.salvageRun, o.salvageSeq, o.prevPaths)
		if err != nil {
			return Snapshot{}, err
		}
		snap.Salvage = info
	}
	snap.Problems = t.problems
	return snap, nil
}

// taker holds the state of one Take.
type taker struct {
	ctx      context.Context
	gitPath  string
	root     string
	st       porcelainStatus
	repo     *git.Repository
	repoErr  error
	opened   bool
	headTree *object.Tree
	treeErr  error
	treeRead bool
	subtrees map[plumbing.Hash]*object.Tree
	problems []string
}

// repository opens go-git on first use.
func (t *taker) repository() (*git.Repository, error) {
	if !t.opened {
		t.opened = true
		t.repo, t.repoErr = openRepo(t.root)
	}
	return t.repo, t.repoErr
}

// tree returns HEAD's tree (nil, nil when unborn).
func (t *taker) tree() (*object.Tree, error) {
	if t.treeRead {
		return t.headTree, t.treeErr
	}
	t.treeRead = true
	if t.st.oid == "" {
		return nil, nil
	}
	repo, err := t.repository()
	if err != nil {
		t.treeErr = err
		return nil, err
	}
	c, err := repo.CommitObject(plumbing.NewHash(t.st.oid))
	if err != nil {
		t.treeErr = fmt.Errorf("reading HEAD commit %s: %w", t.st.oid, err)
		return nil, t.treeErr
	}
	t.headTree, t.treeErr = c.Tree()
	if t.treeErr != nil {
		t.treeErr = fmt.Errorf("reading HEAD tree of %s: %w", t.st.oid, t.treeErr)
	}
	return t.headTree, t.treeErr
}

// headBlob returns path's content at HEAD. It walks the trees itself:
// go-git's FindEntry rejects names with control characters and splits on
// backslashes, both of which git allows in a name.
func (t *taker) headBlob(path string) (Blob, error) {
	tree, err := t.tree()
	if err != nil {
		return Blob{}, err
	}
	if tree == nil {
		return Blob{}, nil
	}
	parts := strings.Split(path, "/")
	for i, part := range parts {
		var found *object.TreeEntry
		for j := range tree.Entries {
			if tree.Entries[j].Name == part {
				found = &tree.Entries[j]
				break
			}
		}
		if found == nil {
			return Blob{}, nil
		}
		if i == len(parts)-1 {
			return Blob{Hash: found.Hash.String(), Mode: Mode(found.Mode)}, nil
		}
		if found.Mode != filemode.Dir {
			return Blob{}, nil // a file where the path needs a directory
		}
		sub, ok := t.subtrees[found.Hash]
		if !ok {
			if sub, err = t.repo.TreeObject(found.Hash); err != nil {
				return Blob{}, fmt.Errorf("reading tree %s at HEAD: %w", found.Hash, err)
			}
			if t.subtrees == nil {
				t.subtrees = map[plumbing.Hash]*object.Tree{}
			}
			t.subtrees[found.Hash] = sub
		}
		tree = sub
	}
	return Blob{}, nil
}

// pending is an entry whose worktree side may still need reading.
type pending struct {
	Entry
	kind      byte // the record it came from; 's' for a rename's synthesized source
	needRead  bool // hash the worktree file
	gitlink   bool // the worktree side is a repository: read its HEAD
	untracked bool
}

func (p *pending) status() Status {
	switch {
	case p.kind == 'u':
		return StatusConflicted
	case strings.HasPrefix(p.Submodule, "S"):
		return StatusSubmodule
	case p.kind == '2' && p.OrigPath != "":
		if p.XY[0] == 'C' || p.XY[1] == 'C' {
			return StatusCopied
		}
		return StatusRenamed
	case p.untracked:
		return StatusUntracked
	}
	h, w := p.Head, p.Worktree
	switch {
	case !h.Present() && w.Present():
		return StatusAdded
	case !h.Present():
		return StatusAdded // staged, then removed from the worktree
	case !w.Present():
		return StatusDeleted
	case h.Mode.normalize()&0o170000 != w.Mode.normalize()&0o170000:
		return StatusTypeChange
	}
	return StatusModified
}

// entries turns git's records into one entry per path, sorted.
func (t *taker) entries() ([]*pending, error) {
	byPath := map[string]*pending{}
	sources := map[string]*pending{} // old paths of renames
	for _, r := range t.st.records {
		if r.kind == '!' {
			continue
		}
		path := r.path
		if r.kind == '?' && strings.HasSuffix(path, "/") {
			path = strings.TrimSuffix(path, "/")
		}
		switch r.kind {
		case '1', '2':
			mH, mI, mW := r.modes[0], r.modes[1], r.modes[2]
			p := &pending{kind: r.kind, Entry: Entry{Path: path, XY: r.xy}}
			if r.sub != "N..." {
				p.Submodule = r.sub
			}
			p.Index = blobOf(mI, r.hashes[1])
			if r.kind == '1' {
				p.Head = blobOf(mH, r.hashes[0])
			} else {
				p.OrigPath = r.orig
				if r.score[0] == 'R' {
					sources[r.orig] = &pending{kind: 's', Entry: Entry{
						Path: r.orig, RenamedTo: path, XY: r.xy,
						Head: blobOf(mH, r.hashes[0]),
					}}
				}
			}
			switch {
			case mW == ModeAbsent || r.xy[1] == 'D':
				// Gone from the worktree.
			case p.Submodule != "":
				if p.Submodule[1] == 'C' {
					p.gitlink = true
				} else {
					p.Worktree = blobOf(mW, r.hashes[1])
				}
			case r.xy[1] == '.':
				// Clean relative to the index: the index blob is the content.
				p.Worktree = blobOf(mW, r.hashes[1])
			default:
				p.needRead = true
				p.Worktree.Mode = mW
			}
			byPath[path] = p
		case 'u':
			p := &pending{kind: 'u', Entry: Entry{Path: path, XY: r.xy}}
			if r.sub != "N..." {
				p.Submodule = r.sub
			}
			hb, err := t.headBlob(path)
			if err != nil {
				// Ours (stage 2) is HEAD's side in merges, rebases,
				// cherry-picks and stash applications.
				hb = blobOf(r.modes[1], r.hashes[1])
				t.problems = append(t.problems, fmt.Sprintf("%s: HEAD content taken from the conflict's stage 2: %v", path, err))
			}
			p.Head = hb
			if r.modes[3] != ModeAbsent {
				p.needRead = true
				p.Worktree.Mode = r.modes[3]
			}
			byPath[path] = p
		case '?':
			p, ok := byPath[path]
			if !ok {
				p = &pending{kind: '?', Entry: Entry{Path: path, XY: "??"}}
				byPath[path] = p
			}
			// Untracked bytes at a path the index no longer has (git rm
			// --cached): the worktree side is the untracked file.
			p.untracked = true
			p.needRead = true
			p.Worktree = Blob{}
		}
	}
	for path, s := range sources {
		if p, ok := byPath[path]; ok {
			if p.Head == (Blob{}) && p.kind == '?' {
				p.Head = s.Head
				p.RenamedTo = s.RenamedTo
			}
			continue
		}
		byPath[path] = s
	}
	out := make([]*pending, 0, len(byPath))
	for path, p := range byPath {
		if Excluded(path) {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// resolveWorktree fills in the worktree side of entries git could not give:
// files are hashed by one `git hash-object --stdin-paths`, symlinks from
// their target, repositories from their HEAD.
func (t *taker) resolveWorktree(entries []*pending) error {
	var files []*pending
	for _, p := range entries {
		if !p.needRead && !p.gitlink {
			continue
		}
		full := filepath.Join(t.root, filepath.FromSlash(p.Path))
		fi, err := os.Lstat(full)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || isNotDir(err) {
				p.Worktree = Blob{} // gone since git looked
				continue
			}
			return fmt.Errorf("reading %s: %w", full, err)
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return fmt.Errorf("reading symlink %s: %w", full, err)
			}
			p.Worktree = Blob{Hash: t.blobID([]byte(target)), Mode: ModeSymlink}
		case fi.IsDir():
			// A submodule or a nested repository: never descended, its
			// content is the commit checked out in it.
			p.Worktree = Blob{Mode: ModeGitlink}
			if h, err := nestedHead(full); err == nil {
				p.Worktree.Hash = h
			} else {
				t.problems = append(t.problems, fmt.Sprintf("%s: repository HEAD unreadable: %v", p.Path, err))
			}
		case fi.Mode().IsRegular():
			mode := ModeRegular
			if fi.Mode()&0o111 != 0 {
				mode = ModeExecutable
			}
			if !p.untracked && (p.Worktree.Mode == ModeRegular || p.Worktree.Mode == ModeExecutable) {
				mode = p.Worktree.Mode // git's view (core.fileMode)
			}
			p.Worktree = Blob{Mode: mode}
			files = append(files, p)
		default:
			// Sockets, fifos: git does not track them.
			p.Worktree = Blob{}
		}
	}
	return t.hashFiles(files)
}

func isNotDir(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// hashFiles sets Worktree.Hash of files with git's own clean conversion.
func (t *taker) hashFiles(files []*pending) error {
	for attempt := 0; len(files) > 0; attempt++ {
		var in bytes.Buffer
		for _, p := range files {
			in.WriteString(quoteCPath(p.Path))
			in.WriteByte('\n')
		}
		out, err := runGit(t.ctx, t.gitPath, t.root, in.Bytes(), "hash-object", "--stdin-paths")
		if err != nil {
			if attempt > 0 || t.ctx.Err() != nil {
				return err
			}
			// A file may have vanished since git status: drop the
			// missing ones and try once more.
			kept := files[:0]
			for _, p := range files {
				if _, serr := os.Lstat(filepath.Join(t.root, filepath.FromSlash(p.Path))); serr == nil {
					kept = append(kept, p)
				} else {
					p.Worktree = Blob{}
				}
			}
			files = kept
			continue
		}
		ids := strings.Fields(string(out))
		if len(ids) != len(files) {
			return fmt.Errorf("git hash-object in %s: %d ids for %d paths", t.root, len(ids), len(files))
		}
		for i, p := range files {
			if !isHexID(ids[i]) {
				return fmt.Errorf("git hash-object in %s: bad id %q", t.root, ids[i])
			}
			p.Worktree.Hash = ids[i]
		}
		return nil
	}
	return nil
}

// newHash returns the repository's object hash (SHA-1 unless git showed
// 64-digit ids).
func (t *taker) newHash() hash.Hash {
	if t.st.hashSize == 64 {
		return sha256.New()
	}
	return sha1.New()
}

// blobID is git's id of a blob holding data.
func (t *taker) blobID(data []byte) string {
	h := t.newHash()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// nestedHead returns the commit checked out in the repository at dir.
func nestedHead(dir string) (string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return "", err
	}
	ref, err := repo.Head()
	if err != nil {
		return "", err
	}
	return ref.Hash().String(), nil
}

// track records HEAD content for the asked-for paths that are clean now.
func (t *taker) track(snap *Snapshot, paths []string) map[string]Blob {
	out := map[string]Blob{}
	for _, path := range paths {
		if _, dirty := snap.Lookup(path); dirty {
			continue
		}
		if _, done := out[path]; done {
			continue
		}
		b, err := t.headBlob(path)
		if err != nil {
			t.problems = append(t.problems, fmt.Sprintf("%s: content at HEAD unknown: %v", path, err))
			continue
		}
		out[path] = b
	}
	return out
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
