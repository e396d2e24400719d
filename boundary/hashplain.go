package boundary

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/internal/gitobj"
)

// hashPlain hashes the work-tree files at paths (relative) in process,
// where `git add` would store each one's bytes as they are: ok is false
// (and nothing is known) unless git would, and then the caller asks git.
// That is so when nothing can filter or convert a file on its way in:
// no gitattributes anywhere git reads them for these paths (a
// .gitattributes in a directory on the way, info/attributes, the global
// and system files, none in git's configuration or environment: attr
// mentioned nowhere), no end-of-line conversion (core.autocrlf,
// core.eol, core.safecrlf mentioned nowhere), core.fileMode true (the
// mode is the file's: executable by its owner or not, as git reads it,
// whatever the index had), each path a regular file (not a link, not a
// repository) with a plain name (no .git-like component git would
// refuse), and the objects written where git would (gitobj).
func (t *taker) hashPlain(paths []string) (map[string]Blob, bool) {
	g := t.g
	w := g.objects(nil)
	if len(paths) == 0 || !w.InProcess() || !plainAdd(g) {
		return nil, false
	}
	seen := map[string]bool{}
	full := make([]string, len(paths))
	modes := make([]Mode, len(paths))
	for i, p := range paths {
		if !plainPath(p) {
			return nil, false
		}
		for d := parentDir(p); ; d = parentDir(d) {
			if !seen[d] {
				seen[d] = true
				if !absentFile(filepath.Join(g.root, filepath.FromSlash(d), ".gitattributes")) {
					return nil, false
				}
			}
			if d == "" {
				break
			}
		}
		full[i] = filepath.Join(g.root, filepath.FromSlash(p))
		fi, err := os.Lstat(full[i])
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > gitobj.MaxFileBlob {
			return nil, false
		}
		modes[i] = ModeRegular
		if fi.Mode()&0o100 != 0 {
			modes[i] = ModeExecutable
		}
	}
	ids, err := w.BlobFiles(g.ctx, full)
	if err != nil {
		return nil, false
	}
	out := make(map[string]Blob, len(paths))
	for i, p := range paths {
		out[p] = Blob{Hash: ids[i], Mode: modes[i]}
	}
	return out, true
}

// plainKeys are the configuration hashPlain refuses to go by: anything
// of gitattributes (core.attributesFile, attr.tree), of end-of-line
// conversion, core.fileMode but true (git init writes it), and what
// makes a path name another index entry (core.ignoreCase,
// core.precomposeUnicode: git init writes false where they do not), and
// a sparse checkout (core.sparseCheckout), core.symlinks but true.
var plainKeys = []gitobj.Key{
	{Name: "attr"},
	{Name: "autocrlf"},
	{Name: "eol"},
	{Name: "safecrlf"},
	{Name: "filemode", Harmless: []string{"true"}},
	{Name: "ignorecase", Harmless: []string{"false"}},
	{Name: "precomposeunicode", Harmless: []string{"false"}},
	// A sparse checkout: git add refuses a path outside the cone, whose
	// directory on disk lacks the tracked files git keeps there
	// (skip-worktree): the watcher's way must give up, as it did when git
	// add was asked.
	{Name: "sparsecheckout", Harmless: []string{"false"}},
	// core.symlinks false: a link is checked out as a plain file holding
	// its target, and git add keeps the index's link mode for it.
	{Name: "symlinks", Harmless: []string{"true"}},
}

// plainAdd reports whether git's configuration, environment and
// repository-wide attribute files leave `git add` storing a regular
// file's bytes as they are (hashPlain).
func plainAdd(g *gitRepo) bool {
	for _, k := range []string{"GIT_ATTR_SOURCE", "GIT_ATTR_NOSYSTEM", "GIT_INDEX_FILE", "GIT_WORK_TREE"} {
		if _, ok := os.LookupEnv(k); ok {
			return false
		}
	}
	if _, mentioned := gitobj.ConfigMentions(gitobj.Repo{Dir: g.root, GitDir: g.gitDir, CommonDir: g.commonDir}, plainKeys...); mentioned {
		return false
	}
	files := []string{filepath.Join(g.commonDir, "info", "attributes"), "/etc/gitattributes"}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, "git", "attributes"))
	}
	if h := os.Getenv("HOME"); h != "" {
		files = append(files, filepath.Join(h, ".config", "git", "attributes"))
	}
	if p, err := exec.LookPath("git"); err == nil {
		// The prefix of git as found on PATH and of the file it links to
		// (Homebrew's /opt/homebrew/bin/git names its Cellar's, while
		// its system files are in /opt/homebrew/etc), as for the system
		// configuration (gitobj).
		cands := []string{p}
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			cands = append(cands, r)
		}
		for _, c := range cands {
			if prefix := filepath.Dir(filepath.Dir(c)); prefix != "/usr" {
				files = append(files, filepath.Join(prefix, "etc", "gitattributes"))
			}
		}
	}
	for _, f := range files {
		if !absentFile(f) {
			return false
		}
	}
	return true
}

// absentFile reports whether nothing is at p (not even a directory).
func absentFile(p string) bool {
	_, err := os.Lstat(p)
	return os.IsNotExist(err) || isNotDirErr(err)
}

// plainPath reports whether p is a name git add takes as it is: plain
// characters, no empty, "." or ".." component, none that starts like
// ".git" in any case (git refuses those, and NTFS and HFS variants of
// them).
func plainPath(p string) bool {
	if p == "" {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || strings.HasPrefix(strings.ToLower(c), ".git") || strings.HasPrefix(strings.ToLower(c), "git~") {
			return false
		}
		for _, r := range c {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-+@,=", r)) {
				return false
			}
		}
		if strings.HasSuffix(c, ".") {
			return false // NTFS drops a trailing dot: git is careful with those
		}
	}
	return true
}
