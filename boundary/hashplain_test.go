package boundary

import (
	"context"
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
