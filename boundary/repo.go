package boundary

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Repo is what a run's first boundary asks git about the work tree
// before it looks at it: where its git directories are and the object
// format; and the ignore rules git's configuration gives
// (<git-dir>/info/exclude, core.excludesFile), from which the run's rules
// start. A driver that starts many runs in one work tree (a worker of
// implloop work: one run per task, in one worktree) learns it once,
// before any agent ran there (LearnRepo), and gives it to the first Take
// of each run (WithRepo), instead of asking git again each time.
//
// An agent is arbitrary code in the work tree, and it shares git's
// configuration with the driver. The git directories are used only while
// they still hold: the work tree's .git still names the git directory
// learned, which still holds HEAD (else git is asked). The ignore rules
// learned are the run's, as a first boundary's are, whatever git's are
// by then: the later runs of the driver decide what is ignored with
// them, as the later tasks of one serial run go by its first boundary's,
// so that an agent that changed them (core.excludesFile pointed at a
// file that ignores its work, info/exclude edited) hides nothing from
// the runs after its own. Each of their boundaries says how git's rules
// differ (Snapshot.RulesChanged), the first one included.
// core.excludesFile is asked of git again only when git's configuration
// files no longer have the stat data they had when it was learned (the
// fingerprint a run's later boundaries go by: rules.go), and always when
// one of them includes another (whose changes that fingerprint cannot
// see).
type Repo struct {
	root, gitDir, commonDir string
	sha256                  bool
	// rules are the ignore rules learned (no .gitignore yet: each run's
	// first boundary reads them from its tree); nil when
	// core.excludesFile could not be read.
	rules *ignoreRules

	// treeDirs are the directories of the trees the runs' first
	// boundaries read (ls-tree), by tree id: what a tree holds never
	// changes, and a worker's tasks often start from the same one. The
	// newest few. mu guards them and stash (a Repo may be shared).
	mu       sync.Mutex
	treeDirs []treeDirs
	// stash is what git last said of the stash (Repo.StashTop); racy
	// how old its files must be for that to be remembered (stashRacy).
	stash *stashSeen
	racy  time.Duration
}

// treeDirs are the directories of tree ("" first: the top).
type treeDirs struct {
	tree string
	dirs []string
}

// maxTreeDirs is how many trees' directories a Repo remembers.
const maxTreeDirs = 4

// dirsOf is the directories of tree a first boundary of r's work tree
// read before (not to be changed); ok false when none did.
func (r *Repo) dirsOf(g *gitRepo, tree string) (dirs []string, ok bool) {
	if r == nil || r.sha256 != g.sha256 {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.treeDirs {
		if d.tree == tree {
			return d.dirs, true
		}
	}
	return nil, false
}

// noteDirs remembers the directories of tree (not to be changed after).
func (r *Repo) noteDirs(g *gitRepo, tree string, dirs []string) {
	if r == nil || r.sha256 != g.sha256 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.treeDirs) >= maxTreeDirs {
		r.treeDirs = slices.Delete(r.treeDirs, 0, 1)
	}
	r.treeDirs = append(r.treeDirs, treeDirs{tree, dirs})
}

// LearnRepo learns Repo for the work tree containing dir.
func LearnRepo(ctx context.Context, dir string) (*Repo, error) {
	g, err := openGit(ctx, dir)
	if err != nil {
		return nil, err
	}
	r := &Repo{root: g.root, gitDir: g.gitDir, commonDir: g.commonDir, sha256: g.sha256, racy: stashRacy}
	fp, strict := strictConfigFingerprint(g)
	p, err := (&taker{g: g}).excludesFile()
	if err != nil {
		return r, nil
	}
	if again, _ := strictConfigFingerprint(g); !strict || again != fp {
		fp = "" // a first boundary asks git what core.excludesFile is now
	}
	r.rules = &ignoreRules{exclude: readSmall(filepath.Join(g.commonDir, "info", "exclude")),
		excludesPath: p, excludes: readSmall(p), configFP: fp, excludesNow: p}
	return r, nil
}

// WithRepo gives Take what LearnRepo learned of the work tree: a Take
// without WithPrev (a run's first boundary) uses its git directories,
// where they still hold, instead of asking git, and its ignore rules as
// the run's (see Repo). nil changes nothing.
func WithRepo(r *Repo) Option {
	return func(o *options) { o.repo = r }
}

// Root is the work tree's top-level directory, as the boundaries of a
// run given r have it (Snapshot.Root).
func (r *Repo) Root() string { return r.root }

// gitRepo is r for a Take of the work tree whose top level is root: nil
// when r does not hold (another work tree, its git directory gone).
func (r *Repo) gitRepo(ctx context.Context, root string) *gitRepo {
	if r == nil || r.root != root {
		return nil
	}
	if fi, err := os.Stat(filepath.Join(r.gitDir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if dotGitDir(root) != r.gitDir {
		return nil // .git moved, or made to point elsewhere: ask git
	}
	return &gitRepo{ctx: ctx, root: root, gitDir: r.gitDir, commonDir: r.commonDir, sha256: r.sha256}
}

// rulesFor is the ignore rules r learned, for a Take whose git is g (nil
// when r learned none, or of another work tree).
func (r *Repo) rulesFor(g *gitRepo) *ignoreRules {
	if r == nil || r.rules == nil || r.gitDir != g.gitDir || r.root != g.root {
		return nil
	}
	return r.rules
}

// strictConfigFingerprint is configFingerprint when it tells every
// change to what git reads its configuration from: each file's change
// time is known (stat data git cannot keep from changing), and no file
// includes another (include.path, includeIf: the fingerprint does not
// follow them). ok is false otherwise.
func strictConfigFingerprint(g *gitRepo) (fp string, ok bool) {
	for _, f := range configFiles(g) {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		if fileStat(fi).Ctime == 0 {
			return "", false
		}
		b, err := os.ReadFile(f)
		if err != nil || bytes.Contains(bytes.ToLower(b), []byte("include")) {
			return "", false
		}
	}
	return configFingerprint(g), true
}

// dotGitDir is the git directory root's .git names (itself, or the one
// a "gitdir:" file points at), symbolic links resolved as git resolves
// them for --absolute-git-dir; "" when it cannot tell.
func dotGitDir(root string) string {
	dot := filepath.Join(root, ".git")
	fi, err := os.Lstat(dot)
	if err != nil {
		return ""
	}
	p := dot
	if fi.Mode().IsRegular() {
		b, err := os.ReadFile(dot)
		if err != nil {
			return ""
		}
		line, _, _ := strings.Cut(string(b), "\n")
		gd, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
		if !ok || gd == "" {
			return ""
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(root, gd)
		}
		p = gd
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return real
}

// Current reports whether r still holds for its work tree: its .git
// names the git directory r learned, which holds HEAD. false for nil.
func (r *Repo) Current() bool {
	return r != nil && r.gitRepo(context.Background(), r.root) != nil
}

// KeepRulesOf makes the ignore rules r goes by those first learned, of
// the same work tree made again (a worker's, after a reset of it
// failed): learned after agents ran there, r's own would be theirs. nil
// first, or first without rules, changes nothing.
func (r *Repo) KeepRulesOf(first *Repo) {
	if r != nil && first != nil && first.rules != nil && first.root == r.root {
		r.rules = first.rules // only ever copied by a Take (rulesStart)
	}
}
