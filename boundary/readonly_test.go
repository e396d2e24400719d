package boundary

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/rapidcases"
	"pgregory.net/rapid"
)

// TestPropertyStatusSnapshotIsAddAll: over random repository states
// (edits, exec bits, symlinks, directories replaced by files and moved,
// ignore rules, nested repositories, staged changes and renames,
// intent-to-add, conflicts, autocrlf and text=auto with CRLF content,
// BLOCKED.md and .implloop/ committed or not, an excluded plan), the
// read-only snapshot taken from one git status (statusSnapshot) is the
// one `git add -A` into a copy of the index and `git write-tree` make:
// the same tree, dirty set, problems and comparison. And it writes
// nothing: every file under .git keeps its bytes, mode and modification
// time.
//
// 30 cases here (about 8 s); scripts/fuzz.sh runs 2,000
// (-rapid.checks=N).
func TestPropertyStatusSnapshotIsAddAll(t *testing.T) {
	defer rapidcases.Default("30")()
	fast := 0
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp("", "boundary-status-")
		if err != nil {
			rt.Fatal(err)
		}
		if os.Getenv("KEEP") == "" {
			defer os.RemoveAll(dir)
		}
		r := &testRepo{t: rt, dir: dir}
		git := func(args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=1700000000 +0000", "GIT_COMMITTER_DATE=1700000000 +0000")
			cmd.Run()
		}
		git("init", "-q")
		// Line-end conversion, set before the first commit or after it
		// (then blobs with CRLF are in the index).
		crlf := func() {
			switch rapid.IntRange(0, 3).Draw(rt, "crlf") {
			case 1:
				git("config", "core.autocrlf", "true")
			case 2:
				git("config", "core.autocrlf", "input")
			case 3:
				writeUnder(dir, ".gitattributes", "* text=auto\n", 0o644)
			}
		}
		crlfLate := rapid.Bool().Draw(rt, "crlf-late")
		if !crlfLate {
			crlf()
		}
		if rapid.IntRange(0, 3).Draw(rt, "filemode") == 0 {
			git("config", "core.fileMode", "false")
		}
		dirs := []string{"", "d", "d/e", "f", "sp ace", "ü", ".implloop"}
		names := []string{"a.txt", "b.log", "c", "new\nline", "x.tmp", "keep.log", "plan.md", "BLOCKED.md"}
		pathGen := rapid.Custom(func(t *rapid.T) string {
			return path.Join(rapid.SampledFrom(dirs).Draw(t, "dir"), rapid.SampledFrom(names).Draw(t, "name"))
		})
		contents := []string{"", "one\n", "two\r\nlines\r\n", "bin\x00ary\r\n", "ONE\n", "lone\rcr"}
		for i, n := 0, rapid.IntRange(0, 8).Draw(rt, "initial"); i < n; i++ {
			p, c := pathGen.Draw(rt, "path"), rapid.SampledFrom(contents).Draw(rt, "content")
			writeUnder(dir, p, c, 0o644)
		}
		git("add", "-A")
		git("commit", "-q", "--allow-empty", "-m", "init")
		if crlfLate {
			crlf()
		}
		if rapid.Bool().Draw(rt, "branch") {
			// A branch to merge, for conflicts.
			git("checkout", "-q", "-b", "other")
			for i, n := 0, rapid.IntRange(1, 3).Draw(rt, "other-edits"); i < n; i++ {
				p, c := pathGen.Draw(rt, "other-path"), rapid.SampledFrom(contents).Draw(rt, "other-content")
				writeUnder(dir, p, c+"other\n", 0o644)
			}
			git("add", "-A")
			git("commit", "-q", "-m", "other")
			git("checkout", "-q", "-")
		}
		for i, n := 0, rapid.IntRange(1, 10).Draw(rt, "ops"); i < n; i++ {
			p := pathGen.Draw(rt, "op-path")
			if tracked := lsFiles(r); len(tracked) > 0 && rapid.Bool().Draw(rt, "use-tracked") {
				p = rapid.SampledFrom(tracked).Draw(rt, "tracked-path")
			}
			full := filepath.Join(dir, filepath.FromSlash(p))
			switch rapid.IntRange(0, 15).Draw(rt, "op") {
			case 0, 1:
				writeUnder(dir, p, rapid.SampledFrom(contents).Draw(rt, "content"), 0o644)
			case 2:
				writeUnder(dir, p, "#!/bin/sh\n", 0o755)
			case 3:
				if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() {
					os.Chmod(full, fi.Mode().Perm()^0o111)
				}
			case 4:
				target := rapid.SampledFrom([]string{"a.txt", "../d", "nowhere"}).Draw(rt, "target")
				symlinkAt(dir, p, target)
			case 5:
				os.RemoveAll(full)
			case 6: // a directory goes, becomes a file, or moves
				d := rapid.SampledFrom(dirs[1:]).Draw(rt, "op-dir")
				to := rapid.SampledFrom(dirs[1:]).Draw(rt, "to-dir") + "2"
				mangleDir(dir, d, to, rapid.IntRange(0, 2).Draw(rt, "how"))
			case 7:
				rule := rapid.SampledFrom([]string{"*.log\n", "!keep.log\n*.log\n", "e/\n", "d/\n", "*.tmp\n", "a.txt\n", ""}).Draw(rt, "rule")
				writeUnder(dir, path.Join(rapid.SampledFrom(dirs).Draw(rt, "ignore-dir"), ".gitignore"), rule, 0o644)
			case 8: // a nested repository, with a commit or without
				d := rapid.SampledFrom([]string{"nest", "d/nest"}).Draw(rt, "nest")
				writeUnder(dir, path.Join(d, "inner.txt"), rapid.SampledFrom(contents).Draw(rt, "nest-content"), 0o644)
				git("-C", d, "init", "-q")
				if rapid.Bool().Draw(rt, "nest-commit") {
					git("-C", d, "add", "-A")
					git("-C", d, "commit", "-q", "-m", "nested")
				}
			case 9:
				git("add", "--", p)
			case 10:
				git("rm", "-q", "--cached", "-r", "--", p)
			case 11:
				git("mv", "--", p, pathGen.Draw(rt, "mv-dst"))
			case 12:
				git("add", "-N", "--", p)
			case 13:
				git("commit", "-q", "-a", "-m", "step")
			case 14:
				git("merge", "-q", "other")
			case 15: // staged, then edited again
				writeUnder(dir, p, rapid.SampledFrom(contents).Draw(rt, "content"), 0o644)
				git("add", "--", p)
				writeUnder(dir, p, rapid.SampledFrom(contents).Draw(rt, "content"), 0o644)
			}
		}
		var opts []Option
		if rapid.Bool().Draw(rt, "exclude-plan") {
			opts = append(opts, WithExclude("plan.md"))
		}
		compare := strings.TrimSpace(r.git("rev-parse", "HEAD^{tree}"))
		opts = append(opts, WithCompare(compare))

		before := gitDirState(rt, dir)
		got, err := Take(context.Background(), dir, opts...)
		if err != nil {
			rt.Fatal(err)
		}
		if after := gitDirState(rt, dir); !reflect.DeepEqual(before, after) {
			rt.Fatalf("the read-only snapshot wrote to .git:\n%s", stateDiff(before, after))
		}
		if !got.fast {
			return // the long way, as before
		}
		fast++
		// The reference: what a boundary records (git add -A into an
		// index seeded from the real one, the repository's objects in
		// sight) in a copy of the repository, modification times kept.
		cp := dir + "-copy"
		defer os.RemoveAll(cp)
		if out, err := exec.Command("cp", "-a", dir, cp).CombinedOutput(); err != nil {
			rt.Fatalf("cp -a: %v: %s", err, out)
		}
		want, err := Take(context.Background(), cp, append(opts, WithRun("ref"), withFullAdd())...)
		if err != nil {
			rt.Fatal(err)
		}
		status := func() string { return r.git("status", "--porcelain=v2", "-uall") }
		if got.Tree != want.Tree {
			rt.Fatalf("tree %s, git add -A makes %s\n%s\nstatus:\n%s", got.Tree, want.Tree,
				lsTreeDiff(&testRepo{t: rt, dir: cp}, want.Tree, got.Tree, r), status())
		}
		if !reflect.DeepEqual(got.Paths, want.Paths) {
			rt.Fatalf("dirty set\n got %+v\nwant %+v\nstatus:\n%s", got.Paths, want.Paths, status())
		}
		if !reflect.DeepEqual(got.Problems, want.Problems) {
			rt.Fatalf("problems %q, git add -A finds %q", got.Problems, want.Problems)
		}
		if !reflect.DeepEqual(got.Since, want.Since) {
			rt.Fatalf("since HEAD's tree %+v, git add -A's %+v", got.Since, want.Since)
		}
		if len(got.Nested) != len(want.Nested) {
			rt.Fatalf("nested %+v, git add -A's %+v", got.Nested, want.Nested)
		}
		for i := range got.Nested {
			if g, w := got.Nested[i], want.Nested[i]; g.Path != w.Path || !reflect.DeepEqual(g.Paths, w.Paths) {
				rt.Fatalf("nested %+v, git add -A's %+v", g, w)
			}
		}
	})
	t.Logf("%d snapshots from git status alone", fast)
}

// gitDirState is every file under dir/.git: its size, mode, modification
// time and bytes' length (a write changes one of them).
func gitDirState(t tb, dir string) map[string]string {
	out := map[string]string{}
	root := filepath.Join(dir, ".git")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func stateDiff(a, b map[string]string) string {
	var lines []string
	for k, v := range a {
		if b[k] != v {
			lines = append(lines, fmt.Sprintf("%s: %s -> %s", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: new %s", k, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
