package boundary

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	run         string    // WithRun: write the commit, move the run's ref
	label       string    // WithLabel: the commit's subject
	prev        *Snapshot // WithPrev / WithPrevHead
	exclude     []string  // WithExclude
	compare     string    // WithCompare
	prevGiven   bool
	fromPrivate bool          // WithBoundaryIndex
	treeOnly    bool          // WithTreeOnly
	fullAdd     bool          // tests: always `git add -A`, never addChanged
	slowRO      bool          // tests: a read-only snapshot the long way, never statusSnapshot
	changed     *changedPaths // WithChanged
	keep        *Keep         // WithKeep
	repo        *Repo         // WithRepo
}

// WithCompare asks Take for the changes from tree (a boundary's tree) to
// the snapshot's (Snapshot.Since), renames not detected: what a resume
// needs to know about the tree since its parent's last boundary. Read-only
// snapshots keep their tree only while Take runs, so this is the way to
// compare one with anything.
func WithCompare(tree string) Option {
	return func(o *options) { o.compare = tree }
}

// WithBoundaryIndex makes a read-only Take (no WithRun) start from a copy
// of the work tree's private boundary index instead of the real index, so
// that `git add -A` hashes only what changed since the last boundary, and
// the tree is the one the next boundary would record (files that became
// ignored since a boundary kept them stay in it). Without a private index
// it starts from the real index as usual. Reading the private index
// refreshes the modification time of its shared part in the git directory,
// as every git command that reads a split index does, and git may freshen
// (touch) an object it finds already stored instead of writing it: a
// command that promises to write nothing at all (status) does not use it.
func WithBoundaryIndex() Option {
	return func(o *options) { o.fromPrivate = true }
}

// WithTreeOnly makes a read-only Take compute only the snapshot's tree
// (Snapshot.Tree, and Snapshot.Since with WithCompare): the dirty set is
// not read (Snapshot.Paths is nil). With WithBoundaryIndex that is two git
// commands, `add -A` and `write-tree`: what a resume needs to know whether
// anything changed since its parent's last boundary.
func WithTreeOnly() Option {
	return func(o *options) { o.treeOnly = true }
}

// WithTrack asks Take to record, for each of paths that is not dirty now, its
// content at the current HEAD (Snapshot.Tracked). Pass the previous
// boundary's PathNames so that guard.Compare can tell a committed path from a
// reverted one without reading git itself.
func WithTrack(paths ...string) Option {
	return func(o *options) { o.track = append(o.track, paths...) }
}

// WithRun makes Take a boundary of run: the snapshot tree is committed (its
// parents: the previous boundary given with WithPrev, when it has a commit,
// and HEAD) and refs/implloop/runs/<run> is moved to the commit, so that
// everything the run saw stays reachable. It also keeps the private index
// (under the git directory) up to date, which makes the next Take hash only
// what changed. run must be usable as one ref name component (letters,
// digits, '.', '_', '-'). Without WithRun, Take writes nothing at all.
func WithRun(run string) Option {
	return func(o *options) { o.run = run }
}

// WithLabel sets the subject line of the boundary commit (WithRun), e.g.
// "after task 3".
func WithLabel(label string) Option {
	return func(o *options) { o.label = label }
}

// WithPrev gives Take the previous boundary: its commit becomes the first
// parent of this one (WithRun), paths that left the tree since it but are
// still on disk (newly ignored) are kept, and a HEAD move since it is looked
// into (Snapshot.HeadChange).
func WithPrev(prev Snapshot) Option {
	return func(o *options) {
		p := prev
		o.prev, o.prevGiven = &p, true
	}
}

// WithExclude leaves paths (relative to the root, slash-separated: the plan
// file) out of the snapshot, as implloop's own files are.
func WithExclude(paths ...string) Option {
	return func(o *options) { o.exclude = append(o.exclude, paths...) }
}

// RunRefPrefix is where boundary commits are kept: one ref per run, pointing
// at the run's latest boundary.
const RunRefPrefix = "refs/implloop/runs/"

// RunRef returns the ref holding run's boundary commits.
func RunRef(run string) string { return RunRefPrefix + run }

// Take snapshots the repository whose worktree contains repoDir: the whole
// work tree as git would commit it (`git add -A`) into a tree, and the paths
// in which that tree differs from HEAD or the index (the dirty set). With
// WithRun it commits the tree; without, it writes nothing to the
// repository (the tree is built in a temporary object directory).
func Take(ctx context.Context, repoDir string, opts ...Option) (Snapshot, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.run != "" {
		if err := checkRunID(o.run); err != nil {
			return Snapshot{}, err
		}
	}
	g, err := reopenGit(ctx, repoDir, o.prev, o.repo)
	if err != nil {
		return Snapshot{}, err
	}
	t := &taker{g: g, o: &o}
	defer t.cleanup()
	return t.take()
}

// taker holds the state of one Take.
type taker struct {
	g       *gitRepo
	o       *options
	env     []string // GIT_INDEX_FILE and, read-only, the temporary object directory
	readEnv []string // env for reading the snapshot's objects
	seeded  bool     // the index was seeded from the real index in this Take
	// newIndexDiff is the real index's diff from HEAD read by this Take
	// (nil when the previous boundary's was reused).
	newIndexDiff []Change
	indexFP      string        // the real index's fingerprint (indexFingerprint)
	tmp          string        // read-only: the temporary directory to remove
	pending      []looseObject // statusSnapshot's trees, written when read (flushTrees)
	// lagGone and lagSet are what a boundary from a watcher's paths
	// dropped and set, for the private index's lag file (noteLag).
	lagGone   []string
	lagSet    map[string]Blob
	watchMiss string   // why WithChanged's paths were not enough
	unskip    []string // unwatched directories the previous tree holds
	// sweepSkipped: rulesStart left the .gitignore files unread, a
	// watcher having seen none change (sweepGitignores).
	sweepSkipped bool
	problems     []string

	repo     *git.Repository
	repoErr  error
	opened   bool
	headTree *object.Tree
	treeErr  error
	treeRead bool
	subtrees map[plumbing.Hash]*object.Tree
	headOID  string

	// The run's ignore rules (rules.go): as this boundary found them;
	// rulesOff when git's may differ from them (before the tree is
	// written); gitignoreSeen when git status listed a .gitignore;
	// statusUsed when addChanged did the work; adjusted when the
	// snapshot was made with the run's rules; scratch the directory
	// holding them for git check-ignore.
	rules         *ignoreRules
	rulesOff      bool
	gitignoreSeen bool
	statusUsed    bool
	adjusted      bool
	scratch       string
	newDirs       []string // directories new to the snapshot (noteNewDirs)
	rulesFirst    bool     // this boundary's rules became the run's

	// moves are the refs the Take moves when it ends (moveRefs): the
	// run's, and the kept ref when what is kept changed.
	moves []refMove

	// ignoredCh brings the ignored paths a run's first boundary lists
	// while the snapshot is made (listIgnored).
	ignoredCh chan ignoredListing
}

type ignoredListing struct {
	recs []string
	err  error
}

func (t *taker) cleanup() {
	if t.tmp != "" {
		os.RemoveAll(t.tmp)
	}
	if t.scratch != "" {
		os.RemoveAll(t.scratch)
	}
}

func (t *taker) take() (Snapshot, error) {
	g := t.g
	head, branch, err := g.head()
	if err != nil {
		return Snapshot{}, err
	}
	t.headOID = head
	// An unborn branch still has a name; only a HEAD that holds a commit
	// id itself is detached.
	snap := Snapshot{Root: g.root, Head: head, Branch: branch, Detached: branch == "" && head != ""}
	tree, entries, fast, err := t.fastReadOnly(head)
	if err != nil {
		return Snapshot{}, err
	}
	if !fast {
		if err := t.prepareIndex(); err != nil {
			return Snapshot{}, err
		}
	}
	defer t.startIgnoredListing()()
	if !fast {
		if tree, entries, err = t.treeAndEntries(head, &snap); err != nil {
			return Snapshot{}, err
		}
	}
	snap.Tree, snap.fast = tree, fast
	if snap.Since, err = t.since(tree); err != nil {
		return Snapshot{}, err
	}
	if t.o.run != "" {
		if snap.watched {
			// Before the commit: a boundary killed after it still
			// leaves the private index what it must catch up on.
			if err := t.noteLag(); err != nil {
				return Snapshot{}, err
			}
		}
		if err := t.commit(&snap); err != nil {
			return Snapshot{}, err
		}
		if t.o.keep != nil {
			if err := t.keep(&snap); err != nil {
				return Snapshot{}, err
			}
		}
		if err := g.moveRefs(t.moves); err != nil {
			return Snapshot{}, err
		}
	}
	snap.Paths = entries
	snap.gitDir, snap.commonDir = g.gitDir, g.commonDir
	snap.indexFP, snap.indexDiff = t.indexFP, t.newIndexDiff
	if snap.indexDiff == nil && t.o.prev != nil {
		snap.indexDiff = t.o.prev.indexDiff
	}
	t.tracked(&snap)
	if snap.Nested, err = t.nested(entries); err != nil {
		return Snapshot{}, err
	}
	snap.Problems = append(snap.Problems, t.problems...)
	if t.rules != nil {
		snap.rules, snap.RulesChanged = t.rules, t.rules.changed
	}
	return snap, nil
}

// fastReadOnly takes a read-only snapshot (no run) from one git status
// (readonly.go); fast is false when it must be taken the long way.
func (t *taker) fastReadOnly(head string) (tree string, entries []Entry, fast bool, err error) {
	if t.o.run != "" || t.o.fromPrivate || t.o.slowRO {
		return "", nil, false, nil
	}
	if tree, entries, fast, err = t.statusSnapshot(head); err != nil {
		return "", nil, false, err
	}
	if fast && len(t.trackedMissing(entries)) > 0 {
		fast = false
	}
	if !fast {
		t.problems, t.newIndexDiff = nil, nil
	}
	return tree, entries, fast, nil
}

// treeAndEntries makes the snapshot tree and its dirty set: from a
// watcher's changed paths when the caller gave them (WithChanged) and they
// are enough (changes.go), else from the whole work tree through the index
// Take uses, the private index caught up first on what boundaries from a
// watcher's paths changed (catchUp).
func (t *taker) treeAndEntries(head string, snap *Snapshot) (string, []Entry, error) {
	if err := t.rulesStart(); err != nil {
		return "", nil, err
	}
	if t.o.run != "" && t.o.changed != nil {
		tree, entries, watched, err := t.fromChanges(head)
		if err != nil {
			return "", nil, err
		}
		snap.watched, snap.watchMiss, snap.watchUnskip = watched, t.watchMiss, t.unskip
		if watched {
			tree, err = t.runRules(tree)
			return tree, entries, err
		}
		t.statusUsed, t.newIndexDiff, t.newDirs = false, nil, nil
	}
	if t.o.run != "" {
		if t.sweepSkipped {
			t.sweepGitignores()
		}
		if err := t.catchUp(); err != nil {
			return "", nil, err
		}
	}
	tree, err := t.ruledTree(snap)
	if err != nil {
		return "", nil, err
	}
	entries, tree, err := t.dirtyEntries(head, tree)
	return tree, entries, err
}

// startIgnoredListing starts, for a run's first boundary, the listing of the
// ignored files to keep (keep.go): a walk of its own, beside the
// snapshot's. It returns what waits for the walk to end.
func (t *taker) startIgnoredListing() (wait func()) {
	k := t.o.keep
	if k == nil || !k.Ignored || t.o.run == "" || (t.o.prev != nil && t.o.prev.Ignored != nil) {
		return func() {}
	}
	ch := make(chan ignoredListing, 1)
	go func() {
		recs, err := t.ignoredList()
		ch <- ignoredListing{recs, err}
	}()
	t.ignoredCh = ch
	return func() {
		if t.ignoredCh != nil {
			<-t.ignoredCh
		}
	}
}

// ruledTree writes the worktree's tree through the index Take uses, under
// the run's ignore rules (read first: rulesStart), keeping in it the files
// the previous boundary had that became ignored since (snap.KeptIgnored).
func (t *taker) ruledTree(snap *Snapshot) (string, error) {
	tree, err := t.writeTreeOrReseed()
	if err != nil {
		return "", err
	}
	// Only an index seeded afresh can have lost a file that became ignored
	// (an entry of the private index stays in it once added).
	if prev := t.o.prev; t.seeded && prev != nil && prev.Tree != "" && t.g.hasObject(prev.Tree) {
		kept, newTree, err := t.keepIgnored(prev.Tree, tree)
		if err != nil {
			return "", err
		}
		tree, snap.KeptIgnored = newTree, kept
	}
	return t.runRules(tree)
}

// dirtyEntries is the dirty set against HEAD, when the snapshot needs it;
// a tracked file the tree lacks is added by force and the tree written
// again, so the tree it returns may differ from the one given.
func (t *taker) dirtyEntries(head, tree string) ([]Entry, string, error) {
	var entries []Entry
	var err error
	if !t.o.treeOnly || t.o.run != "" {
		if entries, err = t.dirtySet(head, tree); err != nil {
			return nil, "", err
		}
	}
	missing := t.trackedMissing(entries)
	if len(missing) == 0 {
		return entries, tree, nil
	}
	if err := t.forceAdd(missing); err != nil {
		return nil, "", err
	}
	if tree, err = t.writeIndexTree(); err != nil {
		return nil, "", err
	}
	if entries, err = t.dirtySet(head, tree); err != nil {
		return nil, "", err
	}
	return entries, tree, nil
}

// since is the change from the tree the caller compares with (nil when it
// names none), less the excluded paths.
func (t *taker) since(tree string) ([]Change, error) {
	switch t.o.compare {
	case tree:
		return []Change{}, nil
	case "":
		return nil, nil
	}
	if err := t.flushTrees(); err != nil {
		return nil, err
	}
	changes, err := t.g.diffTree(t.readEnv, t.o.compare, tree, false)
	if err != nil {
		return nil, fmt.Errorf("comparing with tree %.12s: %w", t.o.compare, err)
	}
	since := []Change{}
	for _, c := range changes {
		if !t.excluded(c.Path) {
			since = append(since, c)
		}
	}
	return since, nil
}

// tracked fills snap.Tracked: the paths the caller asked to follow, and
// those HEAD's move since the previous boundary changed and the worktree
// does not.
func (t *taker) tracked(snap *Snapshot) {
	if len(t.o.track) > 0 {
		snap.Tracked = t.track(snap, t.o.track)
	}
	if !t.o.prevGiven || t.o.prev.Head == snap.Head {
		return
	}
	for path, b := range t.headChange(snap) {
		if _, dirty := snap.Lookup(path); dirty {
			continue
		}
		if snap.Tracked == nil {
			snap.Tracked = map[string]Blob{}
		}
		snap.Tracked[path] = b
	}
}

// runRules finishes with the run's ignore rules once the tree is written
// (rulesEnd), and when git's turn out to differ from them but the tree was
// built with git's (`git add -A`, or a .gitignore change addChanged did not
// see), adds what the run's rules do not ignore and writes the tree again.
func (t *taker) runRules(tree string) (string, error) {
	if t.rules == nil {
		return tree, nil
	}
	if err := t.rulesEnd(tree); err != nil {
		return "", err
	}
	// (A run's first boundary has git's rules, unless they are a
	// driver's: WithRepo.)
	if t.adjusted || len(t.rules.changed) == 0 {
		return tree, nil
	}
	// What entered the snapshot since the previous boundary is what git
	// status would have listed untracked; at a run's first boundary,
	// what HEAD does not have.
	var added []string
	from := ""
	if p := t.o.prev; p != nil && p.Tree != "" && t.g.hasObject(p.Tree) {
		from = p.Tree
	} else if t.rulesFirst {
		from = t.headOID
	}
	if from != "" {
		changes, err := t.g.diffTree(t.readEnv, from, tree, false)
		if err != nil {
			return "", err
		}
		for _, c := range changes {
			if !c.Before.Present() && c.After.Present() {
				added = append(added, c.Path)
			}
		}
	}
	add, drop, err := t.rulesAdjust(added)
	if err != nil || len(add) == 0 && len(drop) == 0 {
		return tree, err
	}
	if len(drop) > 0 {
		var in bytes.Buffer
		for _, p := range added {
			if drop[p] {
				in.WriteString(p)
				in.WriteByte(0)
			}
		}
		if _, _, err := t.g.run(t.env, in.Bytes(), t.indexConfig("update-index", "--force-remove", "-z", "--stdin")...); err != nil {
			return "", fmt.Errorf("boundary index: %w", err)
		}
	}
	if len(add) > 0 {
		if err := t.forceAdd(add); err != nil {
			return "", err
		}
	}
	return t.writeIndexTree()
}

// excluded reports whether path is left out of the snapshot.
func (t *taker) excluded(path string) bool {
	if Excluded(path) {
		return true
	}
	for _, x := range t.o.exclude {
		if path == x {
			return true
		}
	}
	return false
}

// excludes are the paths kept out of the snapshot tree, as git pathspecs.
func (t *taker) excludes() []string {
	out := ownExcludes()
	for _, x := range t.o.exclude {
		if x != "" {
			out = append(out, ":(top,exclude,literal)"+x)
		}
	}
	return out
}

// ownExcludes are implloop's own files, which no snapshot holds, as git
// pathspecs.
func ownExcludes() []string {
	return []string{":(top,exclude,literal)BLOCKED.md", ":(top,exclude,literal).implloop"}
}

// writeTree adds the whole work tree to the index Take uses and writes it
// as a tree.
func (t *taker) writeTree() (string, error) {
	if err := t.addAll(); err != nil {
		return "", err
	}
	return t.writeIndexTree()
}

// addAll adds the whole work tree to the index Take uses: `git add -A`,
// or on the private index its cheaper equivalent (addChanged) when that
// can do the work.
func (t *taker) addAll() error {
	if t.o.run != "" && !t.o.fullAdd {
		if done, err := t.addChanged(); err != nil || done {
			return err
		}
	}
	args := t.indexConfig(append([]string{"add", "-A", "--ignore-errors", "--", ":/"}, t.excludes()...)...)
	if _, stderr, err := t.g.run(t.env, nil, args...); err != nil {
		if err := t.addProblems(stderr); err != nil {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(stderr)))
		}
	}
	return nil
}

// writeIndexTree writes the index Take uses as a tree.
func (t *taker) writeIndexTree() (string, error) {
	if t.o.run != "" {
		// The private index: its cache tree, where git would write
		// nothing either (cachedTree).
		if tree, ok := t.g.cachedTree(filepath.Join(stateDir(t.g.gitDir), "boundary-index")); ok {
			return tree, nil
		}
	}
	wt := []string{"write-tree"}
	if t.o.run == "" {
		// Read-only: the objects of unchanged files are not in the
		// temporary object directory (see prepareIndex).
		wt = append(wt, "--missing-ok")
	}
	out, _, err := t.g.run(t.env, nil, wt...)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if !isHexID(id) {
		return "", fmt.Errorf("git write-tree in %s: bad id %q", t.g.root, id)
	}
	return id, nil
}

// addProblems reads the complaints of a `git add -A --ignore-errors` that
// exited non-zero. Every readable path was added and the index written; a
// path that could not be (an embedded repository without commits, an
// unreadable file) is a problem, not a failure. git also complains when an
// exclude pathspec names an ignored path (BLOCKED.md in .gitignore), which
// is no problem at all. Anything fatal is an error.
func (t *taker) addProblems(stderr []byte) error {
	ignoredList := false
	for _, line := range strings.Split(string(stderr), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "fatal: "):
			return errors.New("git add failed")
		case strings.HasPrefix(line, "The following paths are ignored"):
			ignoredList = true
		case strings.HasPrefix(line, "error: "):
			ignoredList = false
			t.problems = append(t.problems, strings.TrimPrefix(line, "error: "))
		case strings.HasPrefix(line, "warning: ") || strings.HasPrefix(line, "hint: "):
			ignoredList = false
		case ignoredList:
			if !t.excluded(strings.TrimSuffix(line, "/")) {
				return fmt.Errorf("git add complained about %q", line)
			}
		}
	}
	return nil
}

// trackedMissing lists the paths the real index tracks that are on disk
// but not in the snapshot tree: a tracked file is never ignored, but
// `git add -A` on the private index takes one for an ignored untracked
// file when the private index does not have it (force-added to the real
// index with `git add -f`, or removed from the private index while it was
// deleted) and an ignore rule covers it. The dirty set shows them as
// deleted (or added) with index content and no work-tree content.
func (t *taker) trackedMissing(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		if e.Worktree.Present() || !e.Index.Present() || e.Status == StatusConflicted {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(t.g.root, filepath.FromSlash(e.Path))); err == nil && !fi.IsDir() {
			out = append(out, e.Path)
		}
	}
	return out
}

// forceAdd adds paths to the index Take uses whatever ignore rules say.
func (t *taker) forceAdd(paths []string) error {
	var in strings.Builder
	for _, p := range paths {
		in.WriteString(":(top,literal)" + p)
		in.WriteByte(0)
	}
	if _, _, err := t.g.run(t.env, []byte(in.String()), t.indexConfig("add", "-f", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul")...); err != nil {
		t.problems = append(t.problems, fmt.Sprintf("adding %d ignored path(s): %v", len(paths), err))
	}
	return nil
}

// keepIgnored puts back into the snapshot the paths that left the tree
// since the previous boundary but are still on disk: they became ignored
// (a new .gitignore or info/exclude rule), which loses nothing, so the
// boundary keeps following them.
func (t *taker) keepIgnored(prevTree, tree string) ([]string, string, error) {
	if prevTree == tree {
		return nil, tree, nil
	}
	changes, err := t.g.diffTree(t.readEnv, prevTree, tree, false)
	if err != nil {
		return nil, "", err
	}
	var kept []string
	for _, c := range changes {
		if c.After.Present() || t.excluded(c.Path) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(t.g.root, filepath.FromSlash(c.Path)))
		if err != nil || fi.IsDir() {
			continue
		}
		kept = append(kept, c.Path)
	}
	if len(kept) == 0 {
		return nil, tree, nil
	}
	if err := t.forceAdd(kept); err != nil {
		return nil, "", err
	}
	newTree, err := t.writeIndexTree()
	if err != nil {
		return nil, "", err
	}
	return kept, newTree, nil
}

// dirtySet lists the paths whose content differs between HEAD, the index
// and the snapshot tree (the work tree), the way git status does.
func (t *taker) dirtySet(head, tree string) ([]Entry, error) {
	from := head
	if from == "" {
		from = t.g.emptyTree()
	}
	wt, err := t.g.diffTree(t.readEnv, from, tree, false)
	if err != nil {
		return nil, err
	}
	idx, err := t.indexDiff(head, from)
	if err != nil {
		return nil, err
	}
	return t.mergeDirty(wt, idx), nil
}

// mergeDirty merges the work tree's changes from HEAD (wt: HEAD against
// the snapshot tree) with the index's (idx: the real index against HEAD,
// staged renames detected) into the dirty set, implloop's own and the
// excluded paths left out, sorted by path.
func (t *taker) mergeDirty(wt, idx []Change) []Entry {
	byPath := pendingSet{}
	for _, c := range wt {
		e := byPath.get(c.Path)
		e.Head, e.Worktree, e.inTree = c.Before, c.After, true
	}
	for _, c := range idx {
		byPath.addIndexChange(c)
	}
	out := make([]Entry, 0, len(byPath))
	for p, e := range byPath {
		if t.excluded(p) {
			continue
		}
		out = append(out, e.entry())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// pending is a dirty-set entry while dirtySet gathers it: what the tree
// and the index said of the path so far.
type pending struct {
	Entry
	inTree, inIndex, conflicted bool
}

// pendingSet is the dirty set being gathered, by path.
type pendingSet map[string]*pending

func (s pendingSet) get(p string) *pending {
	e, ok := s[p]
	if !ok {
		e = &pending{Entry: Entry{Path: p}}
		s[p] = e
	}
	return e
}

// addIndexChange records one way the index differs from HEAD: a conflict,
// a rename or copy (both of its paths), or a staged change.
func (s pendingSet) addIndexChange(c Change) {
	switch c.Status {
	case 'U':
		e := s.get(c.Path)
		e.conflicted = true
		if !e.inTree {
			e.Head, e.Worktree = c.Before, c.Before
		}
	case 'R', 'C':
		e := s.get(c.Path)
		e.Index, e.inIndex, e.OrigPath = c.After, true, c.From
		if !e.inTree {
			e.Head = Blob{}
		}
		if c.Status == 'R' {
			o := s.get(c.From)
			o.RenamedTo, o.inIndex = c.Path, true
			if !o.inTree {
				o.Head, o.Worktree = c.Before, c.Before
			}
			o.Index = Blob{}
		} else {
			e.XY = "C"
		}
	default:
		e := s.get(c.Path)
		e.Index, e.inIndex = c.After, true
		if !e.inTree {
			e.Head, e.Worktree = c.Before, c.Before
		}
	}
}

// entry is the finished Entry: the index side filled in, the status
// classified, a submodule marked.
func (e *pending) entry() Entry {
	if !e.inIndex && !e.conflicted {
		e.Index = e.Head
	}
	if e.conflicted {
		e.Index = Blob{}
	}
	e.Status, e.XY = classify(&e.Entry, e.conflicted)
	if e.Head.Mode == ModeGitlink || e.Worktree.Mode == ModeGitlink {
		c := byte('.')
		if e.Head.Hash != e.Worktree.Hash {
			c = 'C'
		}
		e.Submodule = "S" + string(c) + ".."
		if e.Status == StatusModified {
			e.Status = StatusSubmodule
		}
	}
	return e.Entry
}

// indexDiff is how the real index differs from HEAD: the previous
// boundary's answer when neither the index (same fingerprint) nor HEAD
// changed since; nothing when ResetWorktree made the index HEAD's and it
// did not change since (indexAt); else `git diff-index --cached`.
func (t *taker) indexDiff(head, from string) ([]Change, error) {
	if p := t.o.prev; p != nil && p.indexFP != "" && p.indexFP == t.indexFP && p.Head == head {
		return p.indexDiff, nil
	}
	if p := t.o.prev; p == nil && head != "" && t.g.indexAt(t.indexFP) == head {
		// A worker's next run, in the worktree ResetWorktree made
		// head's: its index is head's tree, unchanged since.
		return nil, nil
	}
	idx, err := t.g.diffIndex(from)
	if err != nil {
		return nil, err
	}
	t.newIndexDiff = idx
	return idx, nil
}

// classify derives a dirty entry's status and git's two-letter code from
// its three contents.
func classify(e *Entry, conflicted bool) (Status, string) {
	h, i, w := e.Head, e.Index, e.Worktree
	x := letter(h, i)
	y := letter(i, w)
	if e.XY == "C" {
		x = 'C'
	} else if e.OrigPath != "" || e.RenamedTo != "" {
		x = 'R'
	}
	switch {
	case conflicted:
		return StatusConflicted, "UU"
	case e.OrigPath != "" && x == 'C':
		return StatusCopied, string([]byte{x, y})
	case e.OrigPath != "":
		return StatusRenamed, string([]byte{x, y})
	case !h.Present() && !i.Present() && w.Present():
		return StatusUntracked, "??"
	case !h.Present():
		return StatusAdded, string([]byte{x, y})
	case !w.Present():
		return StatusDeleted, string([]byte{x, y})
	case h.Mode.normalize()&0o170000 != w.Mode.normalize()&0o170000:
		return StatusTypeChange, string([]byte{x, y})
	}
	return StatusModified, string([]byte{x, y})
}

// letter is git's one-letter code for how b differs from a.
func letter(a, b Blob) byte {
	switch {
	case a.Same(b) || (!a.Present() && !b.Present()):
		return '.'
	case !a.Present():
		return 'A'
	case !b.Present():
		return 'D'
	case a.Mode.normalize()&0o170000 != b.Mode.normalize()&0o170000:
		return 'T'
	}
	return 'M'
}

// repository opens go-git on first use.
func (t *taker) repository() (*git.Repository, error) {
	if !t.opened {
		t.opened = true
		t.repo, t.repoErr = openRepo(t.g.root)
	}
	return t.repo, t.repoErr
}

// tree returns HEAD's tree (nil, nil when unborn).
func (t *taker) tree() (*object.Tree, error) {
	if t.treeRead {
		return t.headTree, t.treeErr
	}
	t.treeRead = true
	if t.headOID == "" {
		return nil, nil
	}
	repo, err := t.repository()
	if err != nil {
		t.treeErr = err
		return nil, err
	}
	c, err := repo.CommitObject(plumbing.NewHash(t.headOID))
	if err != nil {
		t.treeErr = fmt.Errorf("reading HEAD commit %s: %w", t.headOID, err)
		return nil, t.treeErr
	}
	t.headTree, t.treeErr = c.Tree()
	if t.treeErr != nil {
		t.treeErr = fmt.Errorf("reading HEAD tree of %s: %w", t.headOID, t.treeErr)
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
