package boundary

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/implloop/implloop/internal/gitobj"
)

// A read-only snapshot (Take without WithRun: `implloop status`) must
// write nothing to the repository, and should cost about one `git status`.
// Building its tree the way a boundary does (`git add -A` into a copy of
// the real index, then `git write-tree`) costs several: the new objects
// must go to a temporary object directory that does not see the
// repository's own (git freshens, that is touches, an object it finds
// already stored instead of writing it), so every tree the index's cache
// names looks missing and is written again, 1,100 of them at 100,000
// files.
//
// statusSnapshot builds it from one `git status` instead. The paths git
// status does not list have the same content at HEAD, in the index and in
// the work tree, so the snapshot tree is HEAD's tree with the listed
// paths set to their work-tree content (their index content where the
// work tree matches the index; excluded paths keep their index content,
// as `git add -A` with exclude pathspecs leaves them). Only the files
// that differ from the index are hashed (a `git add` into an index of
// their own, objects into the temporary directory), only the trees on the
// way to a changed path are read (one `git cat-file --batch`) and
// written (here, into the temporary directory), and the dirty set comes
// from the status's own columns (its staged renames included): no
// command reads the whole index but git status itself.
//
// A changed text file with CRLF line ends is hashed with its index entry
// (and blob) in that index: whether git converts it depends on whether
// the index's blob has CRs ("safer autocrlf").
//
// It reports ok false, and the caller takes the snapshot the long way,
// whenever the status holds something this reading cannot answer exactly
// as `git add -A` would: an intent-to-add entry, a .gitattributes deleted
// or replaced in the work tree (git add then reads the index's), a
// conflicted CRLF file, a path that would need a directory where HEAD has
// a file (it changed while we looked), a git that fails.

// stRecord is one record of `git status --porcelain=v2 -z`.
type stRecord struct {
	kind       byte // '1', '2', 'u', '?'
	x, y       byte
	sub        string
	mH, mI, mW Mode
	hH, hI     string
	path, orig string
	score      int
}

// errNotFast says the status holds something statusSnapshot does not read.
var errNotFast = errors.New("not for the status reading")

// parseStatusV2 reads `git status --porcelain=v2 -z --find-renames`. A
// record it does not expect is errNotFast; one it cannot parse an error.
func parseStatusV2(out []byte) ([]stRecord, error) {
	var recs []stRecord
	for len(out) > 0 {
		i := bytes.IndexByte(out, 0)
		if i < 0 {
			return nil, fmt.Errorf("git status: record %q is not NUL-terminated", clip(out))
		}
		rec := string(out[:i])
		out = out[i+1:]
		if rec == "" {
			return nil, fmt.Errorf("git status: empty record")
		}
		bad := fmt.Errorf("git status: cannot parse %q", clip([]byte(rec)))
		switch rec[0] {
		case '#':
			continue
		case '?':
			p, ok := strings.CutPrefix(rec, "? ")
			if !ok || p == "" || p == "/" {
				return nil, bad
			}
			recs = append(recs, stRecord{kind: '?', path: p})
			continue
		case '1', '2', 'u':
		default:
			// '!' (not asked for) or anything new.
			return nil, errNotFast
		}
		n := map[byte]int{'1': 9, '2': 10, 'u': 11}[rec[0]]
		f := strings.SplitN(rec, " ", n)
		if len(f) != n || len(f[1]) != 2 || f[n-1] == "" {
			return nil, bad
		}
		r := stRecord{kind: rec[0], x: f[1][0], y: f[1][1], sub: f[2], path: f[n-1]}
		if !r.readModes(f) {
			return nil, bad
		}
		if r.kind == '2' {
			xs := f[8]
			if len(xs) < 2 {
				return nil, bad
			}
			score, err := strconv.Atoi(xs[1:])
			if err != nil {
				return nil, bad
			}
			r.score = score
			j := bytes.IndexByte(out, 0)
			if j <= 0 {
				return nil, fmt.Errorf("git status: rename of %q has no source", clip([]byte(r.path)))
			}
			r.orig = string(out[:j])
			out = out[j+1:]
			if r.x != 'R' || !strings.ContainsRune(".MTD", rune(r.y)) {
				return nil, errNotFast // a copy, or a work-tree rename (intent-to-add)
			}
		}
		if r.kind == '1' && (!strings.ContainsRune(".MTAD", rune(r.x)) || !strings.ContainsRune(".MTD", rune(r.y))) {
			return nil, errNotFast // .A: intent-to-add
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// readModes reads a changed or unmerged record's modes and ids from its
// fields f; false when one is not what it must be.
func (r *stRecord) readModes(f []string) bool {
	modes := []*Mode{&r.mH, &r.mI, &r.mW}
	ids := []*string{&r.hH, &r.hI}
	if r.kind == 'u' {
		// u XY sub m1 m2 m3 mW h1 h2 h3 path: only the work tree's
		// mode is read.
		modes = []*Mode{nil, nil, nil, &r.mW}
		ids = nil
	}
	for j, m := range modes {
		v, err := strconv.ParseUint(f[3+j], 8, 32)
		if err != nil {
			return false
		}
		if m != nil {
			*m = Mode(v)
		}
	}
	for j, id := range ids {
		if !isHexID(f[6+j]) {
			return false
		}
		*id = f[6+j]
	}
	return true
}

// statusSnapshot takes a read-only snapshot's tree and dirty set from one
// git status (see above). ok is false when the snapshot must be taken the
// long way.
func (t *taker) statusSnapshot(head string) (tree string, entries []Entry, ok bool, err error) {
	g := t.g
	if t.indexFP, err = indexFingerprint(filepath.Join(g.gitDir, "index")); err != nil {
		return "", nil, false, err
	}
	if err := t.makeTemp(); err != nil {
		return "", nil, false, err
	}
	objects := filepath.Join(t.tmp, "objects")
	t.readEnv = []string{"GIT_OBJECT_DIRECTORY=" + objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(g.commonDir, "objects")}

	// The user's own git status, but for the rename detection (staged
	// renames, as diff-index -M finds them) and the submodules (compared
	// by the commit checked out in them, as git add records them).
	out, _, err := g.run(nil, nil, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--find-renames", "--ignore-submodules=dirty")
	if err != nil {
		return "", nil, false, g.ctx.Err()
	}
	recs, err := parseStatusV2(out)
	if errors.Is(err, errNotFast) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, err
	}
	hash, seed, ok := t.toHash(recs)
	if !ok {
		return "", nil, false, nil
	}
	never := []string{"BLOCKED.md"} // never in the tree
	for _, x := range t.o.exclude {
		if x != "" {
			never = append(never, x)
		}
	}
	hashed, problems, err := t.hashWorktree(hash, seed)
	if errors.Is(err, errNotFast) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, err
	}
	headTrees, err := t.readHeadTrees(head, statusDirs(recs, never))
	if errors.Is(err, errNotFast) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, err
	}
	edits, ok := t.statusEdits(recs, hashed, never)
	if !ok {
		return "", nil, false, nil
	}

	// The tree: HEAD's, with the edits.
	b := &treeBuilder{g: g, base: func(d string) []treeEntry { return headTrees[d] }}
	root := &tnode{}
	for p, c := range edits {
		b.put(root, "", p, c)
	}
	if b.bad {
		return "", nil, false, nil
	}
	tree, empty := b.write(root, "")
	if b.bad {
		return "", nil, false, nil
	}
	if empty {
		tree = g.emptyTree()
	}
	t.problems = append(t.problems, problems...)
	t.pending = b.pending
	return tree, t.statusDirty(recs, edits, headTrees), true, nil
}

// removedFromStatus reports whether a snapshot leaves p out whatever the
// status says of it (implloop's own files, the excluded paths).
func (t *taker) removedFromStatus(p string) bool { return p == "BLOCKED.md" || t.isExclude(p) }

// toHash lists the files whose content differs from the index (to hash),
// with the index entries to hash some of them against (seed: a CRLF
// file, whose conversion depends on the index's blob); ok is false when
// the status holds what this way cannot answer as git add -A would.
func (t *taker) toHash(recs []stRecord) (hash []string, seed map[string]Blob, ok bool) {
	for i := range recs {
		r := &recs[i]
		if r.kind == '?' {
			r.path = strings.TrimSuffix(r.path, "/") // a nested repository
			if !t.addExcluded(r.path) {
				hash = append(hash, r.path)
			}
			continue
		}
		if (r.path == ".gitattributes" || strings.HasSuffix(r.path, "/.gitattributes")) && r.mW.normalize()&0o170000 != 0o100000 {
			// git add reads the index's .gitattributes where the work
			// tree has no regular file: an index of our own has none.
			return nil, nil, false
		}
		if t.removedFromStatus(r.path) || r.y == '.' || r.mW == ModeAbsent {
			continue
		}
		if t.addExcluded(r.path) {
			if r.kind == 'u' {
				return nil, nil, false // git write-tree refuses an unmerged entry
			}
			continue
		}
		if r.mW.normalize()&0o170000 == 0o100000 && crlfText(filepath.Join(t.g.root, filepath.FromSlash(r.path))) {
			if r.kind == 'u' || r.mI.normalize()&0o170000 != 0o100000 {
				return nil, nil, false // decided by a conflict's stage 2, or no blob
			}
			// Whether git add converts its CRLFs depends on the index's
			// blob (autocrlf, text=auto): hashed with that blob as its
			// index entry.
			if seed == nil {
				seed = map[string]Blob{}
			}
			seed[r.path] = blobOf(r.mI, r.hI)
		}
		hash = append(hash, r.path)
	}
	return hash, seed, true
}

// statusDirs are the directories on the way to the listed paths (and to
// never's), the root included: HEAD's trees to read.
func statusDirs(recs []stRecord, never []string) map[string]bool {
	dirs := map[string]bool{"": true}
	paths := append([]string(nil), never...)
	for _, r := range recs {
		paths = append(paths, r.path)
		if r.orig != "" {
			paths = append(paths, r.orig)
		}
	}
	for _, p := range paths {
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return dirs
}

// statusEdits is the snapshot's content of every listed path (Mode 0:
// not in the tree); ok is false when a path changed while it looked.
func (t *taker) statusEdits(recs []stRecord, hashed map[string]Blob, never []string) (map[string]Blob, bool) {
	edits := map[string]Blob{}
	set := func(p string, b Blob) {
		if !t.removedFromStatus(p) {
			edits[p] = b
		}
	}
	for _, r := range recs {
		if r.kind == '2' {
			set(r.orig, Blob{}) // gone from the index; on disk, "?" says so
		}
	}
	for _, r := range recs {
		switch {
		case r.kind == '?':
			continue
		case t.addExcluded(r.path), r.y == '.':
			set(r.path, blobOf(r.mI, r.hI))
		case r.mW == ModeAbsent:
			set(r.path, Blob{})
		default:
			b, found := hashed[r.path]
			switch {
			case !found && r.kind == 'u':
				return nil, false
			case !found:
				// Not readable: git add leaves the index entry as it is.
				set(r.path, blobOf(r.mI, r.hI))
			case b.Mode.normalize()&0o170000 != r.mW.normalize()&0o170000:
				return nil, false // it changed while we looked
			default:
				set(r.path, Blob{Hash: b.Hash, Mode: r.mW})
			}
		}
	}
	for _, r := range recs {
		if r.kind == '?' {
			if b, found := hashed[r.path]; found {
				set(r.path, b)
			}
		}
	}
	for _, p := range never {
		// A file there leaves the tree (a directory stays: git
		// update-index --force-remove of its path removes nothing).
		edits[p] = Blob{}
	}
	return edits, true
}

// statusDirty is the dirty set: the work tree against HEAD, from the
// edits; the index against HEAD, from the status's own columns.
func (t *taker) statusDirty(recs []stRecord, edits map[string]Blob, headTrees headTrees) []Entry {
	var wt []Change
	for p, c := range edits {
		h := headTrees.blob(p)
		if h.Hash == c.Hash && h.Mode.normalize() == c.Mode.normalize() {
			continue
		}
		wt = append(wt, Change{Path: p, Before: h, After: c})
	}
	idx := []Change{}
	for _, r := range recs {
		switch {
		case r.kind == 'u':
			idx = append(idx, Change{Path: r.path, Status: 'U', Before: headTrees.blob(r.path)})
		case r.kind == '?' || r.x == '.':
		case r.kind == '2':
			idx = append(idx, Change{Path: r.path, From: r.orig, Status: r.x, Score: r.score, Before: blobOf(r.mH, r.hH), After: blobOf(r.mI, r.hI)})
		default:
			idx = append(idx, Change{Path: r.path, Status: r.x, Before: blobOf(r.mH, r.hH), After: blobOf(r.mI, r.hI)})
		}
	}
	t.newIndexDiff = idx
	return t.mergeDirty(wt, idx)
}

// isExclude reports whether p is one of the paths given with WithExclude.
func (t *taker) isExclude(p string) bool {
	for _, x := range t.o.exclude {
		if x != "" && p == x {
			return true
		}
	}
	return false
}

// makeTemp makes the read-only snapshot's temporary directory, with an
// object directory in it.
func (t *taker) makeTemp() error {
	if t.tmp != "" {
		return nil
	}
	tmp, err := os.MkdirTemp("", "implloop-snapshot-")
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	t.tmp = tmp
	// TMPDIR may be inside the work tree: the snapshot must not see its
	// own scratch files.
	if rel, err := filepath.Rel(t.g.root, tmp); err == nil && filepath.IsLocal(rel) {
		t.o.exclude = append(t.o.exclude, filepath.ToSlash(rel))
	}
	if err := os.Mkdir(filepath.Join(tmp, "objects"), 0o755); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// crlfText reports whether a file holds CRLF line ends and no NUL: a text
// file whose clean conversion (core.autocrlf, text=auto) depends on
// whether the index's blob has CRs (git's "safer autocrlf"). Unreadable,
// it says so too.
func crlfText(full string) bool {
	f, err := os.Open(full)
	if err != nil {
		return true
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	crlf, prevCR := false, false
	for {
		c, err := r.ReadByte()
		if err != nil {
			return crlf
		}
		if c == 0 {
			return false
		}
		if c == '\n' && prevCR {
			crlf = true
		}
		prevCR = c == '\r'
	}
}

// hashWorktree hashes the work-tree files at paths as `git add` records
// them (clean conversion, modes, symlinks, nested repositories as
// gitlinks): added to an index of their own, their objects written to the
// temporary object directory, which does not see the repository's. seed
// are index entries that index holds first, their blobs copied into that
// directory: a CRLF file is converted or not depending on its index
// blob. What git could not add is a problem, as in
// `git add -A --ignore-errors`.
func (t *taker) hashWorktree(paths []string, seed map[string]Blob) (map[string]Blob, []string, error) {
	return t.hashWith(paths, seed, filepath.Join(t.tmp, "hash-index"), filepath.Join(t.tmp, "objects"))
}

// hashWith hashes paths into the index file index (made anew), holding
// seed first, and the object directory objects ("": the repository's,
// where seed's blobs are already).
func (t *taker) hashWith(paths []string, seed map[string]Blob, index, objects string) (map[string]Blob, []string, error) {
	out := map[string]Blob{}
	if len(paths) == 0 {
		return out, nil, nil
	}
	os.Remove(index)
	defer os.Remove(index) // its entries are read before: nothing is left behind
	env := []string{"GIT_INDEX_FILE=" + index}
	if objects != "" {
		env = append(env, "GIT_OBJECT_DIRECTORY="+objects)
	}
	cfg := []string{"-c", "core.splitIndex=false", "-c", "index.version=2", "-c", "index.skipHash=false", "-c", "core.fsmonitor=false",
		"-c", "core.untrackedCache=false", "-c", "advice.addIgnoredFile=false"}
	if len(seed) > 0 {
		if objects != "" {
			if err := t.copyBlobs(objects, seed); err != nil {
				return nil, nil, err
			}
		}
		entries := make([]indexEntry, 0, len(seed))
		for p, b := range seed {
			entries = append(entries, indexEntry{path: p, blob: b})
		}
		if err := writeIndexEntries(t.g, index, entries); err != nil {
			return nil, nil, errNotFast
		}
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(":(top,literal)" + p)
		in.WriteByte(0)
	}
	_, stderr, err := t.g.run(env, in.Bytes(), append(cfg, "add", "-f", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul")...)
	var problems []string
	if err != nil {
		if t.g.ctx.Err() != nil {
			return nil, nil, t.g.ctx.Err()
		}
		saved := t.problems
		t.problems = nil
		perr := t.addProblems(stderr)
		problems, t.problems = t.problems, saved
		if perr != nil {
			return nil, nil, errNotFast
		}
	}
	raw, err := os.ReadFile(index)
	if errors.Is(err, os.ErrNotExist) {
		return out, problems, nil // nothing could be added
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the hashes: %w", err)
	}
	entries, err := readIndexEntries(raw, t.g.newHash().Size())
	if err != nil {
		return nil, nil, errNotFast
	}
	for _, e := range entries {
		out[e.path] = e.blob
	}
	return out, problems, nil
}

// writeIndexEntries writes an index file (version 2) of entries, without
// stat data (git hashes such an entry's file again before it trusts it).
func writeIndexEntries(g *gitRepo, file string, entries []indexEntry) error {
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(len(entries)))
	for _, e := range entries {
		raw, err := hex.DecodeString(e.blob.Hash)
		if err != nil || len(raw) != g.newHash().Size() || e.path == "" || strings.IndexByte(e.path, 0) >= 0 {
			return fmt.Errorf("index entry %q: bad", e.path)
		}
		start := b.Len()
		var fixed [40]byte // ctime, mtime, dev, ino: 0; then mode; uid, gid, size: 0
		binary.BigEndian.PutUint32(fixed[24:28], uint32(e.blob.Mode))
		b.Write(fixed[:])
		b.Write(raw)
		n := len(e.path)
		if n > 0xFFF {
			n = 0xFFF
		}
		binary.Write(&b, binary.BigEndian, uint16(n))
		b.WriteString(e.path)
		size := (b.Len() - start + 8) &^ 7
		b.Write(make([]byte, start+size-b.Len()))
	}
	h := g.newHash()
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))
	return os.WriteFile(file, b.Bytes(), 0o644)
}

// indexEntry is one stage-0 entry of an index file.
type indexEntry struct {
	path string
	blob Blob
}

// readIndexEntries reads the entries of a small index file of version 2
// or 3 (what git add writes into an index of its own, split index and
// version 4 turned off): mode, object id and path. Any other stage, or
// anything it does not know, is an error.
func readIndexEntries(b []byte, idLen int) ([]indexEntry, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, fmt.Errorf("index: no signature")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("index: version %d", version)
	}
	n := int(binary.BigEndian.Uint32(b[8:12]))
	var out []indexEntry
	off := 12
	for i := 0; i < n; i++ {
		start := off
		if len(b) < off+40+idLen+2 {
			return nil, fmt.Errorf("index: entry %d truncated", i)
		}
		mode := Mode(binary.BigEndian.Uint32(b[off+24 : off+28]))
		id := hex.EncodeToString(b[off+40 : off+40+idLen])
		flags := binary.BigEndian.Uint16(b[off+40+idLen : off+40+idLen+2])
		off += 40 + idLen + 2
		if flags&0x4000 != 0 { // extended flags (version 3)
			if version < 3 || len(b) < off+2 {
				return nil, fmt.Errorf("index: entry %d: extended flags", i)
			}
			if binary.BigEndian.Uint16(b[off:off+2]) != 0 {
				return nil, fmt.Errorf("index: entry %d: intent-to-add or skip-worktree", i)
			}
			off += 2
		}
		if stage := flags >> 12 & 3; stage != 0 {
			return nil, fmt.Errorf("index: entry %d: stage %d", i, stage)
		}
		nul := bytes.IndexByte(b[off:], 0)
		if nul < 0 {
			return nil, fmt.Errorf("index: entry %d: path not terminated", i)
		}
		p := string(b[off : off+nul])
		// The entry is padded with 1 to 8 NULs to a multiple of 8 bytes.
		off = start + (off-start+nul+8)&^7
		if off > len(b) {
			return nil, fmt.Errorf("index: entry %d truncated", i)
		}
		out = append(out, indexEntry{path: p, blob: Blob{Hash: id, Mode: mode}})
	}
	return out, nil
}

// copyBlobs copies the blobs of seed from the repository into the object
// directory objects (reading an object writes nothing).
func (t *taker) copyBlobs(objects string, seed map[string]Blob) error {
	var ids []string
	var in bytes.Buffer
	for _, b := range seed {
		ids = append(ids, b.Hash)
		in.WriteString(b.Hash + "\n")
	}
	raw, _, err := t.g.run(nil, in.Bytes(), "cat-file", "--batch")
	if err != nil {
		return fmt.Errorf("reading index blobs: %w", err)
	}
	br := bufio.NewReader(bytes.NewReader(raw))
	for _, id := range ids {
		header, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("reading blob %s: %w", id, err)
		}
		f := strings.Fields(header)
		if len(f) != 3 || f[0] != id || f[1] != "blob" {
			return errNotFast
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("reading blob %s: %q", id, header)
		}
		body := make([]byte, n+1)
		if _, err := io.ReadFull(br, body); err != nil {
			return fmt.Errorf("reading blob %s: %w", id, err)
		}
		if _, err := writeLoose(t.g, objects, "blob", body[:n]); err != nil {
			return err
		}
	}
	return nil
}

// headTrees are the trees of HEAD at some directories, parsed: a
// directory maps to nil when HEAD has no tree there.
type headTrees map[string][]treeEntry

// treeEntry is one entry of a tree object.
type treeEntry struct {
	name string
	mode Mode
	id   string // hex
}

// blob is p's content at HEAD as `git diff-tree -r` sees it: absent when
// it is a directory (or not there).
func (h headTrees) blob(p string) Blob {
	for _, e := range h[parentDir(p)] {
		if e.name == path.Base(p) {
			if e.mode == ModeDir {
				return Blob{}
			}
			return Blob{Hash: e.id, Mode: e.mode.normalize()}
		}
	}
	return Blob{}
}

func parentDir(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

// readHeadTrees reads HEAD's trees at dirs (the root is ""), in one
// `git cat-file --batch`.
func (t *taker) readHeadTrees(head string, dirs map[string]bool) (headTrees, error) {
	out := headTrees{}
	if head == "" {
		for d := range dirs {
			out[d] = nil
		}
		return out, nil
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		if strings.ContainsAny(d, "\n") {
			return nil, errNotFast // cat-file reads one name a line
		}
		names = append(names, d)
	}
	sort.Strings(names)
	var in bytes.Buffer
	object := func(d string) string {
		if d == "" {
			return head + "^{tree}"
		}
		return head + ":" + d
	}
	for _, d := range names {
		in.WriteString(object(d) + "\n")
	}
	raw, _, err := t.g.run(nil, in.Bytes(), "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("reading HEAD's trees: %w", err)
	}
	br := bufio.NewReader(bytes.NewReader(raw))
	for _, d := range names {
		header, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading HEAD's trees: %w", err)
		}
		if header == object(d)+" missing\n" {
			out[d] = nil
			continue
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return nil, errNotFast // ambiguous, or anything else
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("reading HEAD's trees: %q", header)
		}
		body := make([]byte, n+1)
		if _, err := io.ReadFull(br, body); err != nil {
			return nil, fmt.Errorf("reading HEAD's trees: %w", err)
		}
		if f[1] != "tree" {
			out[d] = nil // a file (or a gitlink) where the path needs a directory
			continue
		}
		entries, err := parseTree(body[:n], len(f[0])/2)
		if err != nil {
			return nil, fmt.Errorf("HEAD's tree %s: %w", f[0], err)
		}
		if d != "" && entries == nil {
			entries = []treeEntry{}
		}
		out[d] = entries
	}
	if out[""] == nil {
		out[""] = []treeEntry{}
	}
	return out, nil
}

// parseTree parses a tree object's body: "<mode> <name>\0<raw id>" each.
func parseTree(b []byte, idLen int) ([]treeEntry, error) {
	var out []treeEntry
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp < 0 || nul < sp || len(b) < nul+1+idLen {
			return nil, fmt.Errorf("malformed tree")
		}
		m, err := strconv.ParseUint(string(b[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("malformed tree: mode %q", b[:sp])
		}
		out = append(out, treeEntry{name: string(b[sp+1 : nul]), mode: Mode(m), id: hex.EncodeToString(b[nul+1 : nul+1+idLen])})
		b = b[nul+1+idLen:]
	}
	return out, nil
}

// tnode is a directory of the snapshot tree being rebuilt: the base tree
// there (unless pruned) with the files set and the subdirectories rebuilt.
type tnode struct {
	files map[string]Blob // Mode 0: no file there
	dirs  map[string]*tnode
	prune bool // start from nothing, not the base tree
}

// treeBuilder rebuilds the trees on the way to the edited paths, from a
// base tree (HEAD's, or the previous boundary's).
type treeBuilder struct {
	g *gitRepo
	// base lists the base tree's directory dir (nil: no tree there).
	base func(dir string) []treeEntry
	bad  bool // the edits contradict the base trees: take the long way
	// pending are the trees made, not written yet: most snapshots never
	// need them in an object directory (see flushTrees).
	pending []looseObject
}

// looseObject is an object to write: its kind, id and body.
type looseObject struct {
	kind, id string
	body     []byte
}

// node returns the node of directory p (relative to n, at directory
// dir), made on the way.
func (b *treeBuilder) node(n *tnode, dir, p string) *tnode {
	if p == "" {
		return n
	}
	name, rest, _ := strings.Cut(p, "/")
	child := join(dir, name)
	k := n.dirs[child]
	if k == nil {
		if n.dirs == nil {
			n.dirs = map[string]*tnode{}
		}
		k = &tnode{}
		n.dirs[child] = k
	}
	return b.node(k, child, rest)
}

// put sets path p (relative to n, at directory dir) to c.
func (b *treeBuilder) put(n *tnode, dir, p string, c Blob) {
	name, rest, sub := strings.Cut(p, "/")
	if !sub {
		if n.files == nil {
			n.files = map[string]Blob{}
		}
		n.files[name] = c
		return
	}
	b.put(b.node(n, dir, name), join(dir, name), rest, c)
}

// write writes the tree of n (directory dir) into the temporary object
// directory and returns its id; empty when it holds nothing (git records
// no empty directory).
func (b *treeBuilder) write(n *tnode, dir string) (string, bool) {
	entries := map[string]treeEntry{}
	if !n.prune {
		for _, e := range b.base(dir) {
			entries[e.name] = e
		}
	}
	for child, k := range n.dirs {
		name := path.Base(child)
		e, inHead := entries[name]
		switch {
		case inHead && e.mode != ModeDir:
			// A file at HEAD where the edits need a directory: git
			// status lists it (deleted) when that is so.
			if c, set := n.files[name]; !set || c.Present() {
				b.bad = true
				return "", false
			}
		case !inHead && !n.prune && b.base(child) != nil:
			b.bad = true
			return "", false
		}
		id, empty := b.write(k, child)
		if b.bad {
			return "", false
		}
		if empty {
			delete(entries, name)
		} else {
			entries[name] = treeEntry{name: name, mode: ModeDir, id: id}
		}
	}
	for name, c := range n.files {
		e, inHead := entries[name]
		if inHead && e.mode == ModeDir {
			if c.Present() {
				// A directory where a file is set: only once its files
				// are gone (git status lists each).
				b.bad = true
				return "", false
			}
			continue // no file here: the directory stays
		}
		if !c.Present() {
			delete(entries, name)
			continue
		}
		if c.Hash == "" {
			b.bad = true
			return "", false
		}
		entries[name] = treeEntry{name: name, mode: c.Mode, id: c.Hash}
	}
	if len(entries) == 0 {
		return "", true
	}
	id := b.encode(entries)
	return id, false
}

// encode makes the tree object of entries (pending, not written) and
// returns its id ("" with b.bad set when an id is not hex).
func (b *treeBuilder) encode(entries map[string]treeEntry) string {
	list := make([]treeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	// git's tree order: names compared as if a directory's ended in '/'.
	key := func(e treeEntry) string {
		if e.mode == ModeDir {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(list, func(i, j int) bool { return key(list[i]) < key(list[j]) })
	var body bytes.Buffer
	for _, e := range list {
		raw, err := hex.DecodeString(e.id)
		if err != nil {
			b.bad = true
			return ""
		}
		m := e.mode
		if m != ModeDir {
			m = m.normalize()
		}
		fmt.Fprintf(&body, "%o %s\x00", uint32(m), e.name)
		body.Write(raw)
	}
	id := objectID(b.g, "tree", body.Bytes())
	b.pending = append(b.pending, looseObject{kind: "tree", id: id, body: body.Bytes()})
	return id
}

// flushTrees writes the trees statusSnapshot made into the temporary
// object directory, for a git command that reads the snapshot's tree.
func (t *taker) flushTrees() error {
	for _, o := range t.pending {
		if _, err := writeLoose(t.g, filepath.Join(t.tmp, "objects"), o.kind, o.body); err != nil {
			return err
		}
	}
	t.pending = nil
	return nil
}

// objectID is the id git gives an object of kind with body.
func objectID(g *gitRepo, kind string, body []byte) string {
	h := gitobj.SHA1
	if g.sha256 {
		h = gitobj.SHA256
	}
	return gitobj.ID(h, kind, body)
}

// writeLoose writes an object into the loose object directory objects
// (the read-only snapshot's own, temporary) and returns its id.
func writeLoose(g *gitRepo, objects, kind string, body []byte) (string, error) {
	h := gitobj.SHA1
	if g.sha256 {
		h = gitobj.SHA256
	}
	id, err := gitobj.WriteLoose(objects, h, kind, body, false)
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", kind, err)
	}
	return id, nil
}
