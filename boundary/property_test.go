package boundary

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/rapidcases"
	"pgregory.net/rapid"
)

// Names and contents the generated states draw from: spaces, newlines,
// non-ASCII, quotes, backslashes; CRLF text, binary, empty.
var (
	propDirs  = []string{"", "d", "d/e", "spa ce", "ü", "d/e/f"}
	propNames = []string{"a.txt", "b.md", "c", "sp ace.txt", "new\nline", "ünï.txt", `q"uote`, `back\slash`,
		"x.log", "y.xignored", "z.gignored", "ign-me", "keep.log"}
	propContents = []string{"", "one\n", "two\r\nlines\r\n", "mixed\r\nend\n", "bin\x00ary\r\n", "one\n\n", "#!/bin/sh\necho hi\n", "lone\rcr"}
	propIgnores  = []string{"*.log\n", "ign*\n", "!keep.log\n*.log\n", "e/\n", "*.md\n", ""}
)

// TestTakeMatchesGitStatus: over many generated repository states, the
// snapshot's dirty set is `git status --porcelain=v1 -z` (every ignore
// source, autocrlf, exec bits, symlinks), its worktree hashes are
// `git hash-object`, and its HEAD hashes are HEAD's tree.
//
// 20 cases here (make test's time); scripts/fuzz.sh runs 2,000
// (-rapid.checks=N).
func TestTakeMatchesGitStatus(t *testing.T) {
	defer rapidcases.Default("20")()
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp("", "boundary-prop-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		r := &testRepo{t: rt, dir: dir}
		r.git("init", "-q")
		switch rapid.IntRange(0, 2).Draw(rt, "autocrlf") {
		case 1:
			r.git("config", "core.autocrlf", "true")
		case 2:
			r.git("config", "core.autocrlf", "input")
		}
		r.write(".git/info/exclude", "*.xignored\n")

		pathGen := rapid.Custom(func(t *rapid.T) string {
			return path.Join(rapid.SampledFrom(propDirs).Draw(t, "dir"), rapid.SampledFrom(propNames).Draw(t, "name"))
		})
		// put writes a file or a symlink at p, replacing whatever is there.
		put := func(t *rapid.T, p string) {
			full := filepath.Join(r.dir, filepath.FromSlash(p))
			if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
				return
			}
			os.MkdirAll(filepath.Dir(full), 0o755)
			if conflictsWithFile(r.dir, p) {
				return
			}
			os.Remove(full)
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				os.Symlink(rapid.SampledFrom([]string{"a.txt", "../x", "nowhere", "d/e"}).Draw(t, "target"), full)
			case 1:
				os.WriteFile(full, []byte(rapid.SampledFrom(propContents).Draw(t, "content")), 0o755)
			default:
				os.WriteFile(full, []byte(rapid.SampledFrom(propContents).Draw(t, "content")), 0o644)
			}
		}
		for i, n := 0, rapid.IntRange(1, 10).Draw(rt, "files"); i < n; i++ {
			put(rt, pathGen.Draw(rt, "path"))
		}
		for i, n := 0, rapid.IntRange(0, 3).Draw(rt, "gitignores"); i < n; i++ {
			d := rapid.SampledFrom(propDirs).Draw(rt, "ignore-dir")
			full := filepath.Join(r.dir, filepath.FromSlash(d), ".gitignore")
			os.MkdirAll(filepath.Dir(full), 0o755)
			if !conflictsWithFile(r.dir, path.Join(d, ".gitignore")) {
				os.WriteFile(full, []byte(rapid.SampledFrom(propIgnores).Draw(rt, "ignore")), 0o644)
			}
		}
		if rapid.IntRange(0, 4).Draw(rt, "unborn") > 0 {
			r.git("add", "-A")
			r.git("commit", "-q", "--allow-empty", "-m", "init")
		}
		for i, n := 0, rapid.IntRange(0, 8).Draw(rt, "ops"); i < n; i++ {
			tracked := lsFiles(r)
			p := pathGen.Draw(rt, "op-path")
			if len(tracked) > 0 && rapid.Bool().Draw(rt, "use-tracked") {
				p = rapid.SampledFrom(tracked).Draw(rt, "tracked-path")
			}
			full := filepath.Join(r.dir, filepath.FromSlash(p))
			switch rapid.IntRange(0, 8).Draw(rt, "op") {
			case 0, 1:
				put(rt, p)
			case 2:
				os.Remove(full)
			case 3:
				if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() {
					os.Chmod(full, fi.Mode().Perm()^0o111)
				}
			case 4:
				r.gitErr(nil, "add", "--", p)
			case 5:
				r.gitErr(nil, "rm", "-q", "--cached", "--", p)
			case 6:
				dst := pathGen.Draw(rt, "mv-dst")
				r.gitErr(nil, "mv", "--", p, dst)
			case 7: // staged, clean in the worktree
				put(rt, p)
				r.gitErr(nil, "add", "--", p)
			case 8: // staged, then edited again
				put(rt, p)
				r.gitErr(nil, "add", "--", p)
				put(rt, p)
			}
		}

		snap, err := Take(context.Background(), r.dir)
		if err != nil {
			rt.Fatal(err)
		}
		want := porcelainV1Paths(r)
		got := snap.PathNames()
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			rt.Fatalf("dirty set\n got %q\nwant %q\nstatus:\n%s", got, want, r.git("status", "--porcelain=v2", "-uall"))
		}
		headTree := lsTree(r)
		for _, e := range snap.Paths {
			if hb := headTree[e.Path]; hb != e.Head {
				rt.Errorf("%q: head %+v, HEAD's tree has %+v", e.Path, e.Head, hb)
			}
			if !e.Worktree.Present() {
				if _, err := os.Lstat(filepath.Join(r.dir, filepath.FromSlash(e.Path))); err == nil && e.Status != StatusAdded {
					rt.Errorf("%q: absent in the snapshot but present on disk", e.Path)
				}
				continue
			}
			if want := worktreeID(r, e.Path); e.Worktree.Hash != want {
				rt.Errorf("%q (%s %s): worktree %s, git says %s", e.Path, e.Status, e.XY, e.Worktree.Hash, want)
			}
		}

		// A run's first boundary keeps the user's ignored files: the
		// regular files git status --ignored=matching lists, their raw
		// bytes; the directories it lists are listed only.
		var wantFiles, wantDirs []string
		for _, rec := range strings.Split(r.git("status", "--porcelain=v2", "-z", "-uall", "--ignored=matching"), "\x00") {
			p, ok := strings.CutPrefix(rec, "! ")
			switch {
			case !ok:
			case strings.HasSuffix(p, "/"):
				wantDirs = append(wantDirs, strings.TrimSuffix(p, "/"))
			default:
				if fi, err := os.Lstat(filepath.Join(r.dir, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() && !Excluded(p) {
					wantFiles = append(wantFiles, p)
				}
			}
		}
		sort.Strings(wantFiles)
		sort.Strings(wantDirs)
		kept, err := Take(context.Background(), r.dir, WithRun("prop"), WithKeep(Keep{Ignored: true,
			Limits: KeepLimits{FileSize: DefaultKeepFileSize, RunSize: DefaultKeepRunSize, Files: DefaultKeepFiles}}))
		if err != nil {
			rt.Fatal(err)
		}
		var gotFiles []string
		for _, f := range kept.Ignored.Files {
			gotFiles = append(gotFiles, f.Path)
			if id := strings.TrimSpace(r.git("hash-object", "--no-filters", "--", f.Path)); f.Blob.Hash != id {
				rt.Errorf("ignored %q kept as %s, its bytes are %s", f.Path, f.Blob.Hash, id)
			}
		}
		if strings.Join(gotFiles, "\x00") != strings.Join(wantFiles, "\x00") || strings.Join(kept.Ignored.Dirs, "\x00") != strings.Join(wantDirs, "\x00") {
			rt.Fatalf("ignored files kept %q, dirs %q; git status lists %q, %q", gotFiles, kept.Ignored.Dirs, wantFiles, wantDirs)
		}
	})
}

// conflictsWithFile reports whether a parent of p is a file or symlink.
func conflictsWithFile(root, p string) bool {
	parts := strings.Split(p, "/")
	cur := root
	for _, part := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, part)
		if fi, err := os.Lstat(cur); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

func lsFiles(r *testRepo) []string {
	out, err := r.gitErr(nil, "ls-files", "-z")
	if err != nil {
		return nil
	}
	return strings.FieldsFunc(out, func(c rune) bool { return c == 0 })
}

// porcelainV1Paths is the reference dirty set: every path
// `git status --porcelain=v1 -z --untracked-files=all` names, both sides of a
// rename, implloop's own files left out.
func porcelainV1Paths(r *testRepo) []string {
	out := r.git("status", "--porcelain=v1", "-z", "--untracked-files=all")
	fields := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	set := map[string]bool{}
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "" {
			continue
		}
		xy, p := f[:2], strings.TrimSuffix(f[3:], "/")
		set[p] = true
		if xy[0] == 'R' || xy[0] == 'C' || xy[1] == 'R' || xy[1] == 'C' {
			i++
			if xy[0] == 'R' || xy[1] == 'R' {
				set[fields[i]] = true
			}
		}
	}
	var paths []string
	for p := range set {
		if !Excluded(p) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	return paths
}

// lsTree maps HEAD's paths to their blobs (empty when unborn).
func lsTree(r *testRepo) map[string]Blob {
	out, err := r.gitErr(nil, "ls-tree", "-r", "-z", "HEAD")
	m := map[string]Blob{}
	if err != nil {
		return m
	}
	for _, rec := range strings.Split(out, "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		var mode Mode
		mode.UnmarshalText([]byte(f[0]))
		m[p] = Blob{Hash: f[2], Mode: mode}
	}
	return m
}

// worktreeID is git's blob id for a worktree path: `git hash-object PATH`
// for a file, the hash of the target for a symlink (hash-object follows
// links; git add stores the target).
func worktreeID(r *testRepo, p string) string {
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if err != nil {
		return fmt.Sprintf("(lstat: %v)", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(full)
		return strings.TrimSpace(r.gitIn([]byte(target), "hash-object", "--stdin"))
	}
	return strings.TrimSpace(r.git("hash-object", "--", p))
}
