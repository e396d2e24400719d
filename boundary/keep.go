package boundary

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gitobj"
)

// Keep says what a boundary keeps beside its tree (WithKeep): files the
// tree cannot hold, or must not. Their bytes go to the repository's object
// store, in a commit on refs/implloop/kept/<run> (KeptRef) whose parents
// are the run's previous kept commit and the boundary commit. That ref is
// local: `implloop push` sends the boundary and records refs only, and no
// boundary commit reaches a kept commit, so kept content never leaves the
// machine.
type Keep struct {
	// Plan is the plan file (relative to the root, slash-separated), left
	// out of the tree (WithExclude): its bytes are kept here, so a task
	// that deletes or rewrites it loses nothing ("" for none).
	Plan string
	// Ignored keeps the user's ignored files: those git status lists as
	// ignored at the first boundary of a run (not the files inside a
	// directory an ignore rule matches as a whole, such as node_modules/
	// or target/: those directories are listed, not stored), followed by
	// their stat data from then on, within Limits.
	Ignored bool
	// Limits cap what is kept of ignored files.
	Limits KeepLimits
	// Paths are more paths (files or directories, relative to the root)
	// to keep although they are inside a wholly ignored directory.
	Paths []string
}

// KeepLimits cap the ignored files a run keeps.
type KeepLimits struct {
	// FileSize: a larger ignored file is listed, not stored.
	FileSize int64 `json:"file_size"`
	// RunSize: the bytes of ignored content a run stores, over all its
	// boundaries; once reached, further files are listed, not stored.
	RunSize int64 `json:"run_size"`
	// Files: at most this many ignored files are kept.
	Files int `json:"files"`
}

// The default limits (git config implloop.keepIgnoredFileSize,
// implloop.keepIgnoredRunSize change them).
const (
	DefaultKeepFileSize = 1 << 20
	DefaultKeepRunSize  = 32 << 20
	DefaultKeepFiles    = 2000
)

// KeptRefPrefix is where the kept commits are: one local ref per run.
const KeptRefPrefix = "refs/implloop/kept/"

// KeptRef is the ref holding run's kept commits.
func KeptRef(run string) string { return KeptRefPrefix + run }

// KeptPlanPath and KeptIgnoredDir are where a kept commit's tree holds
// the plan and the ignored files.
const (
	KeptPlanPath   = "plan"
	KeptIgnoredDir = "ignored"
)

// WithKeep makes a boundary (WithRun) keep k beside its tree
// (Snapshot.Plan, Snapshot.Ignored, Snapshot.Kept). Read-only snapshots
// keep nothing.
func WithKeep(k Keep) Option {
	return func(o *options) { kk := k; o.keep = &kk }
}

// KeptFile is one file kept beside a boundary's tree: its raw bytes (no
// clean filter applied) as a blob.
type KeptFile struct {
	Path string `json:"path"`
	// Blob is the file's raw bytes and mode; absent (Mode 0) when the
	// file is not there.
	Blob Blob  `json:"blob"`
	Size int64 `json:"size,omitempty"`
	stat FileStat
}

// Ignored is what a boundary knows of the user's ignored files.
type Ignored struct {
	// Files are the ignored files kept, in path order.
	Files []KeptFile `json:"files,omitempty"`
	// Dirs are the directories an ignore rule matches as a whole: listed,
	// their content not stored.
	Dirs []string `json:"dirs,omitempty"`
	// Skipped are ignored files over a limit: listed, not stored.
	Skipped []string `json:"skipped,omitempty"`
	// Limits are the caps in force for the run.
	Limits KeepLimits `json:"limits"`
	// Stored is how many bytes of ignored content the run stored so far.
	Stored int64 `json:"stored,omitempty"`
}

// File returns the kept file at path.
func (ig *Ignored) File(path string) (KeptFile, bool) {
	if ig == nil {
		return KeptFile{}, false
	}
	i := sort.Search(len(ig.Files), func(i int) bool { return ig.Files[i].Path >= path })
	if i < len(ig.Files) && ig.Files[i].Path == path {
		return ig.Files[i], true
	}
	return KeptFile{}, false
}

// Listed reports whether path is an ignored file the boundary saw but did
// not store (Skipped), or is inside a listed directory (Dirs).
func (ig *Ignored) Listed(path string) bool {
	if ig == nil {
		return false
	}
	for _, s := range ig.Skipped {
		if s == path {
			return true
		}
	}
	for _, d := range ig.Dirs {
		if strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// KeepSettings reads the repository's settings for what boundaries keep
// of ignored files (git config, any scope): implloop.keepIgnoredFileSize
// and implloop.keepIgnoredRunSize (bytes, with an optional k, m or g
// suffix; a file size of 0 keeps no ignored file), and implloop.keep
// (paths inside wholly ignored directories to keep too; may be given more
// than once). The result has Ignored set unless the file size is 0.
func KeepSettings(ctx context.Context, dir string) (Keep, error) {
	k := Keep{Ignored: true, Limits: KeepLimits{FileSize: DefaultKeepFileSize, RunSize: DefaultKeepRunSize, Files: DefaultKeepFiles}}
	root, err := findRoot(dir)
	if err != nil {
		return k, err
	}
	g := &gitRepo{ctx: ctx, root: root}
	out, _, err := g.run(nil, nil, "config", "-z", "--get-regexp", `^implloop\.keep`)
	if err != nil {
		if exitCode(err) == 1 {
			return k, nil // none set
		}
		return k, fmt.Errorf("reading implloop.keep settings: %w", err)
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		key, val, _ := strings.Cut(rec, "\n")
		switch strings.ToLower(key) {
		case "implloop.keepignoredfilesize":
			n, err := parseSize(val)
			if err != nil {
				return k, fmt.Errorf("git config implloop.keepIgnoredFileSize: %w", err)
			}
			k.Limits.FileSize = n
		case "implloop.keepignoredrunsize":
			n, err := parseSize(val)
			if err != nil {
				return k, fmt.Errorf("git config implloop.keepIgnoredRunSize: %w", err)
			}
			k.Limits.RunSize = n
		case "implloop.keep":
			if p := path.Clean(strings.TrimSuffix(filepath.ToSlash(val), "/")); validRepoPath(p) {
				k.Paths = append(k.Paths, p)
			}
		}
	}
	k.Ignored = k.Limits.FileSize > 0
	return k, nil
}

// parseSize reads a byte count with an optional k, m or g suffix (powers
// of 1024), as git config --type=int does.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1<<10, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "m"):
		mult, s = 1<<20, strings.TrimSuffix(s, "m")
	case strings.HasSuffix(s, "g"):
		mult, s = 1<<30, strings.TrimSuffix(s, "g")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (bytes, with an optional k, m or g)", s)
	}
	return n * mult, nil
}

// keep fills in what the boundary keeps beside its tree (the plan, the
// ignored files) and writes a kept commit when that changed since the
// previous boundary of the run.
func (t *taker) keep(snap *Snapshot) error {
	k := t.o.keep
	prev := t.o.prev
	var hash []*KeptFile // files to hash, in order
	if k.Plan != "" {
		pf := &KeptFile{Path: k.Plan}
		if st, mode, ok := t.regular(k.Plan); ok {
			pf.Blob.Mode, pf.Size, pf.stat = mode, st.Size, st
			if prev != nil && prev.Plan != nil && prev.Plan.Path == k.Plan && prev.Plan.stat == st && prev.Plan.Blob.Mode == mode {
				pf.Blob = prev.Plan.Blob
			} else {
				hash = append(hash, pf)
			}
		}
		snap.Plan = pf
	}
	if k.Ignored {
		var ig *Ignored
		var more []*KeptFile
		if prev != nil && prev.Ignored != nil {
			ig, more = t.carryIgnored(prev.Ignored)
		} else {
			var err error
			if ig, more, err = t.listIgnored(k); err != nil {
				return err
			}
		}
		hash = append(hash, more...)
		snap.Ignored = ig
	}
	if err := t.hashFiles(hash); err != nil {
		return err
	}
	if snap.Ignored != nil {
		// Files hashed into place point into this slice.
		sort.Slice(snap.Ignored.Files, func(i, j int) bool { return snap.Ignored.Files[i].Path < snap.Ignored.Files[j].Path })
		files := snap.Ignored.Files[:0]
		for _, f := range snap.Ignored.Files {
			if f.Blob.Hash != "" {
				files = append(files, f)
			} else {
				snap.Ignored.Skipped = append(snap.Ignored.Skipped, f.Path) // unreadable
			}
		}
		snap.Ignored.Files = files
		sort.Strings(snap.Ignored.Skipped)
	}
	if snap.Plan == nil || !snap.Plan.Blob.Present() {
		if snap.Ignored == nil || len(snap.Ignored.Files) == 0 {
			if prev == nil || prev.Kept == "" {
				return nil // nothing kept, nor before
			}
		}
	}
	if prev != nil && prev.Kept != "" && sameKept(prev, snap) {
		// Unchanged, and still on the run's kept ref (read without git).
		if cur, ok := t.g.readRef(KeptRef(t.o.run)); ok && cur == prev.Kept {
			snap.Kept = prev.Kept
			return nil
		}
	}
	return t.writeKept(snap)
}

// regular lstats a path of the work tree (or an absolute one): its stat
// data and mode when it is a regular file.
func (t *taker) regular(p string) (FileStat, Mode, bool) {
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(t.g.root, filepath.FromSlash(p))
	}
	fi, err := os.Lstat(full)
	if err != nil || !fi.Mode().IsRegular() {
		return FileStat{}, 0, false
	}
	mode := ModeRegular
	if fi.Mode()&0o111 != 0 {
		mode = ModeExecutable
	}
	return fileStat(fi), mode, true
}

// listIgnored lists the ignored files and wholly ignored directories
// (ignoredList), and the files under the configured paths inside those
// directories, and decides which to keep within the limits. The files to
// keep are returned for hashing.
func (t *taker) listIgnored(k *Keep) (*Ignored, []*KeptFile, error) {
	ig := &Ignored{Limits: k.Limits}
	var recs []string
	var err error
	if t.ignoredCh != nil {
		l := <-t.ignoredCh
		t.ignoredCh = nil
		recs, err = l.recs, l.err
	} else {
		recs, err = t.ignoredList()
	}
	if err != nil {
		return nil, nil, err
	}
	var files []string
	for _, r := range recs {
		if d, ok := strings.CutSuffix(r, "/"); ok {
			if !t.addExcluded(d) {
				ig.Dirs = append(ig.Dirs, d)
			}
			continue
		}
		if !t.addExcluded(r) {
			files = append(files, r)
		}
	}
	sort.Strings(ig.Dirs)
	for _, p := range k.Paths {
		inside := false
		for _, d := range ig.Dirs {
			inside = inside || p == d || strings.HasPrefix(p, d+"/")
		}
		if !inside {
			continue // not in an ignored directory: listed by status when ignored
		}
		root := filepath.Join(t.g.root, filepath.FromSlash(p))
		_ = filepath.WalkDir(root, func(full string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				if rel, err := filepath.Rel(t.g.root, full); err == nil {
					files = append(files, filepath.ToSlash(rel))
				}
			}
			return nil
		})
	}
	sort.Strings(files)
	var hash []*KeptFile
	for i, p := range files {
		if i > 0 && files[i-1] == p {
			continue
		}
		st, mode, ok := t.regular(p)
		switch {
		case !ok:
			continue // a symlink, a socket: not kept
		case st.Size > k.Limits.FileSize || len(ig.Files) >= k.Limits.Files || ig.Stored+st.Size > k.Limits.RunSize:
			ig.Skipped = append(ig.Skipped, p)
			continue
		}
		ig.Stored += st.Size
		ig.Files = append(ig.Files, KeptFile{Path: p, Blob: Blob{Mode: mode}, Size: st.Size, stat: st})
	}
	for i := range ig.Files {
		hash = append(hash, &ig.Files[i])
	}
	return ig, hash, nil
}

// carryIgnored follows the ignored files of the previous boundary by
// their stat data: a file gone from disk is dropped (the guard sees it
// lost), one whose stat data changed is hashed again (within the limits),
// and the listed directories and files still there stay listed. New
// ignored files are not looked for: the user's are those of the first
// boundary; what tasks write there is their output.
func (t *taker) carryIgnored(prev *Ignored) (*Ignored, []*KeptFile) {
	ig := &Ignored{Limits: prev.Limits, Stored: prev.Stored}
	for _, f := range prev.Files {
		st, mode, ok := t.regular(f.Path)
		if !ok {
			continue
		}
		if st == f.stat && mode == f.Blob.Mode {
			ig.Files = append(ig.Files, f)
			continue
		}
		if st.Size > ig.Limits.FileSize || ig.Stored+st.Size > ig.Limits.RunSize {
			ig.Skipped = append(ig.Skipped, f.Path)
			continue
		}
		ig.Stored += st.Size
		ig.Files = append(ig.Files, KeptFile{Path: f.Path, Blob: Blob{Mode: mode}, Size: st.Size, stat: st})
	}
	for _, s := range prev.Skipped {
		if _, err := os.Lstat(filepath.Join(t.g.root, filepath.FromSlash(s))); err == nil {
			ig.Skipped = append(ig.Skipped, s)
		}
	}
	for _, d := range prev.Dirs {
		if fi, err := os.Lstat(filepath.Join(t.g.root, filepath.FromSlash(d))); err == nil && fi.IsDir() {
			ig.Dirs = append(ig.Dirs, d)
		}
	}
	var hash []*KeptFile
	for i := range ig.Files {
		if ig.Files[i].Blob.Hash == "" {
			hash = append(hash, &ig.Files[i])
		}
	}
	return ig, hash
}

// ignoredList lists the ignored paths, relative to the index Take uses
// (a path the boundaries follow is not ignored): files, and directories
// an ignore rule matches as a whole (with a trailing slash), as
// `git status --ignored=matching` does. It asks `git ls-files --others
// --ignored --directory`, which walks the work tree for what is not in
// the index only (a quarter of a git status at 100,000 files): that
// lists a directory whose files are all ignored, then those files; a
// directory listed alone is one a rule matches as a whole. It writes
// nothing.
func (t *taker) ignoredList() ([]string, error) {
	out, _, err := t.g.run(t.env, nil, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil, fmt.Errorf("listing ignored files: %w", err)
	}
	recs := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	sort.Strings(recs)
	var list []string
	for i, r := range recs {
		if r == "" {
			continue
		}
		if strings.HasSuffix(r, "/") && i+1 < len(recs) && strings.HasPrefix(recs[i+1], r) {
			continue // its files (or directories) follow
		}
		list = append(list, r)
	}
	return list, nil
}

// hashFiles stores the raw bytes of files (no clean filter: restore
// writes them back byte for byte) and sets their ids; a file that could
// not be read keeps an empty id.
func (t *taker) hashFiles(files []*KeptFile) error {
	if len(files) == 0 {
		return nil
	}
	paths := make([]string, len(files))
	for i, f := range files {
		p := f.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(t.g.root, filepath.FromSlash(p))
		}
		paths[i] = p
	}
	ids, err := t.g.objects(nil).BlobFiles(t.g.ctx, paths)
	if err != nil {
		if t.g.ctx.Err() != nil {
			return t.g.ctx.Err()
		}
		// One unreadable file fails the batch: hash one by one.
		if len(files) == 1 {
			why := err.Error()
			var ge *gitcmd.Error
			if errors.As(err, &ge) {
				why = ge.Stderr
			}
			t.problems = append(t.problems, fmt.Sprintf("%s: not kept: %s", files[0].Path, strings.TrimSpace(why)))
			return nil
		}
		for _, f := range files {
			if err := t.hashFiles([]*KeptFile{f}); err != nil {
				return err
			}
		}
		return nil
	}
	for i, f := range files {
		f.Blob.Hash = ids[i]
	}
	return nil
}

// sameKept reports whether a and b keep the same content.
func sameKept(a *Snapshot, b *Snapshot) bool {
	if (a.Plan == nil) != (b.Plan == nil) || a.Plan != nil && (a.Plan.Path != b.Plan.Path || a.Plan.Blob != b.Plan.Blob) {
		return false
	}
	var af, bf []KeptFile
	if a.Ignored != nil {
		af = a.Ignored.Files
	}
	if b.Ignored != nil {
		bf = b.Ignored.Files
	}
	if len(af) != len(bf) {
		return false
	}
	for i := range af {
		if af[i].Path != bf[i].Path || af[i].Blob != bf[i].Blob {
			return false
		}
	}
	return true
}

// writeKept writes the kept commit: a tree holding the plan (KeptPlanPath)
// and the ignored files (under KeptIgnoredDir), its parents the run's
// previous kept commit and the boundary commit, and moves the run's kept
// ref to it.
func (t *taker) writeKept(snap *Snapshot) error {
	g := t.g
	var in bytes.Buffer
	add := func(m Mode, id, p string) {
		fmt.Fprintf(&in, "%s %s\t%s", m, id, p)
		in.WriteByte(0)
	}
	if snap.Plan != nil && snap.Plan.Blob.Present() {
		add(snap.Plan.Blob.Mode, snap.Plan.Blob.Hash, KeptPlanPath)
	}
	if snap.Ignored != nil {
		for _, f := range snap.Ignored.Files {
			add(f.Blob.Mode, f.Blob.Hash, KeptIgnoredDir+"/"+f.Path)
		}
	}
	index := filepath.Join(stateDir(g.gitDir), "kept-index")
	env := []string{"GIT_INDEX_FILE=" + index}
	var tree string
	if snap.Ignored == nil || len(snap.Ignored.Files) == 0 {
		// The plan alone (or nothing): one level.
		var one []gitobj.Entry
		if snap.Plan != nil && snap.Plan.Blob.Present() {
			one = append(one, gitobj.Entry{Mode: uint32(snap.Plan.Blob.Mode), Name: KeptPlanPath, ID: snap.Plan.Blob.Hash})
		}
		id, err := g.objects(nil).Tree(g.ctx, one)
		if err != nil {
			return fmt.Errorf("kept files: %w", err)
		}
		tree = id
	} else {
		os.Remove(index)
		defer os.Remove(index)
		if _, _, err := g.run(env, in.Bytes(), "update-index", "--add", "-z", "--index-info"); err != nil {
			return fmt.Errorf("kept files: %w", err)
		}
		out, _, err := g.run(env, nil, "write-tree")
		if err != nil {
			return fmt.Errorf("kept files: %w", err)
		}
		tree = strings.TrimSpace(string(out))
	}
	ref := KeptRef(t.o.run)
	cur, _ := g.readRef(ref)
	var parents []string
	if p := t.o.prev; p != nil && p.Kept != "" && (cur == p.Kept || g.hasObject(p.Kept+"^{commit}")) {
		parents = append(parents, p.Kept)
	}
	if snap.Commit != "" {
		parents = append(parents, snap.Commit)
	}
	msg := fmt.Sprintf("implloop: run %s, kept beside the boundary\n\nThe plan and the user's ignored files, kept locally (never pushed).\n\nImplloop-Run: %s\n", t.o.run, t.o.run)
	us := gitobj.Ident{Name: "implloop", Email: "implloop@localhost"}
	id, err := g.objects(nil).Commit(g.ctx, gitobj.Commit{Tree: tree, Parents: parents, Author: us, Committer: us, Message: msg})
	if err != nil {
		return fmt.Errorf("kept files: %w", err)
	}
	// Moved meanwhile (an agent): the chain goes on from here (anyOld).
	// It moves with the run's ref (moveRefs).
	t.moves = append(t.moves, refMove{ref: ref, id: id, old: cur, msg: "implloop: kept", anyOld: true, wrap: "kept files"})
	snap.Kept = id
	return nil
}

// ReadBlob returns the bytes of blob id from the object store of the
// repository containing dir, as stored (no filter applied).
func ReadBlob(ctx context.Context, dir, id string) ([]byte, error) {
	if !isHexID(id) {
		return nil, fmt.Errorf("blob id %q", id)
	}
	g, err := openGit(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, _, err := g.run(nil, nil, "cat-file", "blob", id)
	if err != nil {
		return nil, fmt.Errorf("reading blob %.12s: %w", id, err)
	}
	return out, nil
}

// KeptPlans returns the plan's bytes as run's boundaries kept them: at its
// first boundary and at its last (ok false when the run kept no plan).
// Read-only.
func KeptPlans(ctx context.Context, dir, run string) (first, last []byte, ok bool, err error) {
	if err := checkRunID(run); err != nil {
		return nil, nil, false, err
	}
	g, err := openGit(ctx, dir)
	if err != nil {
		return nil, nil, false, err
	}
	ref := KeptRef(run)
	if id, read := g.readRef(ref); read && id == "" {
		return nil, nil, false, nil // none
	}
	// The kept commits chain by their first parents; the oldest one's first
	// parent is a boundary commit.
	out, _, err := g.run(nil, nil, "log", "--first-parent", "--format=%H %s", ref, "--")
	if err != nil {
		return nil, nil, false, nil // not there (a reftable, a ref deleted meanwhile)
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, subject, _ := strings.Cut(line, " ")
		if !strings.HasSuffix(subject, ", kept beside the boundary") {
			break
		}
		kept = append(kept, id)
	}
	if len(kept) == 0 {
		return nil, nil, false, nil
	}
	read := func(commit string) ([]byte, bool) {
		b, _, err := g.run(nil, nil, "cat-file", "blob", commit+":"+KeptPlanPath)
		return b, err == nil
	}
	last, okLast := read(kept[0])
	first, okFirst := read(kept[len(kept)-1])
	if !okLast || !okFirst {
		return nil, nil, false, nil
	}
	return first, last, true, nil
}
