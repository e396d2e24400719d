package boundary

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
)

// Repo is what a run's first boundary asks git about the work tree
// before it looks at it: where its git directories are, the object
// format, and core.excludesFile (the run's ignore rules start from it).
// A driver that starts many runs in one work tree (a worker of implloop
// work: one run per task) learns it once (LearnRepo) and gives it to the
// first Take of each run (WithRepo), instead of asking git again each
// time (two processes a run).
//
// An agent is arbitrary code in the work tree, and it shares git's
// configuration with the driver: what Repo knows is used only while it
// still holds, and asked of git again otherwise, so that a run given it
// starts from what the same run would have found without it. The git
// directory must still hold HEAD (as for WithPrev); the excludes file is
// used only while git's configuration files are, file for file, as
// their stat data was when it was resolved (the same fingerprint that
// tells a run's later boundaries that core.excludesFile may have
// changed: rules.go), and never when one of them includes another
// (whose changes the fingerprint cannot see).
type Repo struct {
	root, gitDir, commonDir string
	sha256                  bool
	// excludesPath is core.excludesFile as resolved while the
	// configuration files' fingerprint was excludesFP ("": not known).
	excludesPath, excludesFP string
}

// LearnRepo learns Repo for the work tree containing dir.
func LearnRepo(ctx context.Context, dir string) (*Repo, error) {
	g, err := openGit(ctx, dir)
	if err != nil {
		return nil, err
	}
	r := &Repo{root: g.root, gitDir: g.gitDir, commonDir: g.commonDir, sha256: g.sha256}
	fp, ok := strictConfigFingerprint(g)
	if !ok {
		return r, nil
	}
	p, err := (&taker{g: g}).excludesFile()
	if again, _ := strictConfigFingerprint(g); err == nil && again == fp {
		r.excludesPath, r.excludesFP = p, fp
	}
	return r, nil
}

// WithRepo gives Take what LearnRepo learned of the work tree: a Take
// without WithPrev (a run's first boundary) uses it, where it still
// holds, instead of asking git (see Repo). nil changes nothing.
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

// excludes is core.excludesFile as r resolved it, when git's
// configuration files are as they were then (fp is their fingerprint
// now).
func (r *Repo) excludes(g *gitRepo, fp string) (string, bool) {
	if r == nil || r.excludesFP == "" || r.excludesFP != fp || r.gitDir != g.gitDir || r.root != g.root {
		return "", false
	}
	return r.excludesPath, true
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
