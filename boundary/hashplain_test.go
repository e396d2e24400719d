package boundary

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// hashPlain gives what git add gives (hashInto) where it hashes in
// process, and leaves to git every case where git may store something
// else than the file's bytes, or take its mode or name otherwise.
func TestHashPlainAsGitAdd(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("init")
	r.write("plain.txt", "plain\r\nbytes\n")
	r.write("empty.txt", "")
	r.writeMode("run.sh", "#!/bin/sh\n", 0o744)
	r.writeMode("group-only.sh", "#!/bin/sh\n", 0o654)
	r.write("d/e/deep.txt", "deep\n")
	g, err := openGit(context.Background(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(stateDir(g.gitDir), 0o755) // hashInto's index is there
	tk := &taker{g: g, o: &options{run: "x"}}
	paths := []string{"d/e/deep.txt", "empty.txt", "group-only.sh", "plain.txt", "run.sh"}
	got, ok := tk.hashPlain(paths)
	if !ok {
		t.Fatal("plain files not hashed in process")
	}
	want, problems, err := tk.hashInto(paths, nil)
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	for _, p := range paths {
		if got[p] != want[p] {
			t.Errorf("%s: %+v, git add gives %+v", p, got[p], want[p])
		}
	}

	refused := func(name string, paths []string, undo func()) {
		t.Helper()
		if _, ok := tk.hashPlain(paths); ok {
			t.Errorf("%s: hashed in process", name)
		}
		undo()
		if _, ok := tk.hashPlain([]string{"plain.txt"}); !ok {
			t.Errorf("after %s: plain.txt not hashed in process", name)
		}
	}
	r.write("d/.gitattributes", "*.txt text eol=crlf\n")
	refused("a .gitattributes on the way", []string{"d/e/deep.txt"}, func() { r.remove("d/.gitattributes") })
	r.write(".git/info/attributes", "* -text\n")
	refused("info/attributes", []string{"plain.txt"}, func() { r.remove(".git/info/attributes") })
	for _, kv := range [][2]string{{"core.autocrlf", "true"}, {"core.eol", "crlf"}, {"core.fileMode", "false"},
		{"core.attributesFile", "/nonexistent"}, {"core.ignoreCase", "true"}} {
		r.git("config", kv[0], kv[1])
		refused(kv[0], []string{"plain.txt"}, func() { r.git("config", "--unset", kv[0]) })
	}
	os.Symlink("a.txt", filepath.Join(r.dir, "link"))
	refused("a symbolic link", []string{"link"}, func() { r.remove("link") })
	sub := newTestRepo(t)
	sub.write("s.txt", "s\n")
	sub.commitAll("s")
	os.Rename(sub.dir, filepath.Join(r.dir, "nested"))
	refused("a repository", []string{"nested"}, func() { r.remove("nested") })
	refused("a file gone", []string{"gone.txt"}, func() {})
	for _, p := range []string{".GIT/x", "d/.gitx", "GIT~1/x", "sp ace.txt", "a\\b", "trail."} {
		r.write(p, "x\n")
		refused(p, []string{p}, func() {})
	}
}

// Where no ignore rule can cover the new files, a boundary from a
// watcher's paths does not ask git check-ignore; wherever one may (a
// pattern in info/exclude or core.excludesFile, a .gitignore on the way,
// even one that matches nothing), git is asked, and what git says stands.
func TestNoIgnoreRulesAsGit(t *testing.T) {
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("init")
	home := t.TempDir() // no global excludes file
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	log := countGit(t)
	ctx := context.Background()
	n := 0
	run := func(name string, wantAsk int, file string, wantIn bool, setup, undo func()) {
		t.Helper()
		setup()
		defer undo()
		n++
		id := fmt.Sprintf("rules%d", n)
		prev, err := Take(ctx, r.dir, WithRun(id))
		if err != nil {
			t.Fatal(err)
		}
		r.write(file, "new\n")
		defer r.remove(file)
		calls(t, log, "")
		s, err := Take(ctx, r.dir, WithRun(id), WithPrev(prev), WithChanged([]string{file}, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := calls(t, log, "check-ignore"); len(got) != wantAsk {
			t.Errorf("%s: check-ignore %d times, want %d", name, len(got), wantAsk)
		}
		if !s.watched {
			t.Errorf("%s: not from the watcher's paths: %s", name, s.watchMiss)
		}
		if _, in := s.Lookup(file); in != wantIn {
			t.Errorf("%s: %s in the snapshot %v, want %v", name, file, in, wantIn)
		}
	}
	none := func() {}
	exclude := func(text string) func() { return func() { r.write(".git/info/exclude", text) } }
	run("no rules", 0, "d/new.txt", true, exclude("# comments only\n\n#*.txt\n"), none)
	run("a pattern in info/exclude", 1, "d/x.log", false, exclude("*.log\n"), exclude(""))
	run("a pattern in info/exclude, not this file's", 1, "d/new.txt", true, exclude("*.log\n"), exclude(""))
	run("a .gitignore on the way", 1, "d/e/new.txt", true, func() { r.write("d/.gitignore", "nothing\n") }, func() { r.remove("d/.gitignore") })
	excludes := filepath.Join(t.TempDir(), "excludes")
	run("a pattern in core.excludesFile", 1, "y.tmp", false, func() {
		os.WriteFile(excludes, []byte("*.tmp\n"), 0o644)
		r.git("config", "core.excludesFile", excludes)
	}, func() { r.git("config", "--unset", "core.excludesFile") })
	run("comments in core.excludesFile", 0, "y.tmp", true, func() {
		os.WriteFile(excludes, []byte("# *.tmp\n"), 0o644)
		r.git("config", "core.excludesFile", excludes)
	}, func() { r.git("config", "--unset", "core.excludesFile") })
}
