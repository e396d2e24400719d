package boundary

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/rapidcases"
	"github.com/implloop/implloop/treewatch"
	"pgregory.net/rapid"
)

// TestPropertyWatchedBoundaryIsFullScan: two identical repositories go
// through the same random steps (files written, chmodded, made symlinks,
// renamed, removed; directories removed, replaced by files, moved and swapped;
// ignore rules; ignored files force-added; nested repositories; staging,
// commits, resets; and runs ending, with changes made while no watch was
// held, then resumed). One takes its boundaries from a file watcher's changed paths
// (WithChanged), the other looks at the whole tree: every boundary has
// the same tree, dirty set and kept-ignored paths.
//
// 15 cases here (make test's time); scripts/fuzz.sh runs 2,000
// (-rapid.checks=N).
func TestPropertyWatchedBoundaryIsFullScan(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("treewatch watches with inotify only")
	}
	defer rapidcases.Default("15")()
	watched, taken := 0, 0
	missed := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		repos, each, fs := twinRepos(rt, "boundary-watched-", "watched", "full")
		dirs := []string{"", "d", "d/e", "f", "sp ace", "ü", "d/e/g"}
		names := []string{"a.txt", "b.log", "c", "new\nline", "x.tmp", "keep.log"}
		pathGen := rapid.Custom(func(t *rapid.T) string {
			return path.Join(rapid.SampledFrom(dirs).Draw(t, "dir"), rapid.SampledFrom(names).Draw(t, "name"))
		})
		contents := []string{"", "one\n", "two\r\nlines\r\n", "bin\x00ary", "ONE\n"}
		for i, n := 0, rapid.IntRange(0, 8).Draw(rt, "initial"); i < n; i++ {
			p, c := pathGen.Draw(rt, "path"), rapid.SampledFrom(contents).Draw(rt, "content")
			fs(func(root string) { writeUnder(root, p, c, 0o644) })
		}
		if rapid.Bool().Draw(rt, "ignore-dir") {
			fs(func(root string) {
				writeUnder(root, ".gitignore", "*.tmp\nbuild/\n", 0o644)
				writeUnder(root, "build/out/o.bin", "x", 0o644)
			})
		}
		each("add", "-A")
		each("commit", "-q", "--allow-empty", "-m", "init")

		cookies := filepath.Join(filepath.Dir(repos[0].dir), "cookies")
		var w *treewatch.Watcher
		startWatch := func() {
			var err error
			if w, err = treewatch.Start(repos[0].dir, treewatch.Options{CookieDir: cookies}); err != nil {
				rt.Fatal(err)
			}
		}
		startWatch()
		defer func() { w.Close() }()

		run := 0
		prev := make([]Snapshot, 2)
		keep := WithKeep(Keep{Ignored: true, Limits: KeepLimits{FileSize: DefaultKeepFileSize, RunSize: DefaultKeepRunSize, Files: DefaultKeepFiles}})
		boundaryOf := func(step int) {
			c := w.Sync(context.Background())
			var snaps [2]Snapshot
			for i, r := range repos {
				opts := []Option{WithRun(fmt.Sprint("run", run)), WithLabel(fmt.Sprint("step ", step)), keep}
				if prev[i].Commit != "" {
					opts = append(opts, WithPrev(prev[i]))
				}
				if i == 0 && c.Complete {
					opts = append(opts, WithChanged(c.Paths, c.Nested, c.Unwatched))
				}
				s, err := Take(context.Background(), r.dir, opts...)
				if err != nil {
					rt.Fatalf("step %d, %s: %v", step, filepath.Base(r.dir), err)
				}
				snaps[i], prev[i] = s, s
			}
			taken++
			used, why := snaps[0].WatchUsed()
			switch {
			case used:
				watched++
			case !c.Complete:
				missed["watch: "+c.Reason]++
			default:
				missed[why]++
			}
			if snaps[0].Tree != snaps[1].Tree {
				rt.Fatalf("step %d (watched %v, changed %q): tree %s, a full scan makes %s\n%s", step, used, c.Paths,
					snaps[0].Tree, snaps[1].Tree, lsTreeDiff(repos[1], snaps[1].Tree, snaps[0].Tree, repos[0]))
			}
			if !reflect.DeepEqual(snaps[0].Paths, snaps[1].Paths) {
				rt.Fatalf("step %d: dirty set\n%+v\na full scan's\n%+v", step, snaps[0].Paths, snaps[1].Paths)
			}
			if a, b := strings.Join(snaps[0].KeptIgnored, "\x00"), strings.Join(snaps[1].KeptIgnored, "\x00"); a != b {
				rt.Fatalf("step %d: kept ignored %q, a full scan keeps %q", step, a, b)
			}
			if snaps[0].Ignored != nil && snaps[0].Ignored.Dirs != nil {
				w.Skip(snaps[0].Ignored.Dirs)
			}
			w.Unskip(snaps[0].WatchUnskip())
		}
		boundaryOf(0)
		for step, steps := 1, rapid.IntRange(1, 4).Draw(rt, "steps"); step <= steps; step++ {
			for i, n := 0, rapid.IntRange(1, 6).Draw(rt, "ops"); i < n; i++ {
				p := pathGen.Draw(rt, "op-path")
				switch rapid.IntRange(0, 16).Draw(rt, "op") {
				case 0, 1, 2:
					c := rapid.SampledFrom(contents).Draw(rt, "content")
					fs(func(root string) { writeUnder(root, p, c, 0o644) })
				case 3:
					fs(func(root string) {
						full := filepath.Join(root, filepath.FromSlash(p))
						if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() {
							os.Chmod(full, fi.Mode().Perm()^0o111)
						}
					})
				case 4:
					target := rapid.SampledFrom([]string{"a.txt", "../d", "nowhere"}).Draw(rt, "target")
					fs(func(root string) { symlinkAt(root, p, target) })
				case 5:
					fs(func(root string) { os.RemoveAll(filepath.Join(root, filepath.FromSlash(p))) })
				case 6: // a directory goes, becomes a file, moves, or two swap
					d := rapid.SampledFrom(dirs[1:]).Draw(rt, "op-dir")
					to := rapid.SampledFrom(dirs[1:]).Draw(rt, "to-dir")
					how := rapid.IntRange(0, 3).Draw(rt, "how")
					fs(func(root string) {
						full, dst := filepath.Join(root, filepath.FromSlash(d)), filepath.Join(root, filepath.FromSlash(to))
						switch how {
						case 0, 1, 2:
							mangleDir(root, d, to+"2", how)
						case 3:
							tmp := filepath.Join(root, "swap-tmp")
							if os.Rename(full, tmp) == nil {
								if os.Rename(dst, full) != nil {
									os.Rename(tmp, full)
									return
								}
								os.Rename(tmp, dst)
							}
						}
					})
				case 7:
					rule := rapid.SampledFrom([]string{"*.log\n", "!keep.log\n*.log\n", "e/\n", "*.tmp\n", ""}).Draw(rt, "rule")
					d := rapid.SampledFrom(dirs).Draw(rt, "ignore-dir")
					fs(func(root string) { writeUnder(root, path.Join(d, ".gitignore"), rule, 0o644) })
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
					each("commit", "-q", "-a", "-m", "step")
				case 11:
					each("reset", "-q", "--hard")
				case 12: // an ignored file, in an ignored directory or not
					q := rapid.SampledFrom([]string{"build/out/o2.bin", "d/x.tmp", "build/n.bin"}).Draw(rt, "ignored")
					fs(func(root string) { writeUnder(root, q, "ignored\n", 0o644) })
				case 13: // the run ends; changes while no watch is held; a resume
					w.Close()
					c := rapid.SampledFrom(contents).Draw(rt, "between")
					fs(func(root string) { writeUnder(root, p, c, 0o644) })
					run++
					startWatch()
				case 14: // a commit inside a nested repository
					fs(func(root string) { writeUnder(root, "nest/inner.txt", "more\n", 0o644) })
					each("-C", "nest", "commit", "-q", "-a", "-m", "more")
				case 15: // an ignored file force-added to the index (in a directory the watch may skip)
					q := rapid.SampledFrom([]string{"build/out/o2.bin", "d/x.tmp", "build/n.bin"}).Draw(rt, "forced")
					c := rapid.SampledFrom(contents).Draw(rt, "forced-content")
					fs(func(root string) { writeUnder(root, q, c, 0o644) })
					each("add", "-f", "--", q)
				case 16: // a file renamed (over another, or into a new directory)
					to := pathGen.Draw(rt, "rename-to")
					fs(func(root string) {
						dst := filepath.Join(root, filepath.FromSlash(to))
						if os.MkdirAll(filepath.Dir(dst), 0o755) == nil {
							os.Rename(filepath.Join(root, filepath.FromSlash(p)), dst)
						}
					})
				}
			}
			boundaryOf(step)
		}
	})
	t.Logf("%d of %d boundaries taken from the watcher's paths; the others: %v", watched, taken, missed)
}

// TestWatchedBoundaryUnwatchedTracked: a file the real index tracks in a
// directory the watch skips (wholly ignored at the run's first boundary,
// then force-added) would change without an event: a boundary is not
// taken from the watcher's paths while the tree holds it, and says to
// watch the directory again; after an interval with the new watch, the
// directory's changes are seen.
func TestWatchedBoundaryUnwatchedTracked(t *testing.T) {
	r := newTestRepo(t)
	r.write(".gitignore", "build/\n")
	r.write("a.txt", "a\n")
	r.write("build/o.bin", "one\n")
	r.commitAll("init")
	w, err := treewatch.Start(r.dir, treewatch.Options{CookieDir: filepath.Join(t.TempDir(), "cookies")})
	if err != nil {
		t.Skip("no watch:", err)
	}
	defer w.Close()
	ctx := context.Background()
	keep := WithKeep(Keep{Ignored: true, Limits: KeepLimits{FileSize: DefaultKeepFileSize, RunSize: DefaultKeepRunSize, Files: DefaultKeepFiles}})
	var prev Snapshot
	take := func() Snapshot {
		t.Helper()
		c := w.Sync(ctx)
		opts := []Option{WithRun("watched"), keep}
		if prev.Commit != "" {
			opts = append(opts, WithPrev(prev))
		}
		if c.Complete {
			opts = append(opts, WithChanged(c.Paths, c.Nested, c.Unwatched))
		}
		s, err := Take(ctx, r.dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		prev = s
		return s
	}
	s := take()
	if s.Ignored == nil || !reflect.DeepEqual(s.Ignored.Dirs, []string{"build"}) {
		t.Fatalf("ignored %+v, want build/", s.Ignored)
	}
	w.Skip(s.Ignored.Dirs)
	r.git("add", "-f", "build/o.bin")
	take()
	r.write("a.txt", "a2\n")
	s = take()
	if s.watched || !reflect.DeepEqual(s.WatchUnskip(), []string{"build"}) {
		t.Fatalf("a boundary from the watch, with a path it skips (unskip %q)", s.WatchUnskip())
	}
	w.Unskip(s.WatchUnskip())
	if c := w.Sync(ctx); c.Complete {
		t.Fatalf("the interval build was watched again in is whole: %+v", c)
	}
	r.write("a.txt", "a3\n")
	if s := take(); !s.watched {
		t.Fatalf("a.txt edited: not from the watch (%s)", s.watchMiss)
	}
	r.write("build/o.bin", "two\n")
	if s = take(); !s.watched {
		t.Fatalf("build/o.bin edited: not from the watch (%s)", s.watchMiss)
	}
	if got := strings.TrimSpace(r.git("rev-parse", s.Tree+":build/o.bin")); got != r.hashObject("build/o.bin") {
		t.Fatalf("build/o.bin in the tree is %s, want the file's %s", got, r.hashObject("build/o.bin"))
	}
}

// TestWatchedCatchUpKeepsUntrackedCacheRacy: git's untracked cache trusts
// a directory whose stat data is older than the index file. A boundary
// from the watcher's paths leaves the private index to catch up later
// (the lag), and that write must not make the cache trust a directory
// changed in the second its data was recorded in: the file made there
// while no watch looked is in the next full boundary. The clock is set
// back by hand, so the second is the same whatever the machine's speed.
func TestWatchedCatchUpKeepsUntrackedCacheRacy(t *testing.T) {
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("init")
	past := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	root := r.dir
	setBack := func(p string) {
		t.Helper()
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	setBack(root)
	private := filepath.Join(r.dir, ".git", "implloop", "boundary-index")
	ctx := context.Background()
	var prev Snapshot
	take := func(opts ...Option) Snapshot {
		t.Helper()
		opts = append(opts, WithRun("racy"))
		if prev.Commit != "" {
			opts = append(opts, WithPrev(prev))
		}
		s, err := Take(ctx, r.dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		prev = s
		return s
	}
	take()
	take() // the untracked cache is filled, with the root as it is now
	setBack(private)
	r.write("d/x.txt", "x\n") // seen by the watch
	setBack(root)
	if s := take(WithChanged([]string{"d"}, nil, nil)); !s.watched {
		t.Fatalf("not from the watcher's paths: %s", s.watchMiss)
	}
	r.write("y.txt", "y\n") // while no watch was held
	setBack(root)
	s := take()
	if s.watched {
		t.Fatal("a boundary from the watcher's paths")
	}
	for _, p := range []string{"d/x.txt", "y.txt"} {
		if e, ok := s.Lookup(p); !ok || !e.Worktree.Present() {
			t.Errorf("%s: not in the snapshot's dirty set (%+v)", p, s.Paths)
		}
	}
}

// A boundary from a watcher's paths reads the previous tree in process
// where its objects are loose (no git), and through git cat-file where
// they are not: packed by an agent's git gc; or a loose file an agent
// damaged, which it does not read (the body does not hash to the name)
// and leaves to git. Its tree is the one the whole work tree gives.
func TestChangedReadsLooseTrees(t *testing.T) {
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.write("d/e/b.txt", "b\n")
	r.commitAll("init")
	log := countGit(t)
	ctx := context.Background()
	prev, err := Take(ctx, r.dir, WithRun("loose"))
	if err != nil {
		t.Fatal(err)
	}
	step := func(name string, wantCatFile int, edit func()) {
		t.Helper()
		edit()
		calls(t, log, "")
		s, err := Take(ctx, r.dir, WithRun("loose"), WithPrev(prev), WithChanged([]string{"d/e/b.txt"}, nil, nil))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := calls(t, log, "cat-file --batch"); len(got) != wantCatFile {
			t.Errorf("%s: cat-file started %d times, want %d", name, len(got), wantCatFile)
		}
		full := r.take()
		if s.Tree != full.Tree {
			t.Errorf("%s: tree %s, the whole work tree's %s", name, s.Tree, full.Tree)
		}
		prev = s
	}
	step("loose", 0, func() { r.write("d/e/b.txt", "b, edited\n") })
	step("packed", 1, func() {
		r.git("gc", "-q", "--prune=now")
		r.write("d/e/b.txt", "b, edited again\n")
	})
	step("loose again", 0, func() { r.write("d/e/b.txt", "b, once more\n") })
	// The previous tree's subdirectory d, damaged (another object's
	// file under its name).
	sub := strings.TrimSpace(r.git("rev-parse", prev.Tree+":d"))
	obj := filepath.Join(r.dir, ".git", "objects", sub[:2], sub[2:])
	if _, err := os.Stat(obj); err != nil {
		t.Fatalf("d's tree %s is not loose: %v", sub, err)
	}
	os.Remove(obj)
	data, err := os.ReadFile(filepath.Join(r.dir, ".git", "objects", prev.Tree[:2], prev.Tree[2:]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obj, data, 0o444); err != nil {
		t.Fatal(err)
	}
	r.write("d/e/b.txt", "b, after the damage\n")
	calls(t, log, "")
	if _, err := Take(ctx, r.dir, WithRun("loose"), WithPrev(prev), WithChanged([]string{"d/e/b.txt"}, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, log, "cat-file --batch"); len(got) != 1 {
		t.Errorf("damaged: cat-file started %d times, want 1 (what git reads stands)", len(got))
	}
}
