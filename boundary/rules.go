package boundary

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ignoreRules are the ignore rules of a run: what decided, at its first
// boundary, which files git ignores (the .gitignore files of that tree,
// <git-dir>/info/exclude, core.excludesFile). Every later boundary of the
// run decides what is ignored with them, not with the rules of the moment:
// a rule a task adds (`*` in .gitignore, core.excludesFile, info/exclude)
// cannot hide work from the guard, and one it removes cannot pour an
// ignored directory into the snapshot. The change itself is reported
// (Snapshot.RulesChanged), and the guard makes it a concern of the task.
//
// While the rules are the run's (almost always) this costs a few stat
// calls and two small reads per boundary. When they differ, the files git
// now ignores that the run's rules do not are added to the snapshot, and
// the new untracked files the run's rules ignore are left out; both are
// asked of `git check-ignore` in a scratch repository holding the run's
// rules.
type ignoreRules struct {
	base         string // the first boundary's tree: its .gitignore files ("" until written)
	exclude      []byte // <common-dir>/info/exclude then
	excludesPath string // core.excludesFile then (or git's default), resolved
	excludes     []byte // its content then
	configFP     string // the stat data of git's configuration files, as last read
	excludesNow  string // core.excludesFile as last resolved
	gitignores   []string
	changed      []string
	// dirs are the directories of the snapshot (the root is ""), and
	// ignStat the stat data of the .gitignore in each (absent: none): a
	// .gitignore created, edited or removed anywhere git status cannot
	// tell (one that ignores itself) is noticed by it.
	dirs    []string
	ignStat map[string]FileStat
}

// maxRuleFile caps what is read of an ignore file.
const maxRuleFile = 4 << 20

// rulesStart reads the ignore rules before the tree is built: at a run's
// first boundary they become the run's; at a later one, what differs from
// the run's (the .gitignore files are compared once the tree is written:
// rulesEnd).
func (t *taker) rulesStart() error {
	if t.o.run == "" {
		return nil
	}
	g := t.g
	fp := configFingerprint(g)
	exclude := readSmall(filepath.Join(g.commonDir, "info", "exclude"))
	var r ignoreRules
	switch {
	case t.o.prev != nil && t.o.prev.rules != nil:
		r = *t.o.prev.rules
		r.changed = nil
		if t.o.changed != nil && !t.o.changed.gitignore() {
			// A watcher saw every change since the previous boundary, and
			// no .gitignore among them: no need to look (a boundary that
			// then goes the long way looks: sweepGitignores).
			t.sweepSkipped = true
		} else {
			t.rules = &r
			t.sweepGitignores()
		}
	case t.o.repo.rulesFor(g) != nil:
		// The rules a driver learned (WithRepo) are the run's, compared
		// with git's now as at a later boundary.
		r = *t.o.repo.rulesFor(g)
	default:
		p, err := t.excludesFile()
		if err != nil {
			return err
		}
		t.rules = &ignoreRules{exclude: exclude, excludesPath: p, excludes: readSmall(p), configFP: fp, excludesNow: p}
		return nil
	}
	if fp != r.configFP {
		p, err := t.excludesFile()
		if err != nil {
			return err
		}
		r.configFP, r.excludesNow = fp, p
	}
	if !bytes.Equal(exclude, r.exclude) {
		r.changed = append(r.changed, "info/exclude changed")
	}
	switch {
	case r.excludesNow != r.excludesPath:
		what := "unset"
		if r.excludesNow != "" {
			what = "set to " + r.excludesNow
		}
		r.changed = append(r.changed, "core.excludesFile "+what)
	case !bytes.Equal(readSmall(r.excludesNow), r.excludes):
		r.changed = append(r.changed, "core.excludesFile ("+r.excludesNow+") changed")
	}
	t.rules = &r
	t.rulesOff = len(r.changed) > 0 || len(r.gitignores) > 0
	return nil
}

// sweepGitignores stats the .gitignore of every directory of the
// snapshot: one created, edited or removed where git status cannot tell
// (one that ignores itself) is noticed so.
func (t *taker) sweepGitignores() {
	r := t.rules
	t.sweepSkipped = false
	if st := t.gitignoreStats(r.dirs); !maps.Equal(st, r.ignStat) {
		r.ignStat, t.gitignoreSeen = st, true
	}
}

// rulesEnd finishes with the rules once the tree is written: the first
// boundary's tree is the run's .gitignore files; at a later boundary the
// .gitignore files that differ from it are looked up when one may have
// changed (git status listed one, or one differed before).
func (t *taker) rulesEnd(tree string) error {
	r := t.rules
	if r == nil {
		return nil
	}
	if r.base == "" {
		r.base, t.rulesFirst = tree, true
		dirs, ok := t.o.repo.dirsOf(t.g, tree)
		if !ok {
			out, _, err := t.g.run(t.readEnv, nil, "ls-tree", "-r", "-d", "-z", "--name-only", "--full-tree", tree)
			if err != nil {
				return fmt.Errorf("reading the directories of the tree: %w", err)
			}
			dirs = []string{""}
			for _, d := range strings.Split(string(out), "\x00") {
				if d != "" {
					dirs = append(dirs, d)
				}
			}
			t.o.repo.noteDirs(t.g, tree, dirs)
		}
		r.dirs = dirs // never changed in place (a later boundary's are a copy)
		r.ignStat = t.gitignoreStats(r.dirs)
		return nil
	}
	if len(t.newDirs) > 0 {
		r.dirs = append(slices.Clone(r.dirs), t.newDirs...)
		r.ignStat = t.gitignoreStats(r.dirs)
	}
	if t.gitignoreSeen || len(r.gitignores) > 0 || !t.statusUsed {
		changes, err := t.g.diffTree(t.readEnv, r.base, tree, false)
		if err != nil {
			return fmt.Errorf("comparing the ignore rules: %w", err)
		}
		r.gitignores = r.gitignores[:0:0]
		for _, c := range changes {
			if isGitignore(c.Path) {
				r.gitignores = append(r.gitignores, c.Path)
			}
		}
	}
	if len(r.gitignores) > 0 {
		r.changed = append(r.changed, strings.Join(r.gitignores, ", ")+" changed")
	}
	return nil
}

// gitignoreStats stats the .gitignore of each of dirs.
func (t *taker) gitignoreStats(dirs []string) map[string]FileStat {
	out := map[string]FileStat{}
	for _, d := range dirs {
		if fi, err := os.Lstat(filepath.Join(t.g.root, filepath.FromSlash(d), ".gitignore")); err == nil {
			out[d] = fileStat(fi)
		}
	}
	return out
}

// noteNewDirs remembers the directories of untracked paths (new to the
// snapshot) for the next boundaries' .gitignore checks, and reports
// whether one of them holds a .gitignore.
func (t *taker) noteNewDirs(untracked []string) bool {
	if t.rules == nil || t.rules.base == "" || len(untracked) == 0 {
		return false
	}
	known := make(map[string]bool, len(t.rules.dirs))
	for _, d := range t.rules.dirs {
		known[d] = true
	}
	found := false
	for _, p := range untracked {
		for d := path.Dir(p); d != "." && !known[d]; d = path.Dir(d) {
			known[d] = true
			t.newDirs = append(t.newDirs, d)
			if _, err := os.Lstat(filepath.Join(t.g.root, filepath.FromSlash(d), ".gitignore")); err == nil {
				found = true
			}
		}
	}
	return found
}

func isGitignore(p string) bool { return p == ".gitignore" || strings.HasSuffix(p, "/.gitignore") }

// excludesFile resolves core.excludesFile, or git's default when it is
// unset ($XDG_CONFIG_HOME/git/ignore, else ~/.config/git/ignore).
func (t *taker) excludesFile() (string, error) {
	out, _, err := t.g.run(nil, nil, "config", "--path", "--get", "core.excludesFile")
	switch {
	case err == nil:
		p := strings.TrimSpace(string(out))
		if p != "" && !filepath.IsAbs(p) {
			p = filepath.Join(t.g.root, p)
		}
		return p, nil
	case exitCode(err) != 1:
		return "", fmt.Errorf("reading core.excludesFile: %w", err)
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", "ignore"), nil
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "git", "ignore"), nil
	}
	return "", nil
}

// configFingerprint is the stat data of the files git reads its
// configuration from (an include is not followed): when it is unchanged,
// so is core.excludesFile.
func configFingerprint(g *gitRepo) string {
	var b strings.Builder
	for _, f := range configFiles(g) {
		if fi, err := os.Stat(f); err == nil {
			st := fileStat(fi)
			fmt.Fprintf(&b, "%s %d %d %d %d\n", f, st.Size, st.Mtime, st.Ctime, st.Ino)
		}
	}
	return b.String()
}

// configFiles are the files git reads its configuration from, for
// configFingerprint.
func configFiles(g *gitRepo) []string {
	files := []string{filepath.Join(g.commonDir, "config"), filepath.Join(g.gitDir, "config.worktree")}
	if p := os.Getenv("GIT_CONFIG_GLOBAL"); p != "" {
		files = append(files, p)
	} else if h, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(h, ".gitconfig"), filepath.Join(h, ".config", "git", "config"))
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, "git", "config"))
	}
	if p := os.Getenv("GIT_CONFIG_SYSTEM"); p != "" {
		files = append(files, p)
	} else if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		files = append(files, "/etc/gitconfig")
	}
	return files
}

// readSmall reads an ignore file (nil when it is not there), at most
// maxRuleFile bytes of it.
func readSmall(p string) []byte {
	if p == "" {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxRuleFile))
	if b == nil {
		b = []byte{}
	}
	return b
}

// rulesAdjust applies the run's rules where they differ from git's now:
// the untracked paths git status listed (untracked) that the run's rules
// ignore are dropped, and the files git ignores now that the run's rules
// do not are returned to be added.
func (t *taker) rulesAdjust(untracked []string) (add []string, drop map[string]bool, err error) {
	out, _, err := t.g.run(t.env, nil, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil, nil, fmt.Errorf("listing ignored files: %w", err)
	}
	var ignoredNow []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" && !t.addExcluded(strings.TrimSuffix(p, "/")) {
			ignoredNow = append(ignoredNow, p)
		}
	}
	// ls-files lists a directory whose files are all ignored, and then
	// those files: the files are enough.
	sort.Strings(ignoredNow)
	ignoredNow = slices.Compact(ignoredNow)
	check := append(append([]string(nil), ignoredNow...), untracked...)
	if len(check) == 0 {
		return nil, nil, nil
	}
	ignoredThen, err := t.ignoredByRunRules(check)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range untracked {
		if ignoredThen[p] {
			if drop == nil {
				drop = map[string]bool{}
			}
			drop[p] = true
		}
	}
	var expand []string
	for _, p := range ignoredNow {
		if ignoredThen[p] {
			continue
		}
		if d, ok := strings.CutSuffix(p, "/"); ok {
			expand = append(expand, t.filesUnder(d)...)
			continue
		}
		add = append(add, p)
	}
	if len(expand) > 0 {
		again, err := t.ignoredByRunRules(expand)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range expand {
			if !again[p] && !t.addExcluded(p) {
				add = append(add, p)
			}
		}
	}
	sort.Strings(add)
	return slices.Compact(add), drop, nil
}

// filesUnder lists the files and symlinks under directory d of the work
// tree (relative, slash-separated); a nested repository (d itself, or a
// directory under it) is listed as itself, as `git add` records it (a
// gitlink), and not entered.
func (t *taker) filesUnder(d string) []string {
	var out []string
	root := filepath.Join(t.g.root, filepath.FromSlash(d))
	_ = filepath.WalkDir(root, func(full string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() {
			if _, err := os.Lstat(filepath.Join(full, ".git")); err == nil {
				if rel, err := filepath.Rel(t.g.root, full); err == nil {
					out = append(out, filepath.ToSlash(rel))
				}
				return filepath.SkipDir
			}
			return nil
		}
		if e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0 {
			if rel, err := filepath.Rel(t.g.root, full); err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return out
}

// ignoredByRunRules asks `git check-ignore` which of paths the run's rules
// ignore, in a scratch repository (made once per Take) that holds them:
// the first boundary's .gitignore files at their paths, its info/exclude,
// and core.excludesFile as it was.
func (t *taker) ignoredByRunRules(paths []string) (map[string]bool, error) {
	if t.scratch == "" {
		if err := t.makeScratch(); err != nil {
			return nil, err
		}
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	out, _, err := t.g.run(nil, in.Bytes(), "--git-dir="+filepath.Join(t.scratch, "git"), "--work-tree="+filepath.Join(t.scratch, "wt"),
		"-c", "core.excludesFile="+filepath.Join(t.scratch, "excludes"), "check-ignore", "--no-index", "-z", "--stdin")
	if err != nil && exitCode(err) != 1 { // 1: none ignored
		return nil, fmt.Errorf("checking the run's ignore rules: %w", err)
	}
	got := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			got[p] = true
		}
	}
	return got, nil
}

// makeScratch writes the run's ignore rules into a scratch repository.
func (t *taker) makeScratch() error {
	r := t.rules
	dir, err := os.MkdirTemp("", "implloop-rules-")
	if err != nil {
		return fmt.Errorf("ignore rules: %w", err)
	}
	t.scratch = dir
	if _, _, err := t.g.run(nil, nil, "init", "-q", "--bare", filepath.Join(dir, "git")); err != nil {
		return fmt.Errorf("ignore rules: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "git", "info"), 0o755); err != nil {
		return fmt.Errorf("ignore rules: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "git", "info", "exclude"), r.exclude, 0o644); err != nil {
		return fmt.Errorf("ignore rules: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "excludes"), r.excludes, 0o644); err != nil {
		return fmt.Errorf("ignore rules: %w", err)
	}
	wt := filepath.Join(dir, "wt")
	if err := os.MkdirAll(wt, 0o755); err != nil {
		return fmt.Errorf("ignore rules: %w", err)
	}
	out, _, err := t.g.run(t.readEnv, nil, "ls-tree", "-r", "-z", "--full-tree", r.base)
	if err != nil {
		return fmt.Errorf("ignore rules: %w", err)
	}
	var ids, names []string
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" || !isGitignore(name) || !validRepoPath(name) {
			continue
		}
		ids, names = append(ids, f[2]), append(names, name)
	}
	if len(ids) == 0 {
		return nil
	}
	blobs, _, err := t.g.run(t.readEnv, []byte(strings.Join(ids, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return fmt.Errorf("ignore rules: %w", err)
	}
	br := bufio.NewReader(bytes.NewReader(blobs))
	for _, name := range names {
		header, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("ignore rules: reading %s: %w", name, err)
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return fmt.Errorf("ignore rules: reading %s: %q", name, header)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("ignore rules: reading %s: %q", name, header)
		}
		body := make([]byte, n+1) // the content and its newline
		if _, err := io.ReadFull(br, body); err != nil {
			return fmt.Errorf("ignore rules: reading %s: %w", name, err)
		}
		full := filepath.Join(wt, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("ignore rules: %w", err)
		}
		if err := os.WriteFile(full, body[:n], 0o644); err != nil {
			return fmt.Errorf("ignore rules: %w", err)
		}
	}
	return nil
}
