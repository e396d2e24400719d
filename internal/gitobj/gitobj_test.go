package gitobj

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/implloop/implloop/internal/gittest"
)

func TestMain(m *testing.M) {
	home, err := gittest.Isolate("gitobj-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

var ctx = context.Background()

// repo is a new repository and the Repo a caller would describe it by.
func repo(t *testing.T, args ...string) (*gittest.Repo, Repo) {
	t.Helper()
	dir := t.TempDir()
	r := gittest.At(t, dir)
	r.Git(append([]string{"init", "-q"}, args...)...)
	git := filepath.Join(dir, ".git")
	return r, Repo{Dir: dir, GitDir: git, CommonDir: git}
}

// gitIn runs git with stdin and extra environment.
func gitIn(t *testing.T, dir, stdin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func fsck(t *testing.T, r *gittest.Repo) {
	t.Helper()
	if out, err := r.GitErr("fsck", "--strict", "--no-dangling", "--no-progress"); err != nil || out != "" {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}

func mustInProcess(t *testing.T, w *Writer) {
	t.Helper()
	if !w.InProcess() {
		t.Fatalf("the Writer runs git: %s", w.Fallback)
	}
}

func TestBlobsAsGitWritesThem(t *testing.T) {
	r, rp := repo(t)
	w := Open(rp)
	mustInProcess(t, w)
	for _, data := range []string{"", "hello\n", "no newline", "\x00\xff binary \r\n", strings.Repeat("big ", 100000)} {
		id, err := w.Blob(ctx, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if want := gitIn(t, rp.Dir, data, nil, "hash-object", "--stdin"); id != want {
			t.Fatalf("blob of %d bytes: %s, git says %s", len(data), id, want)
		}
		if got := gitIn(t, rp.Dir, "", nil, "cat-file", "blob", id); got != strings.TrimSpace(data) {
			t.Fatalf("cat-file of %s: %q", id, got)
		}
		fi, err := os.Stat(filepath.Join(rp.CommonDir, "objects", id[:2], id[2:]))
		if err != nil || fi.Mode().Perm() != 0o444 {
			t.Fatalf("object file: %v %v", fi.Mode(), err)
		}
	}
	// Files: raw bytes, a symbolic link followed, as hash-object does.
	os.WriteFile(filepath.Join(rp.Dir, "a.txt"), []byte("crlf\r\nline\n"), 0o644)
	os.WriteFile(filepath.Join(rp.Dir, ".gitattributes"), []byte("*.txt text eol=lf\n"), 0o644)
	os.Symlink("a.txt", filepath.Join(rp.Dir, "link"))
	paths := []string{filepath.Join(rp.Dir, "a.txt"), filepath.Join(rp.Dir, "link"), filepath.Join(rp.Dir, ".gitattributes")}
	ids, err := w.BlobFiles(ctx, paths)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(gitIn(t, rp.Dir, strings.Join(paths, "\n")+"\n", nil, "hash-object", "--no-filters", "--stdin-paths"))
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("files: %v, git says %v", ids, want)
	}
	// A file that cannot be read: git's error.
	if _, err := w.BlobFiles(ctx, []string{filepath.Join(rp.Dir, "missing")}); err == nil || !strings.Contains(err.Error(), "hash-object") {
		t.Fatalf("a missing file: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(rp.CommonDir, "objects", ids[0][:2]))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "tmp_obj_") {
			t.Fatalf("left behind: %s", e.Name())
		}
	}
	fsck(t, r)
}

// mktreeLine is an entry as git mktree reads it.
func mktreeLine(e Entry) string {
	return fmt.Sprintf("%06o %s %s\t%s\x00", e.Mode, kindOf(e.Mode), e.ID, e.Name)
}

// TestTreesAsMktreeWritesThem: random trees (every mode, names whose
// order needs git's rule for trees: "a" < "a.b" < "a/" < "a0") have the
// id git mktree gives them, in any input order; a name twice is refused.
func TestTreesAsMktreeWritesThem(t *testing.T) {
	r, rp := repo(t)
	w := Open(rp)
	mustInProcess(t, w)
	blobs := make([]string, 3)
	for i := range blobs {
		blobs[i], _ = w.Blob(ctx, []byte(fmt.Sprint("blob ", i)))
	}
	sub, err := w.Tree(ctx, []Entry{{ModeFile, "f", blobs[0]}})
	if err != nil {
		t.Fatal(err)
	}
	commit := gitIn(t, rp.Dir, "c\n", nil, "commit-tree", sub)
	names := []string{"a", "a.b", "a-b", "a0", "ab", "b", "a.", "A", "z\x7f", "é", "a b", ".a", "\x01"}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(rt, "n")
		var entries []Entry
		seen := map[string]bool{}
		dup := false
		for i := 0; i < n; i++ {
			name := rapid.SampledFrom(names).Draw(rt, "name")
			mode := rapid.SampledFrom([]uint32{ModeFile, ModeExec, ModeSymlink, ModeDir, ModeGitlink}).Draw(rt, "mode")
			id := rapid.SampledFrom(blobs).Draw(rt, "blob")
			switch mode {
			case ModeDir:
				id = sub
			case ModeGitlink:
				id = commit
			}
			dup = dup || seen[name]
			seen[name] = true
			entries = append(entries, Entry{mode, name, id})
		}
		got, err := w.Tree(ctx, entries)
		if dup {
			if err == nil {
				rt.Fatalf("a name twice was written: %v", entries)
			}
			return
		}
		if err != nil {
			rt.Fatal(err)
		}
		var in strings.Builder
		for _, e := range entries {
			in.WriteString(mktreeLine(e))
		}
		if want := gitIn(t, rp.Dir, in.String(), nil, "mktree", "-z"); got != want {
			rt.Fatalf("tree %v: %s, git mktree says %s", entries, got, want)
		}
		sorted := append([]Entry(nil), entries...)
		sort.Slice(sorted, func(i, j int) bool { return TreeLess(sorted[i], sorted[j]) })
		var ls strings.Builder
		for _, e := range sorted {
			ls.WriteString(mktreeLine(e))
		}
		if got := gitIn(t, rp.Dir, "", nil, "ls-tree", "-z", got); got != strings.TrimSpace(ls.String()) {
			rt.Fatalf("ls-tree:\n%s\nwant\n%s", got, ls.String())
		}
	})
	// Several at once, as mktree --batch.
	ids, err := w.Trees(ctx, [][]Entry{{{ModeFile, "x", blobs[1]}}, nil, {{ModeDir, "d", sub}, {ModeFile, "d.txt", blobs[2]}}})
	if err != nil {
		t.Fatal(err)
	}
	batch := mktreeLine(Entry{ModeFile, "x", blobs[1]}) + "\x00" + "\x00" + mktreeLine(Entry{ModeDir, "d", sub}) + mktreeLine(Entry{ModeFile, "d.txt", blobs[2]}) + "\x00"
	if want := strings.Fields(gitIn(t, rp.Dir, batch, nil, "mktree", "-z", "--batch")); fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("batch: %v, git says %v", ids, want)
	}
	// Refused as git would refuse them (or fsck would complain).
	for _, bad := range [][]Entry{
		{{0o100664, "f", blobs[0]}},
		{{ModeFile, "a/b", blobs[0]}},
		{{ModeFile, "", blobs[0]}},
		{{ModeFile, ".", blobs[0]}},
		{{ModeFile, "..", blobs[0]}},
		{{ModeFile, "f", "xyz"}},
		{{ModeFile, "f", strings.ToUpper(blobs[0])}},
		{{ModeFile, "a", blobs[0]}, {ModeDir, "a", sub}},
	} {
		if _, err := w.Tree(ctx, bad); err == nil {
			t.Errorf("written: %v", bad)
		}
	}
	// Everything written is sound, and reachable for fsck to look at.
	top, err := w.Tree(ctx, []Entry{{ModeDir, "sub", sub}, {ModeFile, "b", blobs[2]}, {ModeFile, "a", blobs[1]}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.Commit(ctx, Commit{Tree: top, Author: Ident{"A", "a@x", time.Unix(1700000000, 0).UTC()}, Committer: Ident{"A", "a@x", time.Unix(1700000000, 0).UTC()}, Message: "m\n"})
	if err != nil {
		t.Fatal(err)
	}
	r.Git("update-ref", "refs/heads/main", c)
	fsck(t, r)
}

func TestCommitsAsCommitTreeWritesThem(t *testing.T) {
	r, rp := repo(t)
	w := Open(rp)
	mustInProcess(t, w)
	tree, _ := w.Tree(ctx, nil)
	if tree != "4b825dc642cb6eb9a060e54bf8d69288fbee4904" {
		t.Fatalf("the empty tree: %s", tree)
	}
	p1 := gitIn(t, rp.Dir, "one\n", nil, "commit-tree", tree)
	p2 := gitIn(t, rp.Dir, "two\n", nil, "commit-tree", tree)
	east := time.FixedZone("", 5*3600+30*60)
	west := time.FixedZone("", -7*3600)
	for _, c := range []Commit{
		{Tree: tree, Author: Ident{"implloop", "implloop@localhost", time.Unix(1780000000, 0).UTC()}, Committer: Ident{"implloop", "implloop@localhost", time.Unix(1780000000, 0).UTC()}, Message: "implloop: run r-1, boundary\n\nImplloop-Run: r-1\n"},
		{Tree: tree, Parents: []string{p1, p2}, Author: Ident{"José Müller", "j@example.com", time.Unix(1700000001, 0).In(east)}, Committer: Ident{"Ci", "ci@example.com", time.Unix(1700000002, 0).In(west)}, Message: "no newline at the end"},
		{Tree: tree, Parents: []string{p1}, Author: Ident{"a", "b", time.Unix(5, 0).UTC()}, Committer: Ident{"a", "b", time.Unix(5, 0).UTC()}, Message: ""},
		// git would change these: git writes them.
		{Tree: tree, Author: Ident{"Latin \xe9", "l@x", time.Unix(1700000000, 0).UTC()}, Committer: Ident{"c", "c@x", time.Unix(1700000000, 0).UTC()}, Message: "m\n"},
		{Tree: tree, Author: Ident{"a", "a@x", time.Unix(1700000000, 0).UTC()}, Committer: Ident{"c", "c@x", time.Unix(1700000000, 0).UTC()}, Message: "\xef\xbf\xbe non-character\n"},
		{Tree: tree, Author: Ident{" J. Doe. ", "<j@x>", time.Unix(1700000000, 0).UTC()}, Committer: Ident{"c", "c@x", time.Unix(1700000000, 0).UTC()}, Message: "m\n"},
	} {
		got, err := w.Commit(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"commit-tree", c.Tree}
		for _, p := range c.Parents {
			args = append(args, "-p", p)
		}
		env := []string{"GIT_AUTHOR_NAME=" + c.Author.Name, "GIT_AUTHOR_EMAIL=" + c.Author.Email, "GIT_AUTHOR_DATE=@" + stamp(c.Author.When),
			"GIT_COMMITTER_NAME=" + c.Committer.Name, "GIT_COMMITTER_EMAIL=" + c.Committer.Email, "GIT_COMMITTER_DATE=@" + stamp(c.Committer.When)}
		if want := gitIn(t, rp.Dir, c.Message, env, args...); got != want {
			t.Errorf("commit %+v: %s, git commit-tree says %s\n%s", c, got, want, gitIn(t, rp.Dir, "", nil, "cat-file", "commit", got))
		}
	}
	// Now: the time and zone git would take.
	before := time.Now().Unix()
	id, err := w.Commit(ctx, Commit{Tree: tree, Author: Ident{Name: "n", Email: "e@x"}, Committer: Ident{Name: "n", Email: "e@x"}, Message: "now\n"})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Unix()
	raw := gitIn(t, rp.Dir, "", nil, "cat-file", "commit", id)
	var at int64
	var zone string
	if _, err := fmt.Sscanf(strings.Split(raw, "\n")[1], "author n <e@x> %d %s", &at, &zone); err != nil || at < before || at > after || zone != time.Now().Format("-0700") {
		t.Fatalf("now: %q (%v)", raw, err)
	}
	// The lease's commit, written whole (hash-object -t commit).
	body := fmt.Sprintf("tree %s\nparent %s\nauthor implloop <implloop@localhost> 1780000000 +0000\ncommitter implloop <implloop@localhost> 1780000000 +0000\n\nimplloop claim\n\nplan p\n", tree, p1)
	got, err := w.Object(ctx, "commit", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if want := gitIn(t, rp.Dir, body, nil, "hash-object", "-t", "commit", "--stdin"); got != want {
		t.Fatalf("a whole commit: %s, git says %s", got, want)
	}
	r.Git("update-ref", "refs/heads/main", id)
	r.Git("update-ref", "refs/heads/lease", got)
	fsck(t, r)
}

// TestGitWritesWhenItWouldDoOtherwise: every setting that makes git write
// objects elsewhere or otherwise makes the Writer leave the writing to git,
// and the objects land where git puts them.
func TestGitWritesWhenItWouldDoOtherwise(t *testing.T) {
	type setup func(t *testing.T, rp *Repo)
	config := func(file, text string) setup {
		return func(t *testing.T, rp *Repo) {
			p := strings.ReplaceAll(file, "$GIT", rp.CommonDir)
			p = strings.ReplaceAll(p, "$HOME", os.Getenv("HOME"))
			os.MkdirAll(filepath.Dir(p), 0o755)
			f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(f, strings.ReplaceAll(text, "$HOME", os.Getenv("HOME")))
			f.Close()
		}
	}
	for _, tc := range []struct {
		name    string
		setup   setup
		commits bool // only commits go to git
		sync    bool // written in process, flushed
	}{
		{name: "GIT_OBJECT_DIRECTORY in the process", setup: func(t *testing.T, rp *Repo) { t.Setenv("GIT_OBJECT_DIRECTORY", filepath.Join(rp.CommonDir, "objects")) }},
		{name: "GIT_ALTERNATE_OBJECT_DIRECTORIES", setup: func(t *testing.T, rp *Repo) { t.Setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", t.TempDir()) }},
		{name: "GIT_QUARANTINE_PATH", setup: func(t *testing.T, rp *Repo) { t.Setenv("GIT_QUARANTINE_PATH", filepath.Join(rp.CommonDir, "objects")) }},
		{name: "GIT_DIR for the call", setup: func(t *testing.T, rp *Repo) { rp.Env = []string{"GIT_DIR=" + rp.CommonDir} }},
		{name: "core.sharedRepository", setup: config("$GIT/config", "[core]\n\tsharedRepository = group\n")},
		{name: "core.sharedRepository on the section line", setup: config("$GIT/config", "[core] SharedRepository=0664\n")},
		{name: "core.sharedRepository, global", setup: config("$HOME/.gitconfig", "[core]\nsharedrepository = all\n")},
		{name: "core.sharedRepository, included", setup: func(t *testing.T, rp *Repo) {
			config("$HOME/inc/shared", "[core]\nsharedRepository = true\n")(t, rp)
			config("$HOME/.gitconfig", "[includeIf \"gitdir:/nowhere/\"]\n\tpath = inc/shared\n")(t, rp)
		}},
		{name: "core.sharedRepository, included from ~", setup: func(t *testing.T, rp *Repo) {
			config("$HOME/inc/shared", "[core]\nsharedRepository = true\n")(t, rp)
			config("$GIT/config", "[include]\n\tpath = ~/inc/shared\n")(t, rp)
		}},
		{name: "an include not plain enough", setup: config("$GIT/config", "[include]\n\tpath = \"a\\\"b\"\n")},
		{name: "core.sharedRepository in the environment", setup: func(t *testing.T, rp *Repo) {
			t.Setenv("GIT_CONFIG_COUNT", "2")
			t.Setenv("GIT_CONFIG_KEY_1", "core.sharedRepository")
			t.Setenv("GIT_CONFIG_VALUE_1", "group")
		}},
		{name: "GIT_CONFIG_PARAMETERS", setup: func(t *testing.T, rp *Repo) { t.Setenv("GIT_CONFIG_PARAMETERS", "'core.sharedrepository'='group'") }},
		{name: "compatObjectFormat", setup: config("$GIT/config", "[extensions]\n\tcompatObjectFormat = sha256\n")},
		{name: "an object format not given", setup: config("$GIT/config", "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectFormat = sha1\n")},
		{name: "i18n.commitEncoding", setup: config("$GIT/config", "[i18n]\n\tcommitEncoding = ISO-8859-1\n"), commits: true},
		{name: "core.fsync", setup: config("$GIT/config", "[core]\n\tfsync = loose-object\n"), sync: true},
		{name: "core.fsyncObjectFiles, system", setup: func(t *testing.T, rp *Repo) {
			sys := filepath.Join(t.TempDir(), "gitconfig")
			os.WriteFile(sys, []byte("[core]\n\tfsyncObjectFiles = true\n"), 0o644)
			t.Setenv("GIT_CONFIG_NOSYSTEM", "0")
			t.Setenv("GIT_CONFIG_SYSTEM", sys)
		}, sync: true},
		{name: "core.fsyncMethod, XDG", setup: func(t *testing.T, rp *Repo) {
			os.Unsetenv("GIT_CONFIG_GLOBAL") // restored by the subtest's Setenv of HOME
			config("$HOME/.config/git/config", "[core]\n\tfsyncMethod = batch\n")(t, rp)
		}, sync: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
			r, rp := repo(t)
			tc.setup(t, &rp)
			w := Open(rp)
			if w.InProcess() != (tc.commits || tc.sync) {
				t.Fatalf("in process: %v (%s)", w.InProcess(), w.Fallback)
			}
			if w.sync != tc.sync || (w.commits != "") != tc.commits {
				t.Fatalf("sync %v, commits %q", w.sync, w.commits)
			}
			blob, err := w.Blob(ctx, []byte(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			tree, err := w.Tree(ctx, []Entry{{ModeFile, "f", blob}})
			if err != nil {
				t.Fatal(err)
			}
			when := time.Unix(1700000000, 0).UTC()
			c, err := w.Commit(ctx, Commit{Tree: tree, Author: Ident{"a", "a@x", when}, Committer: Ident{"a", "a@x", when}, Message: "é\n"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.commits {
				if raw := r.Git("cat-file", "commit", c); !strings.Contains(raw, "\nencoding ISO-8859-1\n") {
					t.Fatalf("git's commit:\n%s", raw)
				}
			}
			if rp.Env == nil && os.Getenv("GIT_QUARANTINE_PATH") == "" {
				r.Git("update-ref", "refs/heads/main", c)
				fsck(t, r)
			}
		})
	}
}

// TestReadOnlySnapshotObjects: a temporary object directory given for
// the call (as boundary's read-only snapshots give one) is where git puts
// the objects; nothing reaches the repository's own.
func TestReadOnlySnapshotObjects(t *testing.T) {
	_, rp := repo(t)
	tmp := t.TempDir()
	rp.Env = []string{"GIT_OBJECT_DIRECTORY=" + tmp, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(rp.CommonDir, "objects")}
	w := Open(rp)
	if w.InProcess() {
		t.Fatal("written in process despite GIT_OBJECT_DIRECTORY")
	}
	id, err := w.Blob(ctx, []byte("snapshot\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tmp, id[:2], id[2:])); err != nil {
		t.Fatal("not in the temporary object directory:", err)
	}
	if _, err := os.Stat(filepath.Join(rp.CommonDir, "objects", id[:2], id[2:])); err == nil {
		t.Fatal("written into the repository")
	}
}

// TestCorruptObjectFile: an object file that is there but truncated (a
// crash after the link, a disk that lost its blocks) is what git keeps
// (it only touches it, and the object stays unreadable); the Writer
// replaces it with the object.
func TestCorruptObjectFile(t *testing.T) {
	for _, damage := range []string{"truncated", "garbage", "another object", "empty"} {
		t.Run(damage, func(t *testing.T) {
			r, rp := repo(t)
			data := strings.Repeat("the content\n", 100)
			id := gitIn(t, rp.Dir, data, nil, "hash-object", "-w", "--stdin")
			file := filepath.Join(rp.CommonDir, "objects", id[:2], id[2:])
			good, _ := os.ReadFile(file)
			var bad []byte
			switch damage {
			case "truncated":
				bad = good[:len(good)/2]
			case "garbage":
				bad = []byte("not zlib at all")
			case "another object":
				other := gitIn(t, rp.Dir, "other\n", nil, "hash-object", "-w", "--stdin")
				bad, _ = os.ReadFile(filepath.Join(rp.CommonDir, "objects", other[:2], other[2:]))
			}
			os.Chmod(file, 0o644)
			os.WriteFile(file, bad, 0o444)
			// git keeps it.
			gitIn(t, rp.Dir, data, nil, "hash-object", "-w", "--stdin")
			if now, _ := os.ReadFile(file); !bytes.Equal(now, bad) {
				t.Fatal("git repaired it (then the Writer need not differ)")
			}
			w := Open(rp)
			got, err := w.Blob(ctx, []byte(data))
			if err != nil || got != id {
				t.Fatalf("%s %v", got, err)
			}
			if out := gitIn(t, rp.Dir, "", nil, "cat-file", "blob", id); out != strings.TrimSpace(data) {
				t.Fatal("not repaired")
			}
			if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o444 {
				t.Fatalf("mode %v", fi.Mode())
			}
			fsck(t, r)
		})
	}
}

// TestUnwritableFanOut: where the Writer cannot write (a file where the
// fan-out directory goes: even root cannot write there), git is asked,
// and its refusal is the error.
func TestUnwritableFanOut(t *testing.T) {
	_, rp := repo(t)
	w := Open(rp)
	id := ID(SHA1, "blob", []byte("blocked\n"))
	os.WriteFile(filepath.Join(rp.CommonDir, "objects", id[:2]), []byte("in the way"), 0o644)
	if _, err := w.Blob(ctx, []byte("blocked\n")); err == nil || !strings.Contains(err.Error(), "hash-object") {
		t.Fatalf("%v", err)
	}
}

// TestReadOnlyObjectDirectory: where the Writer cannot write, git is
// asked, and its refusal is the error.
func TestReadOnlyObjectDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories")
	}
	_, rp := repo(t)
	w := Open(rp)
	known, err := w.Blob(ctx, []byte("known\n"))
	if err != nil {
		t.Fatal(err)
	}
	objects := filepath.Join(rp.CommonDir, "objects")
	var dirs []string
	filepath.WalkDir(objects, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for _, d := range dirs {
		os.Chmod(d, 0o555)
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			os.Chmod(d, 0o755)
		}
	})
	if _, err := w.Blob(ctx, []byte("new\n")); err == nil || !strings.Contains(err.Error(), "hash-object") {
		t.Fatalf("a new object in a read-only directory: %v", err)
	}
	// An object that is there already is there: no need to write.
	if id, err := w.Blob(ctx, []byte("known\n")); err != nil || id != known {
		t.Fatalf("a known object: %s %v", id, err)
	}
}

// TestConcurrentWriters: writers of the same objects at once all succeed
// and leave one sound copy.
func TestConcurrentWriters(t *testing.T) {
	r, rp := repo(t)
	var wg sync.WaitGroup
	ids := make([][2]string, 8)
	errs := make([]error, len(ids))
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := Open(rp)
			for k := 0; k < 20; k++ {
				b, err := w.Blob(ctx, []byte(fmt.Sprint("same ", k)))
				if err != nil {
					errs[i] = err
					return
				}
				tr, err := w.Tree(ctx, []Entry{{ModeFile, "f", b}})
				if err != nil {
					errs[i] = err
					return
				}
				ids[i] = [2]string{b, tr}
			}
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("writer %d: %v %v (writer 0: %v)", i, ids[i], errs[i], ids[0])
		}
	}
	c := gitIn(t, rp.Dir, "c\n", nil, "commit-tree", ids[0][1])
	r.Git("update-ref", "refs/heads/main", c)
	fsck(t, r)
}

// TestLinkedWorktree: a linked worktree's objects are its common
// directory's; its own config.worktree is read.
func TestLinkedWorktree(t *testing.T) {
	r, rp := repo(t)
	r.Write("f", "f\n")
	r.Commit("first")
	wt := filepath.Join(t.TempDir(), "wt")
	r.Git("worktree", "add", "-q", "--detach", wt)
	gitDir := gitIn(t, wt, "", nil, "rev-parse", "--absolute-git-dir")
	w := Open(Repo{Dir: wt, GitDir: gitDir, CommonDir: rp.CommonDir})
	mustInProcess(t, w)
	id, err := w.Blob(ctx, []byte("from the worktree\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, rp.Dir, "", nil, "cat-file", "blob", id); got != "from the worktree" {
		t.Fatalf("read from the main work tree: %q", got)
	}
	r.Git("config", "extensions.worktreeConfig", "true")
	os.WriteFile(filepath.Join(gitDir, "config.worktree"), []byte("[core]\n\tsharedRepository = group\n"), 0o644)
	if w := Open(Repo{Dir: wt, GitDir: gitDir, CommonDir: rp.CommonDir}); w.InProcess() {
		t.Fatal("config.worktree not read")
	}
}

func TestSHA256(t *testing.T) {
	r, rp := repo(t, "--object-format=sha256")
	if w := Open(rp); w.InProcess() {
		t.Fatal("the object format was not given, and the config names one")
	}
	rp.Hash, rp.HashKnown = SHA256, true
	w := Open(rp)
	mustInProcess(t, w)
	b, err := w.Blob(ctx, []byte("x\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := w.Tree(ctx, []Entry{{ModeFile, "x", b}})
	if err != nil {
		t.Fatal(err)
	}
	want := gitIn(t, rp.Dir, mktreeLine(Entry{ModeFile, "x", b}), nil, "mktree", "-z")
	if len(tr) != 64 || tr != want {
		t.Fatalf("tree %s, git says %s", tr, want)
	}
	when := time.Unix(1700000000, 0).UTC()
	c, err := w.Commit(ctx, Commit{Tree: tr, Author: Ident{"a", "a@x", when}, Committer: Ident{"a", "a@x", when}, Message: "m\n"})
	if err != nil {
		t.Fatal(err)
	}
	r.Git("update-ref", "refs/heads/main", c)
	fsck(t, r)
}

// TestCommitNeedsItsTreeAndParents: as git commit-tree, no commit names
// a tree or a parent the repository does not have; packed ones are found.
func TestCommitNeedsItsTreeAndParents(t *testing.T) {
	r, rp := repo(t)
	r.Write("f", "f\n")
	head := r.Commit("first")
	r.Git("gc", "-q") // HEAD's commit and tree now in a pack only
	w := Open(rp)
	tree := gitIn(t, rp.Dir, "", nil, "rev-parse", "HEAD^{tree}")
	if _, err := os.Stat(filepath.Join(rp.CommonDir, "objects", head[:2], head[2:])); err == nil {
		t.Fatal("still loose")
	}
	if !has(w.objects, SHA1, head) || !has(w.objects, SHA1, tree) {
		t.Fatal("packed objects not found")
	}
	when := time.Unix(1700000000, 0).UTC()
	c := Commit{Tree: tree, Parents: []string{head}, Author: Ident{"a", "a@x", when}, Committer: Ident{"a", "a@x", when}, Message: "m\n"}
	id, err := w.Commit(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rp.CommonDir, "objects", id[:2], id[2:])); err != nil {
		t.Fatal("not written in process:", err)
	}
	missing := strings.Repeat("1", 40)
	for _, bad := range []Commit{{Tree: missing, Author: c.Author, Committer: c.Committer}, {Tree: tree, Parents: []string{missing}, Author: c.Author, Committer: c.Committer}} {
		if id, err := w.Commit(ctx, bad); err == nil {
			t.Fatalf("a commit of a missing object: %s", id)
		}
	}
	// An alternate's objects are the repository's too.
	_, other := repo(t)
	os.WriteFile(filepath.Join(other.CommonDir, "objects", "info", "alternates"), []byte(filepath.Join(rp.CommonDir, "objects")+"\n"), 0o644)
	if !has(Open(other).objects, SHA1, head) {
		t.Fatal("an alternate's packed object not found")
	}
}

// TestReadLoose: an object written loose reads back; one not there, or
// whose file holds another object, does not (the caller asks git).
func TestReadLoose(t *testing.T) {
	objects := t.TempDir()
	id, err := WriteLoose(objects, SHA1, "blob", []byte("hello\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if kind, body, ok := ReadLoose(objects, SHA1, id); !ok || kind != "blob" || string(body) != "hello\n" {
		t.Fatalf("read back %q %q %v", kind, body, ok)
	}
	other, err := WriteLoose(objects, SHA1, "blob", []byte("other\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := ReadLoose(objects, SHA1, other[:39]+"0"); ok {
		t.Error("an object not there read")
	}
	data, err := os.ReadFile(filepath.Join(objects, other[:2], other[2:]))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(objects, id[:2], id[2:])
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := ReadLoose(objects, SHA1, id); ok {
		t.Error("another object's file read under this one's name")
	}
}
