package boundary

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/rapidcases"
	"pgregory.net/rapid"
)

// withFullAdd makes Take bring its index up to date with `git add -A`
// alone, as it did before addChanged: the reference addChanged is held to.
func withFullAdd() Option { return func(o *options) { o.fullAdd = true } }

func TestStatusChanged(t *testing.T) {
	a, z := strings.Repeat("a", 40), strings.Repeat("0", 40)
	in := "1 M. N... 100644 100644 100644 " + a + " " + a + " staged only\x00" +
		"1 .M N... 100644 100644 100644 " + a + " " + a + " dir/with space\x00" +
		"1 MD N... 100644 100644 000000 " + a + " " + a + " gone\x00" +
		"2 R. N... 100644 100644 100644 " + a + " " + a + " R100 new\x00old\x00" +
		"2 RM N... 100644 100644 100644 " + a + " " + a + " R90 new2\x00old2\x00" +
		"u UU N... 100644 100644 100644 100644 " + a + " " + a + " " + a + " conflict\x00" +
		"1 .M SC.. 160000 160000 160000 " + a + " " + a + " sub\x00" +
		"1 .A N... 000000 000000 100644 " + z + " " + z + " intent\x00" +
		"? bad\xffname\nline\x00" +
		"? nested/\x00" +
		"! ignored\x00" +
		"! build/\x00"
	got, untracked, ignored, err := statusLists([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ignored, "|") != "ignored|build/" {
		t.Errorf("ignored: got %q", ignored)
	}
	if strings.Join(untracked, "|") != "bad\xffname\nline|nested" {
		t.Errorf("untracked: got %q", untracked)
	}
	want := []string{"dir/with space", "gone", "new2", "old2", "conflict", "sub", "intent", "bad\xffname\nline", "nested"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for _, bad := range []string{"x\x00", "1 M. N... 100644\x00", "? \x00", "?\x00", "2 R. N... 100644 100644 100644 " + a + " " + a + " R100 new\x00",
		"1 .M N... 100644 100644 100644 " + a + " " + a + " p", "\x00", "1 M N... 100644 100644 100644 " + a + " " + a + " p\x00"} {
		if _, _, _, err := statusLists([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzStatusChanged: git status output is read without panicking, and
// every path it returns is non-empty.
func FuzzStatusChanged(f *testing.F) {
	a := strings.Repeat("a", 40)
	f.Add([]byte("1 .M N... 100644 100644 100644 " + a + " " + a + " p\x00"))
	f.Add([]byte("2 RM N... 100644 100644 100644 " + a + " " + a + " R90 q\x00p\x00"))
	f.Add([]byte("u UU N... 100644 100644 100644 100644 " + a + " " + a + " " + a + " c\x00? n/\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		paths, _, _, err := statusLists(data)
		if err != nil {
			return
		}
		for _, p := range paths {
			if p == "" {
				t.Fatalf("an empty path from %q", data)
			}
		}
	})
}

// TestPropertyAddChangedIsAddAll: over random sequences of work-tree
// changes between boundaries (files, symlinks, exec bits, files that
// become directories and back, renamed directories, ignore rules coming
// and going, nested repositories, staging and commits), a boundary brought
// up to date by addChanged (git status on the private index, its
// untracked cache, git update-index) has the tree and dirty set of one
// brought up to date by `git add -A`. Two identical repositories take the
// same steps, one boundary each way.
//
// 20 cases here (make test's time); scripts/fuzz.sh runs 1,000
// (-rapid.checks=N).
func TestPropertyAddChangedIsAddAll(t *testing.T) {
	defer rapidcases.Default("20")()
	rapid.Check(t, func(rt *rapid.T) {
		repos, each, fs := twinRepos(rt, "boundary-addchanged-", "fast", "full")
		dirs := []string{"", "d", "d/e", "f", "sp ace", "ü"}
		names := []string{"a.txt", "b.log", "c", "new\nline", "x.tmp", "keep.log"}
		pathGen := rapid.Custom(func(t *rapid.T) string {
			return path.Join(rapid.SampledFrom(dirs).Draw(t, "dir"), rapid.SampledFrom(names).Draw(t, "name"))
		})
		contents := []string{"", "one\n", "two\r\nlines\r\n", "bin\x00ary", "ONE\n"}
		for i, n := 0, rapid.IntRange(0, 6).Draw(rt, "initial"); i < n; i++ {
			p, c := pathGen.Draw(rt, "path"), rapid.SampledFrom(contents).Draw(rt, "content")
			fs(func(root string) { writeUnder(root, p, c, 0o644) })
		}
		each("add", "-A")
		each("commit", "-q", "--allow-empty", "-m", "init")

		prev := make([]Snapshot, 2)
		for step, steps := 0, rapid.IntRange(1, 3).Draw(rt, "steps"); step < steps; step++ {
			for i, n := 0, rapid.IntRange(1, 6).Draw(rt, "ops"); i < n; i++ {
				p := pathGen.Draw(rt, "op-path")
				switch rapid.IntRange(0, 12).Draw(rt, "op") {
				case 0, 1:
					c := rapid.SampledFrom(contents).Draw(rt, "content")
					fs(func(root string) { writeUnder(root, p, c, 0o644) })
				case 2:
					fs(func(root string) { writeUnder(root, p, "#!/bin/sh\n", 0o755) })
				case 3:
					target := rapid.SampledFrom([]string{"a.txt", "../d", "nowhere"}).Draw(rt, "target")
					fs(func(root string) { symlinkAt(root, p, target) })
				case 4:
					fs(func(root string) { os.RemoveAll(filepath.Join(root, filepath.FromSlash(p))) })
				case 5: // a directory goes, or becomes a file, or moves
					d := rapid.SampledFrom(dirs[1:]).Draw(rt, "op-dir")
					to := rapid.SampledFrom(dirs[1:]).Draw(rt, "to-dir") + "2"
					how := rapid.IntRange(0, 2).Draw(rt, "how")
					fs(func(root string) { mangleDir(root, d, to, how) })
				case 6:
					rule := rapid.SampledFrom([]string{"*.log\n", "!keep.log\n*.log\n", "e/\n", "d/\n", "*.tmp\n", "a.txt\n", ""}).Draw(rt, "rule")
					d := rapid.SampledFrom(dirs).Draw(rt, "ignore-dir")
					fs(func(root string) { writeUnder(root, path.Join(d, ".gitignore"), rule, 0o644) })
				case 7:
					rule := rapid.SampledFrom([]string{"*.txt\n", "f/\n", ""}).Draw(rt, "exclude")
					fs(func(root string) { os.WriteFile(filepath.Join(root, ".git", "info", "exclude"), []byte(rule), 0o644) })
				case 8: // a nested repository with a commit
					d := rapid.SampledFrom([]string{"nest", "d/nest"}).Draw(rt, "nest")
					c := rapid.SampledFrom(contents).Draw(rt, "nest-content")
					fs(func(root string) { writeUnder(root, path.Join(d, "inner.txt"), c, 0o644) })
					for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "nested"}} {
						each(append([]string{"-C", d}, args...)...)
					}
				case 9:
					each("add", "--", p)
				case 10:
					each("rm", "-q", "--cached", "-r", "--", p)
				case 11:
					each("commit", "-q", "-a", "-m", "step")
				case 12:
					each("reset", "-q", "--hard")
				}
			}
			var snaps [2]Snapshot
			for i, r := range repos {
				opts := []Option{WithRun("prop"), WithLabel(fmt.Sprint("step ", step))}
				if prev[i].Commit != "" {
					opts = append(opts, WithPrev(prev[i]))
				}
				if i == 1 {
					opts = append(opts, withFullAdd())
				}
				s, err := Take(context.Background(), r.dir, opts...)
				if err != nil {
					rt.Fatalf("step %d, %s: %v", step, filepath.Base(r.dir), err)
				}
				snaps[i], prev[i] = s, s
			}
			if snaps[0].Tree != snaps[1].Tree {
				rt.Fatalf("step %d: tree %s, git add -A makes %s\n%s", step, snaps[0].Tree, snaps[1].Tree,
					lsTreeDiff(repos[1], snaps[1].Tree, snaps[0].Tree, repos[0]))
			}
			if a, b := strings.Join(snaps[0].PathNames(), "\x00"), strings.Join(snaps[1].PathNames(), "\x00"); a != b {
				rt.Fatalf("step %d: dirty set %q, git add -A gives %q", step, a, b)
			}
			if a, b := strings.Join(snaps[0].KeptIgnored, "\x00"), strings.Join(snaps[1].KeptIgnored, "\x00"); a != b {
				rt.Fatalf("step %d: kept ignored %q, git add -A keeps %q", step, a, b)
			}
		}
	})
}

// symlinkAt puts a symbolic link to target at p under root, in place of
// whatever was there.
func symlinkAt(root, p, target string) {
	full := filepath.Join(root, filepath.FromSlash(p))
	if os.MkdirAll(filepath.Dir(full), 0o755) == nil && os.RemoveAll(full) == nil {
		os.Symlink(target, full)
	}
}

// mangleDir makes directory d under root go (how 0), become a file (1),
// or move to dst (2), as a careless user or an agent would.
func mangleDir(root, d, dst string, how int) {
	full := filepath.Join(root, filepath.FromSlash(d))
	switch how {
	case 0:
		os.RemoveAll(full)
	case 1:
		if os.RemoveAll(full) == nil {
			os.WriteFile(full, []byte("now a file\n"), 0o644)
		}
	case 2:
		dst = filepath.Join(root, filepath.FromSlash(dst))
		os.MkdirAll(filepath.Dir(dst), 0o755)
		os.RemoveAll(dst)
		os.Rename(full, dst)
	}
}

// writeUnder writes a file at p under root, making its directories;
// a file in the way of a directory, or a directory in the way of the
// file, leaves things as they are.
func writeUnder(root, p, content string, perm os.FileMode) {
	full := filepath.Join(root, filepath.FromSlash(p))
	if os.MkdirAll(filepath.Dir(full), 0o755) != nil {
		return
	}
	if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
		return
	}
	os.Remove(full)
	if os.WriteFile(full, []byte(content), perm) == nil {
		os.Chmod(full, perm)
	}
}

// lsTreeDiff lists how two trees of two repositories differ, for a failure
// message.
func lsTreeDiff(a *testRepo, treeA, treeB string, b *testRepo) string {
	var out bytes.Buffer
	for _, x := range []struct {
		r    *testRepo
		tree string
	}{{a, treeA}, {b, treeB}} {
		ls, _ := x.r.gitErr(nil, "ls-tree", "-r", x.tree)
		fmt.Fprintf(&out, "%s:\n%s", filepath.Base(x.r.dir), ls)
	}
	return out.String()
}

// twinRepos makes two empty repositories, a and b, under a temporary
// directory removed when rt ends, for a property that takes the same steps
// in both: each runs git in both with fixed dates (so that their commits,
// and nested repositories' gitlinks, are the same), fs applies one
// file-system change to both.
func twinRepos(rt *rapid.T, prefix, a, b string) (repos []*testRepo, each func(args ...string), fs func(f func(root string))) {
	base, err := os.MkdirTemp("", prefix)
	if err != nil {
		rt.Fatal(err)
	}
	rt.Cleanup(func() { os.RemoveAll(base) })
	repos = []*testRepo{{t: rt, dir: filepath.Join(base, a)}, {t: rt, dir: filepath.Join(base, b)}}
	each = func(args ...string) {
		for _, r := range repos {
			cmd := exec.Command("git", args...)
			cmd.Dir = r.dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=1700000000 +0000", "GIT_COMMITTER_DATE=1700000000 +0000")
			cmd.Run()
		}
	}
	fs = func(f func(root string)) {
		for _, r := range repos {
			f(r.dir)
		}
	}
	for _, r := range repos {
		os.MkdirAll(r.dir, 0o755)
	}
	each("init", "-q")
	return repos, each, fs
}
