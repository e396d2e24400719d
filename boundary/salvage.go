package boundary

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// SalvageRefPrefix is where salvage refs live: one ref per run.
const SalvageRefPrefix = "refs/implloop/salvage/"

// SalvageRef returns the ref holding run's salvage commits.
func SalvageRef(run string) string { return SalvageRefPrefix + run }

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

func checkRunID(run string) error {
	if !runIDPattern.MatchString(run) || strings.Contains(run, "..") || strings.HasSuffix(run, ".lock") || strings.HasSuffix(run, ".") {
		return fmt.Errorf("salvage: run id %q cannot be a ref name component", run)
	}
	return nil
}

// WithPrev gives Take the previous boundary: WithPrevHead(prev.Head), and,
// with WithSalvage, the blobs prev salvaged, so that a dirty file unchanged
// since prev is not read and stored again (see reusableSalvage). Without it
// every boundary re-stores every dirty file: quadratic over a run whose
// work stays uncommitted.
func WithPrev(prev Snapshot) Option {
	return func(o *options) {
		o.prevHead, o.prevGiven = prev.Head, true
		o.prevPaths = prev.Paths
	}
}

// salvageRacy is how long before it is read a file must have last changed
// for its stat data to be kept (Entry.SalvagedStat): a write after the read
// then shows as a new mtime, also on filesystems with coarse (FAT: 2 s)
// timestamps. A file salvaged sooner after a change is stored again at the
// next boundary, which then keeps its stat data.
const salvageRacy = 3 * time.Second

// salvage writes every dirty path's worktree bytes into the object database,
// builds a tree of them, and appends a commit for this boundary to the run's
// salvage ref. With prev (the previous boundary's entries, WithPrev), a
// file whose bytes provably did not change since is not stored again: its
// entry and the tree take prev's blob.
func (t *taker) salvage(snap *Snapshot, run string, seq int, prev []Entry) (*SalvageInfo, error) {
	repo, err := t.repository()
	if err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	var files []treeFile
	for i := range snap.Paths {
		e := &snap.Paths[i]
		w := e.Worktree
		if !w.Present() {
			continue
		}
		switch w.Mode.normalize() {
		case ModeRegular, ModeExecutable:
			full := filepath.Join(t.root, filepath.FromSlash(e.Path))
			if id, st, ok := t.reusableSalvage(prev, e, full); ok {
				e.Salvaged, e.SalvagedStat = id, st
				files = append(files, treeFile{e.Path, w.Mode.normalize(), id})
				continue
			}
			id, st, err := t.storeFile(full)
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted since the snapshot was read
			}
			if err != nil {
				return nil, fmt.Errorf("salvage %s: %w", e.Path, err)
			}
			e.Salvaged, e.SalvagedStat = id, st
			files = append(files, treeFile{e.Path, w.Mode.normalize(), id})
		case ModeSymlink:
			full := filepath.Join(t.root, filepath.FromSlash(e.Path))
			target, err := os.Readlink(full)
			if err != nil {
				continue
			}
			id, err := t.storeSmall([]byte(target))
			if err != nil {
				return nil, fmt.Errorf("salvage %s: %w", e.Path, err)
			}
			e.Salvaged = id
			files = append(files, treeFile{e.Path, ModeSymlink, id})
		case ModeGitlink:
			if w.Hash != "" {
				files = append(files, treeFile{e.Path, ModeGitlink, w.Hash})
			}
		}
	}
	treeID, err := t.writeTree(files)
	if err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	refName := plumbing.ReferenceName(SalvageRef(run))
	old, err := repo.Storer.Reference(refName)
	if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, fmt.Errorf("salvage: reading %s: %w", refName, err)
	}
	var parents []plumbing.Hash
	if old != nil {
		parents = []plumbing.Hash{old.Hash()}
	}
	head := snap.Head
	if head == "" {
		head = "(unborn)"
	}
	sig := object.Signature{Name: "implloop", Email: "implloop@localhost", When: time.Now()}
	commit := &object.Commit{
		Author:    sig,
		Committer: sig,
		Message: fmt.Sprintf("implloop salvage: run %s boundary %d\n\n"+
			"The worktree content of the %d dirty path(s) at this boundary.\n\n"+
			"Implloop-Run: %s\nImplloop-Boundary: %d\nImplloop-Head: %s\n",
			run, seq, len(files), run, seq, head),
		TreeHash:     treeID,
		ParentHashes: parents,
	}
	obj := repo.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return nil, fmt.Errorf("salvage: encoding commit: %w", err)
	}
	cid, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return nil, fmt.Errorf("salvage: writing commit: %w", err)
	}
	if err := repo.Storer.CheckAndSetReference(plumbing.NewHashReference(refName, cid), old); err != nil {
		return nil, fmt.Errorf("salvage: updating %s: %w", refName, err)
	}
	return &SalvageInfo{Ref: refName.String(), Commit: cid.String(), Tree: treeID.String()}, nil
}

// reusableSalvage returns the blob prev salvaged for e's file, and the stat
// data it was read with, when the file's raw bytes are provably still that
// blob's: prev has an entry for the path with a Salvaged blob and stat data,
// e's Worktree is the same content and mode, the file's stat data now is
// the same as when prev read it, and the blob is still in the object
// database (the parent's salvage ref may be gone on a resume).
//
// The Worktree hash alone does not do: it is git's blob after the clean
// conversion (autocrlf, eol, filters), which maps different raw files to
// one blob ("a\r\n" and "a\n" under core.autocrlf=true), and salvage has
// to give back the raw bytes. Stat data carries no such conversion: size,
// mtime and (where reported) ctime and inode change with every write (git's
// index trusts the same fields to skip re-reading a file), and prev kept
// them only when the file had last changed well before it was read
// (salvageRacy), so a later write within the same timestamp tick cannot
// leave them unchanged. Looking for "no conversion applies" instead would
// mean replaying git's attribute and config lookup per path.
func (t *taker) reusableSalvage(prev []Entry, e *Entry, full string) (string, FileStat, bool) {
	i := sort.Search(len(prev), func(i int) bool { return prev[i].Path >= e.Path })
	if i == len(prev) || prev[i].Path != e.Path {
		return "", FileStat{}, false
	}
	p := &prev[i]
	if p.Salvaged == "" || !p.Worktree.Same(e.Worktree) || !t.hasObject(p.Salvaged) {
		return "", FileStat{}, false
	}
	if p.SalvagedStat != (FileStat{}) {
		if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() && fileStat(fi) == p.SalvagedStat {
			return p.Salvaged, p.SalvagedStat, true
		}
	}
	// No stat data to go by (prev read the file too soon after it
	// changed) or it changed (touched, rewritten with the same content):
	// hashing the raw bytes costs a read, storing them a new object file.
	// Equal ids are the same bytes.
	id, st, err := t.rawID(full)
	if err != nil || id != p.Salvaged {
		return "", FileStat{}, false
	}
	return id, st, true
}

// rawID is the id of a blob holding the file's raw bytes, with its stat
// data as storeFileOnce keeps it.
func (t *taker) rawID(path string) (string, FileStat, error) {
	readAt := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return "", FileStat{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", FileStat{}, fmt.Errorf("%s: not a regular file", path)
	}
	h := t.newHash()
	h.Write([]byte("blob " + strconv.FormatInt(fi.Size(), 10) + "\x00"))
	if n, err := io.Copy(h, bufio.NewReaderSize(f, 64<<10)); err != nil || n != fi.Size() {
		return "", FileStat{}, errChangedWhileReading
	}
	return fmt.Sprintf("%x", h.Sum(nil)), trustedStat(f, fi, readAt), nil
}

// trustedStat is fi (f's stat data before it was read from readAt on) when
// a later Take may trust it: the file had last changed well before the
// read and did not change during it. Zero otherwise.
func trustedStat(f *os.File, fi os.FileInfo, readAt time.Time) FileStat {
	st := fileStat(fi)
	if !fi.ModTime().Before(readAt.Add(-salvageRacy)) {
		return FileStat{}
	}
	if after, err := f.Stat(); err != nil || fileStat(after) != st {
		return FileStat{}
	}
	return st
}

// hasObject reports whether the object database holds object id (a SHA-1
// id: go-git v5 has no other).
func (t *taker) hasObject(id string) bool {
	if len(id) != 40 || !isHexID(id) {
		return false
	}
	repo, err := t.repository()
	return err == nil && repo.Storer.HasEncodedObject(plumbing.NewHash(id)) == nil
}

// storeFile streams a file into a loose blob and returns its id, with the
// file's stat data when a later Take may trust it (see salvageRacy; zero
// otherwise).
func (t *taker) storeFile(path string) (string, FileStat, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		id, st, err := t.storeFileOnce(path)
		if err == nil || !errors.Is(err, errChangedWhileReading) {
			return id, st, err
		}
		lastErr = err
	}
	return "", FileStat{}, lastErr
}

var errChangedWhileReading = errors.New("file changed size while being read")

func (t *taker) storeFileOnce(path string) (string, FileStat, error) {
	readAt := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return "", FileStat{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", FileStat{}, err
	}
	id, err := t.store(bufio.NewReaderSize(f, 64<<10), fi.Size())
	if err != nil {
		return "", FileStat{}, err
	}
	return id, trustedStat(f, fi, readAt), nil
}

// storeSmall stores b unless the object database has it already (a
// symlink unchanged since an earlier boundary).
func (t *taker) storeSmall(b []byte) (string, error) {
	if id := t.blobID(b); t.hasObject(id) {
		return id, nil
	}
	return t.storeBytes(b)
}

func (t *taker) storeBytes(b []byte) (string, error) {
	return t.store(strings.NewReader(string(b)), int64(len(b)))
}

// store writes size bytes of r as a loose blob without holding them in
// memory. The header needs the size first, so a reader that yields a
// different number of bytes is an error (the file changed under us).
func (t *taker) store(r io.Reader, size int64) (id string, err error) {
	repo, err := t.repository()
	if err != nil {
		return "", err
	}
	lw, ok := repo.Storer.(interface {
		LazyWriter() (io.WriteCloser, func(plumbing.ObjectType, int64) error, error)
	})
	if !ok {
		return "", fmt.Errorf("object storage cannot stream writes")
	}
	w, header, err := lw.LazyWriter()
	if err != nil {
		return "", err
	}
	closed := false
	defer func() {
		if !closed {
			w.Close()
		}
	}()
	if err := header(plumbing.BlobObject, size); err != nil {
		return "", err
	}
	n, err := io.Copy(w, io.LimitReader(r, size))
	if err != nil {
		return "", err
	}
	if n != size {
		return "", errChangedWhileReading
	}
	if extra, _ := r.Read(make([]byte, 1)); extra > 0 {
		return "", errChangedWhileReading
	}
	closed = true
	if err := w.Close(); err != nil {
		return "", err
	}
	hw, ok := w.(interface{ Hash() plumbing.Hash })
	if !ok {
		return "", fmt.Errorf("object writer does not report its id")
	}
	return hw.Hash().String(), nil
}

type treeFile struct {
	path string
	mode Mode
	id   string
}

// writeTree writes the nested trees holding files and returns the root's id.
func (t *taker) writeTree(files []treeFile) (plumbing.Hash, error) {
	type dir struct {
		entries map[string]object.TreeEntry
		subdirs map[string]*dir
	}
	newDir := func() *dir { return &dir{entries: map[string]object.TreeEntry{}, subdirs: map[string]*dir{}} }
	root := newDir()
	for _, f := range files {
		parts := strings.Split(f.path, "/")
		d := root
		for _, p := range parts[:len(parts)-1] {
			sub, ok := d.subdirs[p]
			if !ok {
				sub = newDir()
				d.subdirs[p] = sub
			}
			d = sub
		}
		name := parts[len(parts)-1]
		d.entries[name] = object.TreeEntry{Name: name, Mode: filemode.FileMode(f.mode), Hash: plumbing.NewHash(f.id)}
	}
	repo, err := t.repository()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var write func(d *dir) (plumbing.Hash, error)
	write = func(d *dir) (plumbing.Hash, error) {
		tree := &object.Tree{}
		for name, sub := range d.subdirs {
			if _, clash := d.entries[name]; clash {
				// A path that is both a file and a directory cannot be
				// one tree; the file wins (the directory's paths are
				// dirty entries of their own only if git listed them).
				continue
			}
			id, err := write(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: id})
		}
		for _, e := range d.entries {
			tree.Entries = append(tree.Entries, e)
		}
		sort.Slice(tree.Entries, func(i, j int) bool {
			return treeSortKey(tree.Entries[i]) < treeSortKey(tree.Entries[j])
		})
		obj := repo.Storer.NewEncodedObject()
		if err := tree.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		// A directory unchanged since an earlier boundary has its tree
		// already.
		if h := obj.Hash(); repo.Storer.HasEncodedObject(h) == nil {
			return h, nil
		}
		return repo.Storer.SetEncodedObject(obj)
	}
	return write(root)
}

// treeSortKey orders entries the way git does: a directory sorts as if its
// name ended in '/'.
func treeSortKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}
