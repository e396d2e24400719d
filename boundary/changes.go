package boundary

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gitobj"
)

// A boundary below the floor: with WithChanged (a file watcher's answer
// for the interval since the previous boundary), Take does not ask git
// status about the whole work tree. It takes the previous boundary's tree
// and looks only at the paths that changed: each is read from disk (a
// directory whole), what is new is asked of the ignore rules, what is
// there is hashed (git add into an index of its own, holding the previous
// boundary's entries of those paths: modes and CRLF handling as the
// private index would give them), and the trees on the way are rebuilt.
// No git command reads the whole index.
//
// The private index is not written: what such a boundary changed is
// appended to the private index's lag file (noteLag), which the next
// boundary that uses the private index applies first (catchUp), so that
// it holds what a chain of full scans would have left in it.
//
// Whenever it cannot be sure to record what `git add -A` would, it says so
// and the boundary is taken the long way: the ignore rules differ from the
// run's, a .gitignore or .gitattributes changed, the private index was
// seeded afresh, a path cannot be read, git add has a problem with one, a
// file the real index tracks is covered by an ignore rule, a file gone
// from disk is marked skip-worktree in the real index, the changes
// contradict the previous tree (they were not all seen).

// WithChanged gives a boundary (WithRun, with WithPrev) the paths of the
// work tree that may have changed since the previous boundary was taken
// (files, directories, paths now gone; relative, slash-separated), and the
// directories that hold a repository (whose checked-out commit may move
// unseen), and the directories the watcher does not watch (wholly ignored
// ones): a file watcher's answer, complete for that interval. The
// boundary then looks only at those (see changes.go), or, when it cannot
// be sure, at the whole tree as without it.
func WithChanged(paths, nested, unwatched []string) Option {
	return func(o *options) {
		o.changed = &changedPaths{paths: paths, nested: nested, unwatched: unwatched}
	}
}

type changedPaths struct {
	paths, nested, unwatched []string
}

// gitignore reports whether a .gitignore is among the changed paths (one
// in a changed directory is found when it is read: fromChanges gives up).
func (c *changedPaths) gitignore() bool {
	for _, p := range c.paths {
		if isGitignore(p) {
			return true
		}
	}
	return false
}

// WatchUsed reports whether the snapshot was taken from a watcher's
// changed paths (WithChanged) rather than the whole tree, and if not,
// why not.
func (s Snapshot) WatchUsed() (bool, string) { return s.watched, s.watchMiss }

// WatchUnskip lists the directories WithChanged named unwatched that hold
// a path of the snapshot (a file force-added to the real index under a
// wholly ignored directory): the watcher must watch them again before a
// boundary can be taken from its paths.
func (s Snapshot) WatchUnskip() []string { return s.watchUnskip }

// fromChanges takes the boundary's tree from the previous boundary's and
// the changed paths. ok is false when the boundary must be taken the long
// way (t.watchMiss says why).
func (t *taker) fromChanges(head string) (tree string, entries []Entry, ok bool, err error) {
	p := t.o.prev
	if p == nil || p.Tree == "" || t.seeded || t.rules == nil || t.rules.base == "" || t.rulesOff || t.gitignoreSeen {
		return t.miss("no previous boundary to start from, or the ignore rules changed")
	}
	for _, c := range t.o.changed.paths {
		if isRuleFile(c) || strings.ContainsRune(c, '\n') {
			return t.miss("a .gitignore or .gitattributes changed")
		}
	}
	base := &baseTree{g: t.g, tree: p.Tree, dirs: map[string][]treeEntry{}}
	defer base.close()
	if _, err := base.dir(""); err != nil {
		return t.miss("the previous tree cannot be read")
	}
	c := &changeSet{edits: map[string]Blob{}, files: map[string]bool{}}
	for _, step := range []func(*baseTree, *changeSet) string{
		t.unwatchedHeld, t.lookPaths, t.readChanged, t.skipWorktreeGone, t.dropIgnored, t.hashChanged, t.lagOf,
	} {
		if why := step(base, c); why != "" {
			return t.miss(why)
		}
	}
	tree, why := t.changedTree(base, c)
	if why != "" {
		return t.miss(why)
	}
	if entries, err = t.dirtyFrom(head, tree, base, c.edits); err != nil {
		return "", nil, false, err
	}
	if len(t.trackedMissing(entries)) > 0 {
		return t.miss("a tracked file is covered by an ignore rule")
	}
	t.statusUsed = true
	return tree, entries, true, nil
}

// changeSet is what a boundary from a watcher's paths gathers, step by
// step (fromChanges).
type changeSet struct {
	look   map[string]bool // the paths to read: files, directories, gone
	edits  map[string]Blob // the paths set (Mode 0: gone)
	pruned []string        // directories of the previous tree read anew
	files  map[string]bool // the files to hash
	known  map[string]Blob // their previous content, where there was one
}

// isRuleFile reports whether p is a .gitignore or a .gitattributes.
func isRuleFile(p string) bool {
	return isGitignore(p) || path.Base(p) == ".gitattributes"
}

// unwatchedHeld refuses a previous tree with a path under a directory the
// watch skips (a file the real index tracks, force-added there): its
// changes go unseen. The caller is told to watch it again
// (Snapshot.WatchUnskip).
func (t *taker) unwatchedHeld(base *baseTree, _ *changeSet) string {
	for _, d := range t.o.changed.unwatched {
		d = strings.Trim(d, "/")
		if d == "" {
			return "the watch skips the root"
		}
		e, err := base.entry(d)
		if err != nil {
			return "the previous tree cannot be read"
		}
		if e.mode != ModeAbsent {
			t.unskip = append(t.unskip, d)
		}
	}
	if len(t.unskip) > 0 {
		return "the snapshot holds a path the watch skips (" + strings.Join(t.unskip, ", ") + ")"
	}
	return ""
}

// lookPaths gathers the paths to read: each changed path, a path inside
// a nested repository standing for that repository (a gitlink), and every
// nested repository (its checked-out commit moves without an event).
func (t *taker) lookPaths(base *baseTree, c *changeSet) string {
	ch := t.o.changed
	c.look = map[string]bool{}
	for _, p := range append(append([]string(nil), ch.paths...), ch.nested...) {
		p = strings.Trim(p, "/")
		if p == "" || p == "." {
			continue
		}
		p, err := base.enclosing(p, t.g.root)
		if err != nil {
			return "the previous tree cannot be read"
		}
		c.look[p] = true
	}
	return ""
}

// readChanged reads each path to look at from disk: gone (the file, or
// all the directory held, leaves the tree), a file, symlink or nested
// repository (to hash), or a directory (read whole, what the previous tree
// held under it dropped first).
func (t *taker) readChanged(base *baseTree, c *changeSet) string {
	for p := range c.look {
		if t.addExcluded(p) || t.isExclude(p) || p == "BLOCKED.md" {
			continue
		}
		fi, lerr := os.Lstat(filepath.Join(t.g.root, filepath.FromSlash(p)))
		be, err := base.entry(p)
		if err != nil {
			return "the previous tree cannot be read"
		}
		isRepo := false
		if lerr == nil && fi.IsDir() {
			if isRepo, err = base.repoAt(t.g.root, p); err != nil {
				return "the previous tree cannot be read"
			}
		}
		if be.mode == ModeDir {
			c.pruned = append(c.pruned, p)
		}
		switch {
		case lerr != nil:
			c.edits[p] = Blob{}
		case !fi.IsDir() || isRepo:
			if fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0 || isRepo {
				c.files[p] = true
			} else {
				c.edits[p] = Blob{} // a socket, a fifo: git add takes none
			}
		default:
			if be.mode != ModeAbsent && be.mode != ModeDir {
				c.edits[p] = Blob{}
			}
			if err := t.walkFiles(p, c.files, base); err != nil {
				return "a directory cannot be read"
			}
		}
	}
	return ""
}

// skipWorktreeGone leaves to git status a boundary that would drop a
// file the previous tree holds and the work tree does not have, when
// the real index marks that file skip-worktree (set by hand; a sparse
// checkout is refused earlier, hashPlain): git status says nothing of
// such a file, which is not checked out, where read from disk it would
// be recorded deleted. git is asked only when files are gone.
func (t *taker) skipWorktreeGone(base *baseTree, c *changeSet) string {
	seen := map[string]bool{}
	var specs []string
	gone := func(f string) {
		if !seen[f] {
			seen[f] = true
			specs = append(specs, ":(top,literal)"+f)
		}
	}
	for _, d := range c.pruned {
		files, err := base.files(d)
		if err != nil {
			return "the previous tree cannot be read"
		}
		for _, f := range files {
			if !c.files[f] {
				gone(f)
			}
		}
	}
	for p, b := range c.edits {
		if b.Present() {
			continue
		}
		e, err := base.entry(p)
		if err != nil {
			return "the previous tree cannot be read"
		}
		if e.mode != ModeAbsent && e.mode != ModeDir {
			gone(p)
		}
	}
	if len(specs) == 0 {
		return ""
	}
	if len(specs) > maxGoneAsked {
		return "too many files are gone to ask the index about each"
	}
	out, _, err := t.g.run(nil, nil, append([]string{"ls-files", "-t", "-z", "--"}, specs...)...)
	if err != nil {
		return "the index cannot be read"
	}
	for _, rec := range bytes.Split(out, []byte{0}) {
		if bytes.HasPrefix(rec, []byte("S ")) {
			return "a file marked skip-worktree is not in the work tree"
		}
	}
	return ""
}

// maxGoneAsked bounds the paths skipWorktreeGone names on git's command
// line (more: the boundary is taken the long way).
const maxGoneAsked = 2000

// dropIgnored leaves out the files the previous tree did not hold that
// the ignore rules cover (git's rules are the run's here), and notes the
// previous content of the others.
func (t *taker) dropIgnored(base *baseTree, c *changeSet) string {
	c.known = map[string]Blob{}
	var fresh []string
	for f := range c.files {
		if isRuleFile(f) {
			return "a .gitignore or .gitattributes changed"
		}
		b, err := base.entry(f)
		if err != nil {
			return "the previous tree cannot be read"
		}
		if b.mode != ModeAbsent && b.mode != ModeDir {
			c.known[f] = Blob{Hash: b.id, Mode: b.mode}
		} else {
			fresh = append(fresh, f)
		}
	}
	if len(fresh) == 0 {
		return ""
	}
	sort.Strings(fresh)
	var ignored map[string]bool
	if !t.noIgnoreRules(fresh) {
		var err error
		if ignored, err = t.checkIgnore(fresh); err != nil {
			return "the ignore rules cannot be asked"
		}
	}
	var kept []string
	for _, f := range fresh {
		if ignored[f] {
			delete(c.files, f)
		} else {
			kept = append(kept, f)
		}
	}
	if len(ignored) > 0 {
		// A file the real index tracks is never ignored: the long way
		// knows the real index.
		fp, err := indexFingerprint(filepath.Join(t.g.gitDir, "index"))
		if err != nil || fp != t.o.prev.indexFP {
			return "a new file is ignored and the index changed"
		}
	}
	if t.noteNewDirs(kept) {
		return "a new directory holds a .gitignore"
	}
	return ""
}

// hashChanged hashes the files to hash, with their previous content as
// the index git add sees (as the private index would be), into the edits.
func (t *taker) hashChanged(_ *baseTree, c *changeSet) string {
	list := make([]string, 0, len(c.files))
	for f := range c.files {
		list = append(list, f)
	}
	sort.Strings(list)
	hashed, ok := t.hashPlain(list)
	if !ok {
		var problems []string
		var err error
		if hashed, problems, err = t.hashInto(list, c.known); err != nil || len(problems) > 0 {
			return "git add had a problem"
		}
	}
	for _, f := range list {
		b, found := hashed[f]
		if !found {
			if _, err := os.Lstat(filepath.Join(t.g.root, filepath.FromSlash(f))); err == nil {
				return "git add did not take a file" // there, yet git add did not take it
			}
		}
		c.edits[f] = b // absent when it went meanwhile
	}
	return ""
}

// lagOf notes what the private index lags behind by (noteLag): the
// previous tree's files under the directories read anew, then the edits.
func (t *taker) lagOf(base *baseTree, c *changeSet) string {
	t.lagGone, t.lagSet = nil, c.edits
	for _, d := range c.pruned {
		files, err := base.files(d)
		if err != nil {
			return "the previous tree cannot be read"
		}
		t.lagGone = append(t.lagGone, files...)
	}
	return ""
}

// changedTree is the previous tree with the directories read anew
// emptied and the edits made, its new trees written as loose objects.
func (t *taker) changedTree(base *baseTree, c *changeSet) (string, string) {
	b := &treeBuilder{g: t.g, base: base.list}
	root := &tnode{}
	for _, d := range c.pruned {
		b.node(root, "", d).prune = true
	}
	for f, blob := range c.edits {
		b.put(root, "", f, blob)
	}
	if base.err != nil {
		return "", "the previous tree cannot be read"
	}
	tree, empty := b.write(root, "")
	if b.bad || base.err != nil {
		return "", "the changes contradict the previous tree"
	}
	if empty {
		tree = t.g.emptyTree()
	}
	w := t.g.objects(nil)
	for _, o := range b.pending {
		if _, err := w.Loose(o.kind, o.body); err != nil {
			return "", "a tree could not be written: " + err.Error()
		}
	}
	return tree, ""
}

// dirtyFrom is the dirty set of tree, which differs from the previous
// boundary's at the paths of t.lagGone and edits: while HEAD stays, the
// previous dirty set with those paths looked at again (their HEAD content
// is the previous entry's, or, clean then, the previous tree's); else
// dirtySet.
func (t *taker) dirtyFrom(head, tree string, base *baseTree, edits map[string]Blob) ([]Entry, error) {
	p := t.o.prev
	if p.Head != head {
		return t.dirtySet(head, tree)
	}
	touched := make(map[string]Blob, len(edits)+len(t.lagGone))
	for _, f := range t.lagGone {
		touched[f] = Blob{}
	}
	for f, c := range edits {
		touched[f] = c
	}
	same := func(a, b Blob) bool { return a.Hash == b.Hash && a.Mode.normalize() == b.Mode.normalize() }
	var wt []Change
	for _, e := range p.Paths {
		if _, ok := touched[e.Path]; !ok && !same(e.Head, e.Worktree) {
			wt = append(wt, Change{Path: e.Path, Before: e.Head, After: e.Worktree})
		}
	}
	for f, c := range touched {
		var h Blob
		if e, dirty := p.Lookup(f); dirty {
			h = e.Head
		} else {
			be, err := base.entry(f)
			if err != nil {
				return nil, err
			}
			if be.mode != ModeAbsent && be.mode != ModeDir {
				h = Blob{Hash: be.id, Mode: be.mode.normalize()}
			}
		}
		if !same(h, c) {
			wt = append(wt, Change{Path: f, Before: h, After: c})
		}
	}
	from := head
	if from == "" {
		from = t.g.emptyTree()
	}
	idx, err := t.indexDiff(head, from)
	if err != nil {
		return nil, err
	}
	return t.mergeDirty(wt, idx), nil
}

// miss notes why a boundary could not be taken from the changed paths.
func (t *taker) miss(why string) (string, []Entry, bool, error) {
	t.watchMiss = why
	return "", nil, false, nil
}

// walkFiles adds the files and symlinks under directory dir of the work
// tree (relative) to files; a nested repository (base.repoAt) is added
// as itself and not entered.
func (t *taker) walkFiles(dir string, files map[string]bool, base *baseTree) error {
	root := filepath.Join(t.g.root, filepath.FromSlash(dir))
	return filepath.WalkDir(root, func(full string, e fs.DirEntry, err error) error {
		if err != nil {
			if full == root {
				return err
			}
			return nil // gone meanwhile: its event comes
		}
		rel, rerr := filepath.Rel(t.g.root, full)
		if rerr != nil {
			return rerr
		}
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if e.Name() == ".git" {
				return filepath.SkipDir
			}
			if full != root {
				repo, err := base.repoAt(t.g.root, rel)
				if err != nil {
					return err
				}
				if repo {
					files[rel] = true
					return filepath.SkipDir
				}
			}
			return nil
		}
		if e.Name() == ".git" || t.addExcluded(rel) || t.isExclude(rel) || rel == "BLOCKED.md" {
			return nil
		}
		if e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0 {
			files[rel] = true
		}
		return nil
	})
}

// noIgnoreRules reports whether no ignore rule can cover any of paths,
// so that git check-ignore would name none: no pattern in
// <common-dir>/info/exclude nor in core.excludesFile (as last resolved:
// git's rules are the run's here), each a file that is absent or holds
// only comments and empty lines, and no .gitignore in any directory on
// the way to a path.
func (t *taker) noIgnoreRules(paths []string) bool {
	if t.rules == nil {
		return false
	}
	for _, f := range []string{filepath.Join(t.g.commonDir, "info", "exclude"), t.rules.excludesNow} {
		if f != "" && !noPatterns(f) {
			return false
		}
	}
	seen := map[string]bool{}
	for _, p := range paths {
		for d := parentDir(p); !seen[d]; d = parentDir(d) {
			seen[d] = true
			if !absentFile(filepath.Join(t.g.root, filepath.FromSlash(d), ".gitignore")) {
				return false
			}
			if d == "" {
				break
			}
		}
	}
	return true
}

// noPatterns reports whether the ignore file f holds no pattern: it is
// not there, or each of its lines is empty or a comment (anything else,
// or a file that cannot be read whole, may be one).
func noPatterns(f string) bool {
	b, err := os.ReadFile(f)
	if err != nil {
		return absentFile(f)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// checkIgnore asks git which of paths its ignore rules cover (the index
// not consulted: the caller deals with tracked files).
func (t *taker) checkIgnore(paths []string) (map[string]bool, error) {
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	out, _, err := t.g.run(nil, in.Bytes(), "check-ignore", "--no-index", "-z", "--stdin")
	if err != nil && exitCode(err) != 1 { // 1: none ignored
		return nil, err
	}
	got := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			got[p] = true
		}
	}
	return got, nil
}

// hashInto hashes the work-tree files at paths as git add records them,
// into the repository's object store, with seed as their index entries
// first (git add keeps an entry's executable bit where core.fileMode is
// false, and leaves a CRLF file alone when the entry's blob has CRs).
func (t *taker) hashInto(paths []string, seed map[string]Blob) (map[string]Blob, []string, error) {
	return t.hashWith(paths, seed, filepath.Join(stateDir(t.g.gitDir), "hash-index"), "")
}

// baseTree reads a tree's directories, remembering them: each tree
// object read in process where it is stored loose (as the trees a
// boundary wrote are, until git packs them), else through a cat-file
// process, started when first needed.
type baseTree struct {
	g    *gitRepo
	cf   *catFile
	tree string
	dirs map[string][]treeEntry // nil: not a tree there
	err  error
}

// close ends the cat-file process, if one was started.
func (b *baseTree) close() {
	if b.cf != nil {
		b.cf.close()
	}
}

// dir lists directory d of the tree (nil when it is not a directory), as
// `git cat-file --batch` finds <tree>:<d>: through the directories on
// the way.
func (b *baseTree) dir(d string) ([]treeEntry, error) {
	if e, ok := b.dirs[d]; ok {
		return e, nil
	}
	id := b.tree
	if d != "" {
		parent, err := b.dir(parentDir(d))
		if err != nil {
			return nil, err
		}
		id = ""
		name := path.Base(d)
		for _, e := range parent {
			if e.name == name {
				if e.mode == ModeDir {
					id = e.id
				}
				break
			}
		}
		if id == "" {
			b.dirs[d] = nil
			return nil, nil
		}
	}
	kind, body, found, err := b.read(id)
	if err != nil {
		b.err = err
		return nil, err
	}
	var out []treeEntry
	if found && kind == "tree" {
		if out, err = parseTree(body, b.g.newHash().Size()); err != nil {
			b.err = err
			return nil, err
		}
		if out == nil {
			out = []treeEntry{}
		}
	}
	b.dirs[d] = out
	return out, nil
}

// read reads object id: in process when it is stored loose and objects
// are where git would look for them (gitobj decides, as for writing),
// else through cat-file.
func (b *baseTree) read(id string) (kind string, body []byte, found bool, err error) {
	if w := b.g.objects(nil); w.InProcess() {
		if kind, body, ok := gitobj.ReadLoose(filepath.Join(b.g.commonDir, "objects"), w.Hash(), id); ok {
			return kind, body, true, nil
		}
	}
	if b.cf == nil {
		if b.cf, err = b.g.startCatFile(); err != nil {
			return "", nil, false, err
		}
	}
	return b.cf.read(id)
}

// files lists the paths of the files (blobs, symlinks, gitlinks) under
// directory d of the tree.
func (b *baseTree) files(d string) ([]string, error) {
	entries, err := b.dir(d)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		p := join(d, e.name)
		if e.mode == ModeDir {
			sub, err := b.files(p)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// join is path name in directory dir ("" the top).
func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// list is dir for the tree builder (an error is kept in b.err).
func (b *baseTree) list(d string) []treeEntry {
	out, _ := b.dir(d)
	return out
}

// entry is path p's entry in the tree (mode 0 when absent).
func (b *baseTree) entry(p string) (treeEntry, error) {
	entries, err := b.dir(parentDir(p))
	if err != nil {
		return treeEntry{}, err
	}
	name := path.Base(p)
	for _, e := range entries {
		if e.name == name {
			return e, nil
		}
	}
	return treeEntry{}, nil
}

// enclosing is p, or the repository that holds it: a gitlink of the
// tree, or a nested repository in the work tree (under root) where the
// tree has no directory (git goes on reading a directory the index has
// entries in, .git or not).
func (b *baseTree) enclosing(p string, root string) (string, error) {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		repo, err := b.repoAt(root, d)
		if err != nil {
			return "", err
		}
		if repo {
			return d, nil
		}
	}
	return p, nil
}

// repoAt reports whether directory d (relative to root) is a repository
// to the snapshot: a gitlink of the tree, or a directory holding a .git
// where the tree has no directory.
func (b *baseTree) repoAt(root, d string) (bool, error) {
	e, err := b.entry(d)
	if err != nil {
		return false, err
	}
	switch e.mode {
	case ModeGitlink:
		return true, nil
	case ModeDir:
		return false, nil
	}
	_, err = os.Lstat(filepath.Join(root, filepath.FromSlash(d), ".git"))
	return err == nil, nil
}

// catFile is a `git cat-file --batch` process answering one object name
// at a time (started as gitcmd.Run starts git, without a goroutine of its
// own: the pipes are the process's).
type catFile struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	idLen int
}

func (g *gitRepo) startCatFile() (*catFile, error) {
	p, err := gitcmd.Path()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(g.ctx, p, "cat-file", "--batch")
	cmd.Dir = g.root
	cmd.Env = gitcmd.Environ()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("cat-file: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("cat-file: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cat-file: %w", err)
	}
	return &catFile{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), idLen: g.newHash().Size()}, nil
}

// read returns object name's kind and body; found is false when it does
// not exist.
func (c *catFile) read(name string) (kind string, body []byte, found bool, err error) {
	if strings.ContainsAny(name, "\n") {
		return "", nil, false, fmt.Errorf("cat-file: name %q has a newline", name)
	}
	if _, err := io.WriteString(c.in, name+"\n"); err != nil {
		return "", nil, false, fmt.Errorf("cat-file: %w", err)
	}
	header, err := c.out.ReadString('\n')
	if err != nil {
		return "", nil, false, fmt.Errorf("cat-file: %w", err)
	}
	if header == name+" missing\n" {
		return "", nil, false, nil
	}
	f := strings.Fields(header)
	if len(f) != 3 {
		return "", nil, false, fmt.Errorf("cat-file: %q", header)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return "", nil, false, fmt.Errorf("cat-file: %q", header)
	}
	body = make([]byte, n+1)
	if _, err := io.ReadFull(c.out, body); err != nil {
		return "", nil, false, fmt.Errorf("cat-file: %w", err)
	}
	return f[1], body[:n], true, nil
}

func (c *catFile) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}
