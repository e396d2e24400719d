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

// salvage writes every dirty path's worktree bytes into the object database,
// builds a tree of them, and appends a commit for this boundary to the run's
// salvage ref.
func (t *taker) salvage(snap *Snapshot, run string, seq int) (*SalvageInfo, error) {
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
			id, err := t.storeFile(filepath.Join(t.root, filepath.FromSlash(e.Path)))
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted since the snapshot was read
			}
			if err != nil {
				return nil, fmt.Errorf("salvage %s: %w", e.Path, err)
			}
			e.Salvaged = id
			files = append(files, treeFile{e.Path, w.Mode.normalize(), id})
		case ModeSymlink:
			full := filepath.Join(t.root, filepath.FromSlash(e.Path))
			target, err := os.Readlink(full)
			if err != nil {
				continue
			}
			id, err := t.storeBytes([]byte(target))
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

// storeFile streams a file into a loose blob and returns its id.
func (t *taker) storeFile(path string) (string, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		id, err := t.storeFileOnce(path)
		if err == nil || !errors.Is(err, errChangedWhileReading) {
			return id, err
		}
		lastErr = err
	}
	return "", lastErr
}

var errChangedWhileReading = errors.New("file changed size while being read")

func (t *taker) storeFileOnce(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	return t.store(bufio.NewReaderSize(f, 64<<10), fi.Size())
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
