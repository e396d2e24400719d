package guard

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/internal/rapidcases"
	"pgregory.net/rapid"
)

// The names and contents the generated cases draw from: a name with a
// space, one in a directory, and (in some cases) one that is not UTF-8;
// CRLF text, text without a final newline, binary with NUL bytes, empty.
// The pools are small so that the same content often sits at two paths.
var (
	propNames    = []string{"a.txt", "b.txt", "sp ace.txt", "run.sh", "d/e.txt", "bin.dat"}
	propBadName  = "bad\xffname.txt"
	propContents = []string{"one\n", "two\r\nlines\r\n", "no final newline", "bin\x00ary\xff\r\n", "", "one\n\n"}
)

// TestPropertyDiscards: random moves of an agent between two boundaries in
// a real repository. The guard's verdict must be what an oracle computes
// from file contents alone (the files on disk; HEAD's, the index's and
// other commits' content as git lists it), following docs/boundary.md's
// rules; and every discarded path must come back byte for byte from the
// boundary commits alone, after the reflog is expired and garbage
// collected.
//
// Each case is one repository, built without a git process; the two
// boundaries cost most of a case. make test runs 30 cases (about 20 s
// on 2 cores); make fuzz runs 10,000 (RAPID_CHECKS). It found two bugs, fixed
// since: a tracked file deleted, written back and ignored left the
// snapshot (boundary.trackedMissing), and an undone rename blocked when a
// copy of its content was at a third path.
func TestPropertyDiscards(t *testing.T) {
	// The package's only property test: the number stays set while it
	// runs in parallel with the others.
	defer rapidcases.Default("30")()
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		c := newPropCase(rt)
		defer os.RemoveAll(c.dir)
		c.run()
	})
}

// content is a path's content somewhere: the git blob id of its bytes and
// its mode (0 when absent, else 0o100644 or 0o100755).
type content struct {
	id   string
	mode uint32
}

func (c content) present() bool { return c.mode != 0 }

func (c content) String() string {
	if !c.present() {
		return "absent"
	}
	return fmt.Sprintf("%o %.8s", c.mode, c.id)
}

// parseContent reads git's mode and id ("000000" for absent).
func parseContent(mode, id string) content {
	m, _ := strconv.ParseUint(mode, 8, 32)
	if m == 0 {
		return content{}
	}
	return content{id: id, mode: uint32(m)}
}

// propCase is one generated case: a repository and what was done in it.
type propCase struct {
	rt    *rapid.T
	dir   string
	names []string
	log   []string // what was done, for the failure message
	zw    *zlib.Writer
	// ignoreRules are the paths the agent wrote an ignore rule for.
	ignoreRules map[string]bool
	// envRule: the run started with an info/exclude rule for *.env, and
	// local.env is one of the names: the user's ignored file, which the
	// boundaries keep beside their trees.
	envRule bool
	// nested: a nested repository at sub/ (sub.txt committed in it),
	// whose uncommitted work the boundaries keep in its own boundaries.
	nested bool
}

// nestedNames are the names the agent uses inside the nested repository.
var nestedNames = []string{"sub.txt", "n.txt"}

func newPropCase(rt *rapid.T) *propCase {
	dir, err := os.MkdirTemp("", "guard-prop-")
	if err != nil {
		rt.Fatal(err)
	}
	c := &propCase{rt: rt, dir: dir, names: append([]string(nil), propNames...)}
	if rapid.IntRange(0, 3).Draw(rt, "bad-name") == 0 {
		c.names = append(c.names, propBadName)
	}
	if rapid.IntRange(0, 3).Draw(rt, "ignored-file") == 0 {
		c.envRule = true
		c.names = append(c.names, "local.env")
	}
	c.nested = rapid.IntRange(0, 7).Draw(rt, "nested") == 0
	return c
}

func (c *propCase) logf(format string, args ...any) {
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

func (c *propCase) fatalf(format string, args ...any) {
	c.rt.Helper()
	c.rt.Fatalf("%s\n\nsteps:\n  %s", fmt.Sprintf(format, args...), strings.Join(c.log, "\n  "))
}

// gitErr runs git in the repository (isolated by TestMain) and returns its
// standard output and its failure. The oracle's own reads take no optional
// lock: a git status must not refresh the index behind the agent's back.
func (c *propCase) gitErr(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %q: %v: %s", args, err, stderr.Bytes())
	}
	return stdout.String(), nil
}

// git runs git and fails the case if git fails.
func (c *propCase) git(args ...string) string {
	c.rt.Helper()
	out, err := c.gitErr(args...)
	if err != nil {
		c.fatalf("%v", err)
	}
	return out
}

// try runs an agent's git command, which may fail as it may for an agent
// (nothing to commit, a checkout that would overwrite work).
func (c *propCase) try(args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = c.dir
	if err := cmd.Run(); err != nil {
		c.logf("git %q: %v", args, err)
	} else {
		c.logf("git %q", args)
	}
}

func (c *propCase) full(p string) string { return filepath.Join(c.dir, filepath.FromSlash(p)) }

func (c *propCase) isFile(p string) bool {
	fi, err := os.Lstat(c.full(p))
	return err == nil && fi.Mode().IsRegular()
}

// spec is a file of a commit made in the setup.
type spec struct {
	data string
	exec bool
}

func (c *propCase) drawSpec(label string) spec {
	return spec{
		data: rapid.SampledFrom(propContents).Draw(c.rt, label+"-content"),
		exec: rapid.IntRange(0, 3).Draw(c.rt, label+"-exec") == 0,
	}
}

// setup builds the repository: main with one or two commits (or none: an
// unborn branch), and a branch other forked from main's first commit with
// content of its own. The
// objects, refs, index and work tree are written directly, with no git
// process at all.
func (c *propCase) setup() {
	rt := c.rt
	for _, d := range []string{"objects", "refs/heads", "refs/tags", "info"} {
		if err := os.MkdirAll(c.full(".git/"+d), 0o755); err != nil {
			c.fatalf("%v", err)
		}
	}
	c.put(".git/HEAD", "ref: refs/heads/main\n")
	c.put(".git/config", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n")
	if c.envRule {
		c.put(".git/info/exclude", "*.env\n")
	}
	root := map[string]spec{}
	var log []string
	for _, n := range c.names {
		if rapid.Bool().Draw(rt, "committed") {
			s := c.drawSpec("root")
			root[n] = s
			log = append(log, fmt.Sprintf("%q=%q exec=%v", n, s.data, s.exec))
		}
	}
	first := c.commitObject("root", "", root)
	c.logf("main's root commit: %s", strings.Join(log, ", "))
	// changes draws a commit's changes on top of the root commit.
	changes := func(label string) map[string]spec {
		files := make(map[string]spec, len(root))
		for p, s := range root {
			files[p] = s
		}
		var log []string
		for i, n := 0, rapid.IntRange(1, 2).Draw(rt, label+"-changes"); i < n; i++ {
			p := rapid.SampledFrom(c.names).Draw(rt, label+"-path")
			if _, in := files[p]; in && rapid.IntRange(0, 2).Draw(rt, label+"-delete") == 0 {
				delete(files, p)
				log = append(log, fmt.Sprintf("%q deleted", p))
				continue
			}
			s := c.drawSpec(label)
			files[p] = s
			log = append(log, fmt.Sprintf("%q=%q exec=%v", p, s.data, s.exec))
		}
		c.logf("%s: %s", label, strings.Join(log, ", "))
		return files
	}
	c.put(".git/refs/heads/other", c.commitObject("other", first, changes("branch other, from the root"))+"\n")
	switch rapid.IntRange(0, 7).Draw(rt, "main") {
	case 0: // main unborn: the earlier boundary has no HEAD
		c.logf("main unborn")
	case 1, 2, 3:
		c.put(".git/refs/heads/main", first+"\n")
		c.checkout(root)
	default:
		files := changes("main's second commit")
		c.put(".git/refs/heads/main", c.commitObject("second", first, files)+"\n")
		c.checkout(files)
	}
}

// checkout writes files to the work tree and the index, as
// `git read-tree -u --reset` would: the index entries carry no stat data,
// so git compares their content the first time it looks.
func (c *propCase) checkout(files map[string]spec) {
	paths := sortedKeys(files)
	var idx bytes.Buffer
	idx.WriteString("DIRC")
	binary.Write(&idx, binary.BigEndian, [2]uint32{2, uint32(len(paths))})
	for _, p := range paths {
		s := files[p]
		c.write(p, s.data, false)
		mode := uint32(0o100644)
		if s.exec {
			mode = 0o100755
		}
		os.Chmod(c.full(p), os.FileMode(mode&0o777))
		var stat [10]uint32 // ctime, mtime, dev, ino, mode, uid, gid, size
		stat[6] = mode
		binary.Write(&idx, binary.BigEndian, stat)
		id, _ := hex.DecodeString(c.object("blob", []byte(s.data)))
		idx.Write(id)
		binary.Write(&idx, binary.BigEndian, uint16(len(p)))
		idx.WriteString(p)
		idx.Write(make([]byte, 8-(62+len(p))%8)) // NUL-padded to a multiple of 8
	}
	sum := sha1.Sum(idx.Bytes())
	idx.Write(sum[:])
	c.put(".git/index", idx.String())
}

// put writes a file in the repository directory (.git's included).
func (c *propCase) put(p, data string) {
	if err := os.WriteFile(c.full(p), []byte(data), 0o644); err != nil {
		c.fatalf("%v", err)
	}
}

// object writes a loose object and returns its id.
func (c *propCase) object(kind string, body []byte) string {
	hdr := fmt.Sprintf("%s %d\x00", kind, len(body))
	h := sha1.New()
	h.Write([]byte(hdr))
	h.Write(body)
	id := hex.EncodeToString(h.Sum(nil))
	file := c.full(".git/objects/" + id[:2] + "/" + id[2:])
	if _, err := os.Stat(file); err == nil {
		return id
	}
	var z bytes.Buffer
	if c.zw == nil {
		c.zw, _ = zlib.NewWriterLevel(&z, zlib.BestSpeed)
	} else {
		c.zw.Reset(&z)
	}
	c.zw.Write([]byte(hdr))
	c.zw.Write(body)
	c.zw.Close()
	os.MkdirAll(filepath.Dir(file), 0o755)
	if err := os.WriteFile(file, z.Bytes(), 0o444); err != nil {
		c.fatalf("%v", err)
	}
	return id
}

// tree writes the tree of files (paths relative to it) and its subtrees.
func (c *propCase) tree(files map[string]spec) string {
	type entry struct{ name, mode, id string }
	var entries []entry
	subs := map[string]map[string]spec{}
	for p, s := range files {
		if dir, rest, ok := strings.Cut(p, "/"); ok {
			if subs[dir] == nil {
				subs[dir] = map[string]spec{}
			}
			subs[dir][rest] = s
			continue
		}
		mode := "100644"
		if s.exec {
			mode = "100755"
		}
		entries = append(entries, entry{p, mode, c.object("blob", []byte(s.data))})
	}
	for dir, sub := range subs {
		entries = append(entries, entry{dir, "40000", c.tree(sub)})
	}
	// git orders a tree's entries by name, a directory's as if it ended in /.
	key := func(e entry) string {
		if e.mode == "40000" {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	var body bytes.Buffer
	for _, e := range entries {
		raw, _ := hex.DecodeString(e.id)
		fmt.Fprintf(&body, "%s %s\x00%s", e.mode, e.name, raw)
	}
	return c.object("tree", body.Bytes())
}

// commitObject writes a commit of files with parent ("" for none), at a
// fixed date, and returns its id.
func (c *propCase) commitObject(msg, parent string, files map[string]spec) string {
	var body strings.Builder
	fmt.Fprintf(&body, "tree %s\n", c.tree(files))
	if parent != "" {
		fmt.Fprintf(&body, "parent %s\n", parent)
	}
	fmt.Fprintf(&body, "author T <t@example.com> 1700000000 +0000\ncommitter T <t@example.com> 1700000000 +0000\n\n%s\n", msg)
	return c.object("commit", []byte(body.String()))
}

// write writes data to p (making its directory); a file that exists keeps
// its mode, as an editor's write does.
func (c *propCase) write(p, data string, appendTo bool) {
	full := c.full(p)
	os.MkdirAll(filepath.Dir(full), 0o755)
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(full, flags, 0o644)
	if err != nil {
		c.fatalf("%v", err)
	}
	f.WriteString(data)
	if err := f.Close(); err != nil {
		c.fatalf("%v", err)
	}
}

// chmod flips p's executable bit.
func (c *propCase) chmod(p string) {
	fi, err := os.Stat(c.full(p))
	if err != nil {
		return
	}
	mode := os.FileMode(0o755)
	if fi.Mode()&0o100 != 0 {
		mode = 0o644
	}
	os.Chmod(c.full(p), mode)
}

// work makes the uncommitted work the earlier boundary sees: edits, new
// files, deletions, exec bits, staged content, content edited on top of
// staged content, and staged renames.
func (c *propCase) work() {
	rt := c.rt
	for i, n := 0, rapid.IntRange(1, 5).Draw(rt, "work"); i < n; i++ {
		p := rapid.SampledFrom(c.names).Draw(rt, "work-path")
		switch rapid.IntRange(0, 6).Draw(rt, "work-op") {
		case 0, 1:
			data := rapid.SampledFrom(propContents).Draw(rt, "work-content")
			c.write(p, data, false)
			c.logf("write %q %q", p, data)
		case 2:
			os.Remove(c.full(p))
			c.logf("rm %q", p)
		case 3:
			c.chmod(p)
			c.logf("chmod %q", p)
		case 4:
			c.try("add", "--", p)
		case 5:
			c.try("mv", "--", p, rapid.SampledFrom(c.names).Draw(rt, "work-mv-to"))
		case 6:
			staged := rapid.SampledFrom(propContents).Draw(rt, "work-staged")
			c.write(p, staged, false)
			c.try("add", "--", p)
			data := rapid.SampledFrom(propContents).Draw(rt, "work-on-top")
			c.write(p, data, false)
			c.logf("write %q %q (staged %q)", p, data, staged)
		}
	}
}

// agent makes one to six moves of a coding agent. Half of the paths it
// touches were dirty at the earlier boundary (dirty), and a new ignore
// rule mostly covers a file that was untracked then (untracked).
func (c *propCase) agent(dirty, untracked []string) {
	rt := c.rt
	pick := func(label string) string {
		if len(dirty) > 0 && rapid.Bool().Draw(rt, label+"-dirty") {
			return rapid.SampledFrom(dirty).Draw(rt, label)
		}
		return rapid.SampledFrom(c.names).Draw(rt, label)
	}
	// Each move is drawn with a weight: edits, reverts and commits most.
	moves := []string{"write", "write", "write", "append", "rm", "rm", "mv", "mv", "git mv", "chmod",
		"commit", "commit", "amend", "reset", "reset", "stash", "clean", "checkout --", "checkout --",
		"checkout branch", "ignore", "ignore", "add", "rm --cached", "clean -x", "ignore all"}
	if c.nested {
		moves = append(moves, "nested", "nested", "nested")
	}
	for i, n := 0, rapid.IntRange(1, 6).Draw(rt, "actions"); i < n; i++ {
		switch rapid.SampledFrom(moves).Draw(rt, "action") {
		case "write":
			p, data := pick("path"), rapid.SampledFrom(propContents).Draw(rt, "content")
			c.write(p, data, false)
			c.logf("write %q %q", p, data)
		case "append":
			p, data := pick("path"), rapid.SampledFrom(propContents).Draw(rt, "content")
			c.write(p, data, true)
			c.logf("append %q %q", p, data)
		case "rm":
			p := pick("path")
			os.Remove(c.full(p))
			c.logf("rm %q", p)
		case "mv":
			p, to := pick("path"), pick("mv-to")
			if c.isFile(p) && p != to {
				os.MkdirAll(filepath.Dir(c.full(to)), 0o755)
				os.Rename(c.full(p), c.full(to))
				c.logf("mv %q %q", p, to)
			}
		case "git mv":
			c.try("mv", "--", pick("path"), pick("mv-to"))
		case "chmod":
			p := pick("path")
			c.chmod(p)
			c.logf("chmod %q", p)
		case "commit":
			c.try("add", "-A")
			c.try("commit", "-q", "-m", "agent")
		case "amend":
			c.try("commit", "-q", "--amend", "-a", "--allow-empty", "-m", "amended")
		case "reset":
			if rapid.Bool().Draw(rt, "reset-back") {
				c.try("reset", "-q", "--hard", "HEAD~1")
			} else {
				c.try("reset", "-q", "--hard", "HEAD")
			}
		case "stash":
			c.try("stash", "-q", "-u")
		case "clean":
			c.try("clean", "-q", "-fd")
		case "clean -x":
			// Every untracked file, ignored ones too (a nested
			// repository is left alone without a second -f).
			c.try("clean", "-q", "-fdx")
		case "ignore all":
			// A rule that ignores everything: the boundaries go on with
			// the run's rules, so it hides nothing.
			file := ".gitignore"
			if rapid.Bool().Draw(rt, "all-info-exclude") {
				file = ".git/info/exclude"
			}
			c.write(file, "*\n", true)
			c.logf("ignore everything in %s", file)
		case "nested":
			c.nestedMove()
		case "checkout --":
			if rapid.Bool().Draw(rt, "restore") {
				c.try("restore", "--", pick("path"))
			} else {
				c.try("checkout", "-q", "--", pick("path"))
			}
		case "checkout branch":
			branch := rapid.SampledFrom([]string{"other", "main", "--detach HEAD~1"}).Draw(rt, "branch")
			if strings.HasPrefix(branch, "--detach") {
				c.try("checkout", "-q", "--detach", "HEAD~1")
			} else if rapid.IntRange(0, 2).Draw(rt, "force") == 0 {
				c.try("checkout", "-q", "-f", branch)
			} else {
				c.try("checkout", "-q", branch)
			}
		case "ignore":
			// A new ignore rule covering a file on disk: mostly one that
			// was untracked at the earlier boundary (a tracked one is not
			// affected by it).
			var cands []string
			for _, p := range untracked {
				if c.isFile(p) {
					cands = append(cands, p)
				}
			}
			if len(cands) == 0 || rapid.IntRange(0, 3).Draw(rt, "ignore-any") == 0 {
				cands = cands[:0]
				for _, p := range c.names {
					if c.isFile(p) {
						cands = append(cands, p)
					}
				}
			}
			if len(cands) == 0 {
				break
			}
			p := rapid.SampledFrom(cands).Draw(rt, "ignore-path")
			file := ".gitignore"
			if rapid.Bool().Draw(rt, "info-exclude") {
				file = ".git/info/exclude"
			}
			c.write(file, "/"+p+"\n", true)
			c.logf("ignore %q in %s", p, file)
			if c.ignoreRules == nil {
				c.ignoreRules = map[string]bool{}
			}
			c.ignoreRules[p] = true
		case "add":
			c.try("add", "--", pick("path"))
		case "rm --cached":
			c.try("rm", "-q", "--cached", "--", pick("path"))
		}
	}
}

// dirtyEntry is a path git status lists, with its content at HEAD and in
// the index.
type dirtyEntry struct {
	head, index content
	renamedTo   string // the old side of a staged rename: where it went
	untracked   bool   // on disk, not in the index, not ignored
}

// state is what the oracle reads of the repository at one boundary.
type state struct {
	head    string
	dirty   map[string]*dirtyEntry // what git status lists
	ignored map[string]bool        // untracked files an ignore rule covers
	disk    map[string]content     // the files on disk
	raw     map[string][]byte      // their bytes
}

// read reads the repository's state: one git status (HEAD, the paths
// whose content differs between HEAD, the index and the work tree, staged
// renames, ignored files), and the files on disk.
func (c *propCase) read() state {
	s := state{dirty: map[string]*dirtyEntry{}, ignored: map[string]bool{}}
	recs := strings.Split(c.git("status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--ignored=matching", "--renames"), "\x00")
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		switch {
		case strings.HasPrefix(rec, "# branch.oid "):
			if s.head = strings.TrimPrefix(rec, "# branch.oid "); s.head == "(initial)" {
				s.head = "" // unborn
			}
		case strings.HasPrefix(rec, "1 "): // 1 XY sub mH mI mW hH hI path
			f := strings.SplitN(rec, " ", 9)
			s.dirty[f[8]] = &dirtyEntry{head: parseContent(f[3], f[6]), index: parseContent(f[4], f[7])}
		case strings.HasPrefix(rec, "2 "): // 2 XY sub mH mI mW hH hI score path NUL origPath
			f := strings.SplitN(rec, " ", 10)
			i++
			s.dirty[f[9]] = &dirtyEntry{index: parseContent(f[4], f[7])}
			s.dirty[recs[i]] = &dirtyEntry{head: parseContent(f[3], f[6]), renamedTo: f[9]}
		case strings.HasPrefix(rec, "? "):
			p := rec[2:]
			if s.dirty[p] == nil {
				s.dirty[p] = &dirtyEntry{}
			}
			s.dirty[p].untracked = true
		case strings.HasPrefix(rec, "! "):
			s.ignored[rec[2:]] = true
		case strings.HasPrefix(rec, "u "):
			c.fatalf("unmerged entry %q: no case makes a conflict", rec)
		}
	}
	s.disk, s.raw = c.walk()
	return s
}

// walk reads the files on disk: their content, and their bytes.
func (c *propCase) walk() (map[string]content, map[string][]byte) {
	disk, raw := map[string]content{}, map[string][]byte{}
	err := filepath.WalkDir(c.dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.dir, full)
		p := filepath.ToSlash(rel)
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(b))
		h.Write(b)
		mode := uint32(0o100644)
		if fi.Mode()&0o100 != 0 {
			mode = 0o100755
		}
		disk[p], raw[p] = content{id: hex.EncodeToString(h.Sum(nil)), mode: mode}, b
		return nil
	})
	if err != nil {
		c.fatalf("reading the work tree: %v", err)
	}
	return disk, raw
}

// emptyTree is what an unborn HEAD or a missing merge base compares as.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// diffTree maps each path whose content differs between two commits ("":
// none) to its content in the first and in the second.
func (c *propCase) diffTree(a, b string) map[string][2]content {
	out := map[string][2]content{}
	if a == "" {
		a = emptyTree
	}
	if b == "" {
		b = emptyTree
	}
	recs := strings.Split(c.git("diff-tree", "-r", "-z", "--no-renames", a, b), "\x00")
	for i := 0; i+1 < len(recs); i += 2 { // :mA mB idA idB S NUL path
		f := strings.Fields(strings.TrimPrefix(recs[i], ":"))
		out[recs[i+1]] = [2]content{parseContent(f[0], f[2]), parseContent(f[1], f[3])}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (c *propCase) run() {
	ctx := context.Background()
	c.setup()
	c.work()
	if c.nested {
		c.setupNested()
	}
	keep := boundary.WithKeep(boundary.Keep{Ignored: true, Limits: boundary.KeepLimits{FileSize: 1 << 20, RunSize: 1 << 20, Files: 100}})
	prev, err := boundary.Take(ctx, c.dir, boundary.WithRun("test"), keep)
	if err != nil {
		c.fatalf("earlier boundary: %v", err)
	}
	before := c.read()
	for p := range before.ignored {
		if p != "local.env" {
			c.fatalf("ignored files at the earlier boundary: %v", before.ignored)
		}
	}
	nestedBefore := c.readNested()
	// Nothing is ignored yet: the earlier snapshot holds every file on
	// disk (w), and the paths git status lists are the dirty ones.
	var dirtyNames, untracked []string
	delete(before.dirty, "sub/")
	for _, p := range sortedKeys(before.dirty) {
		dirtyNames = append(dirtyNames, p)
		if e := before.dirty[p]; !e.head.present() && !e.index.present() {
			untracked = append(untracked, p)
		}
	}
	c.logf("--- the earlier boundary (dirty: %q) ---", dirtyNames)

	c.agent(dirtyNames, untracked)

	cur, err := boundary.Take(ctx, c.dir, boundary.WithTrack(prev.PathNames()...), boundary.WithPrev(prev), boundary.WithRun("test"), keep)
	if err != nil {
		c.fatalf("later boundary: %v", err)
	}
	v := Compare(prev, cur)
	after := c.read()
	delete(after.dirty, "sub/")
	// The later snapshot is the work tree as git add -A records it with
	// the run's ignore rules (those of the earlier boundary: none, or
	// *.env), whatever rules the agent added; a path the earlier snapshot
	// held stays in it even when ignored now. Its dirty paths are those
	// git status lists, and the files the agent's rules ignore.
	tracked := map[string]bool{} // in the index now: never ignored
	for _, p := range strings.Split(c.git("ls-files", "-z"), "\x00") {
		tracked[p] = true
	}
	runIgnored := func(p string) bool {
		return c.envRule && strings.HasSuffix(p, ".env") && !tracked[p] && !(before.disk[p].present() && !before.ignored[p])
	}
	// A path dirty at the earlier boundary and on disk then that the run's
	// rules ignore (a committed local.env moved away by git mv, then
	// written again) is one both boundaries keep beside their trees: its
	// content counts.
	now := func(p string) content {
		if d, ok := after.disk[p]; ok && (!runIgnored(p) || before.dirty[p] != nil && before.disk[p].present()) {
			return d
		}
		return content{}
	}
	dirtyNow := map[string]bool{}
	for p := range after.dirty {
		dirtyNow[p] = true
	}
	// A file on disk that the index does not track is untracked to the
	// run's rules, whatever git's say now (a directory the agent's `*`
	// ignores is listed as one by git status).
	for p := range after.disk {
		if !tracked[p] && !runIgnored(p) && now(p).present() && !strings.HasPrefix(p, "sub/") {
			dirtyNow[p] = true
		}
	}
	for p := range after.dirty {
		if runIgnored(p) && after.dirty[p].untracked {
			delete(dirtyNow, p)
		}
	}
	// Where the guard looks for content that left its path: every path
	// dirty now, every path dirty before, and, when HEAD moved, every path
	// the move changed; each with its content in the later snapshot.
	seen := map[string]bool{}
	for p := range dirtyNow {
		seen[p] = true
	}
	for p := range before.dirty {
		seen[p] = true
	}
	headMoved := before.head != after.head
	var moves map[string][2]content
	if headMoved {
		moves = c.diffTree(before.head, after.head)
		for p := range moves {
			seen[p] = true
		}
	}
	elsewhere := func(p string, w content) bool {
		if !w.present() {
			return false
		}
		for q := range seen {
			if q != p && now(q) == w {
				return true
			}
		}
		return false
	}

	// The guard's rules for each path dirty at the earlier boundary.
	want := map[string]Outcome{}
	lost := map[string]content{} // each discarded path's lost content
	for p, e := range before.dirty {
		w, h, i, cn := before.disk[p], e.head, e.index, now(p)
		switch {
		case cn == w && dirtyNow[p]:
			want[p] = Untouched
		case cn == w:
			want[p] = Committed
		case cn == h, cn == i && w != h:
			want[p] = Discarded
			if elsewhere(p, w) {
				want[p] = Moved
			}
		default:
			want[p] = Changed
		}
	}
	// The old side of a staged rename whose new side's content came back
	// to it: the rename undone, nothing lost.
	for p, e := range before.dirty {
		to := e.renamedTo
		if to == "" || want[p] != Discarded || before.disk[p].present() || want[to] != Moved || now(p) != before.disk[to] {
			continue
		}
		want[p] = Moved
	}
	for p, o := range want {
		if o == Discarded {
			lost[p] = before.disk[p]
		}
	}
	// HEAD rewritten: the earlier HEAD is neither an ancestor of HEAD nor
	// on a branch or tag. Each path the dropped commits changed (from the
	// fork point) and HEAD no longer holds is judged. An unborn HEAD had
	// nothing to rewrite.
	rewritten := false
	if headMoved && before.head != "" && after.head != "" {
		_, err := c.gitErr("merge-base", "--is-ancestor", before.head, after.head)
		rewritten = err != nil && c.git("for-each-ref", "--contains="+before.head, "refs/heads/", "refs/tags/", "refs/remotes/") == ""
	}
	if rewritten {
		fork := ""
		if mb, err := c.gitErr("merge-base", before.head, after.head); err == nil {
			fork = strings.TrimSpace(mb)
		}
		for p, d := range c.diffTree(fork, before.head) {
			f, pc := d[0], d[1]
			if _, changed := moves[p]; !changed {
				continue // HEAD still holds it
			}
			cn := now(p)
			if _, ok := before.dirty[p]; ok {
				// Uncommitted work on a path the rewrite took back to the
				// fork point.
				if want[p] == Changed && cn == f && !elsewhere(p, before.disk[p]) {
					want[p] = Discarded
					lost[p] = before.disk[p]
				}
				continue
			}
			if before.disk[p] != pc {
				c.fatalf("%q: clean at the earlier boundary, but %v on disk and %v at HEAD", p, before.disk[p], pc)
			}
			switch {
			case cn == pc && dirtyNow[p]:
				want[p] = Untouched
			case cn == pc:
				want[p] = Committed
			case cn == f && elsewhere(p, pc):
				want[p] = Moved
			case cn == f:
				want[p] = Discarded
				lost[p] = pc
			default:
				want[p] = Changed
			}
		}
	}

	// The user's ignored file: kept beside the trees. Gone from disk, it
	// is discarded (or moved, when its content is elsewhere); changed, it
	// is worked on; as it was, nothing is said.
	if before.ignored["local.env"] {
		w := before.disk["local.env"]
		switch d, ok := after.disk["local.env"]; {
		case ok && d == w:
		case ok:
			want["local.env"] = Changed
		case elsewhere("local.env", w):
			want["local.env"] = Moved
		default:
			want["local.env"] = Discarded
			lost["local.env"] = w
		}
	}
	// The nested repository's uncommitted work, judged in there by the
	// same rules (its own boundaries keep it): only discards are reported.
	nestedLost := c.nestedOracle(nestedBefore)
	for p, w := range nestedLost {
		want["sub/"+p] = Discarded
		lost["sub/"+p] = w
	}
	delete(want, "sub")

	// The verdict is the oracle's: every outcome, the block, the lost list.
	got := map[string]Outcome{}
	for _, r := range v.Paths {
		if r.Path != "sub" {
			got[r.Path] = r.Outcome
		}
	}
	var diffs []string
	for _, p := range sortedKeys(got) {
		if _, ok := want[p]; !ok {
			want[p] = "(none)"
		}
	}
	for _, p := range sortedKeys(want) {
		if want[p] != got[p] {
			var h, i content
			if e := before.dirty[p]; e != nil {
				h, i = e.head, e.index
			}
			diffs = append(diffs, fmt.Sprintf("%q: guard %q, oracle %q (was %v, head %v, index %v, now %v)",
				p, got[p], want[p], before.disk[p], h, i, now(p)))
		}
	}
	if len(diffs) > 0 || v.HeadRewritten != rewritten {
		c.fatalf("%s\nrewritten: guard %v, oracle %v\n%s", v.Summary(), v.HeadRewritten, rewritten, strings.Join(diffs, "\n"))
	}
	if v.Blocked() != (len(lost) > 0) {
		c.fatalf("%s: blocked %v, oracle lost %q", v.Summary(), v.Blocked(), sortedKeys(lost))
	}
	var lostPaths []string
	for _, l := range v.Lost {
		lostPaths = append(lostPaths, l.Path)
		// Lost is the earlier content; Base what the path was reverted
		// to, which it holds now.
		if w := lost[l.Path]; l.Lost.Hash != w.id || uint32(l.Lost.Mode) != w.mode {
			c.fatalf("%q: lost %+v, oracle %v", l.Path, l.Lost, w)
		}
		if strings.HasPrefix(l.Path, "sub/") {
			continue // the nested repository's: checked after restore
		}
		if b := now(l.Path); l.Base.Hash != b.id || uint32(l.Base.Mode) != b.mode {
			c.fatalf("%q: base %+v, but it holds %v", l.Path, l.Base, b)
		}
	}
	sort.Strings(lostPaths)
	if strings.Join(lostPaths, "\x00") != strings.Join(sortedKeys(lost), "\x00") {
		c.fatalf("lost %q, oracle %q", lostPaths, sortedKeys(lost))
	}
	if !v.Blocked() {
		return
	}

	// Everything lost comes back from the boundary commits alone, byte for
	// byte, after the reflog is expired and garbage collected.
	c.git("reflog", "expire", "--expire=now", "--all")
	c.git("gc", "-q", "--prune=now")
	if res, err := boundary.Restore(ctx, c.dir, v.Lost, true); err != nil {
		c.fatalf("restore: %v (%+v)", err, res)
	}
	// Restore writes the lost paths and nothing else.
	restored, _ := c.walk()
	for p, d := range restored {
		if _, ok := lost[p]; !ok && d != after.disk[p] {
			c.fatalf("%q: restore changed it from %v to %v, but it was not lost", p, after.disk[p], d)
		}
	}
	for p := range after.disk {
		if _, ok := restored[p]; !ok {
			if _, isLost := lost[p]; !isLost {
				c.fatalf("%q: restore removed it, but it was not lost", p)
			}
		}
	}
	for _, l := range v.Lost {
		w := lost[l.Path]
		fi, err := os.Lstat(c.full(l.Path))
		if !w.present() {
			if !errors.Is(err, fs.ErrNotExist) {
				c.fatalf("%q: a lost deletion, still there after restore (%v)", l.Path, err)
			}
			continue
		}
		b, rerr := os.ReadFile(c.full(l.Path))
		if err != nil || rerr != nil {
			c.fatalf("%q after restore: %v %v", l.Path, err, rerr)
		}
		exec := fi.Mode()&0o100 != 0
		if !bytes.Equal(b, before.raw[l.Path]) || exec != (w.mode == 0o100755) {
			c.fatalf("%q after restore: %q exec=%v, want %q exec=%v", l.Path, b, exec, before.raw[l.Path], w.mode == 0o100755)
		}
		if strings.HasPrefix(l.Path, "sub/") && l.Repo != "sub" {
			c.fatalf("%q: lost in repository %q, want sub", l.Path, l.Repo)
		}
	}
}

// nestedContent is what the agent writes to a file of the nested
// repository: the name is in it, so no content is ever at two of its
// paths (the oracle need not look for moves in there).
func nestedContent(rt *rapid.T, name, label string) string {
	return name + " " + rapid.SampledFrom([]string{"base", "work 1", "work 2", "work 3"}).Draw(rt, label) + "\n"
}

// setupNested makes the nested repository at sub/ (sub.txt committed in
// it) and leaves uncommitted work in it: sub.txt edited, n.txt new, or
// both.
func (c *propCase) setupNested() {
	c.git("init", "-q", "sub")
	c.write("sub/sub.txt", "sub.txt base\n", false)
	c.git("-C", "sub", "add", "sub.txt")
	c.git("-C", "sub", "commit", "-q", "-m", "nested")
	switch rapid.IntRange(0, 2).Draw(c.rt, "nested-work") {
	case 0:
		c.write("sub/sub.txt", nestedContent(c.rt, "sub.txt", "nested-edit"), false)
	case 1:
		c.write("sub/n.txt", nestedContent(c.rt, "n.txt", "nested-new"), false)
	default:
		c.write("sub/sub.txt", nestedContent(c.rt, "sub.txt", "nested-edit"), false)
		c.write("sub/n.txt", nestedContent(c.rt, "n.txt", "nested-new"), false)
	}
	c.logf("nested repository sub/ with uncommitted work")
}

// nestedMove is one move of the agent inside the nested repository.
func (c *propCase) nestedMove() {
	rt := c.rt
	name := rapid.SampledFrom(nestedNames).Draw(rt, "nested-path")
	switch rapid.IntRange(0, 5).Draw(rt, "nested-move") {
	case 0:
		c.write("sub/"+name, nestedContent(rt, name, "nested-content"), false)
		c.logf("write sub/%s", name)
	case 1:
		os.Remove(c.full("sub/" + name))
		c.logf("rm sub/%s", name)
	case 2:
		c.try("-C", "sub", "checkout", "-q", "--", ".")
	case 3:
		c.try("-C", "sub", "clean", "-q", "-fdx")
	case 4:
		c.try("-C", "sub", "reset", "-q", "--hard")
	case 5:
		c.try("-C", "sub", "add", "-A")
		c.try("-C", "sub", "commit", "-q", "-m", "nested work")
	}
}

// nestedState is what the oracle reads of the nested repository: its
// dirty paths (with HEAD's content) and the content of its files.
type nestedState struct {
	dirty map[string]content // path -> its content at HEAD
	disk  map[string]content
}

// readNested reads the nested repository's state (nil without one).
func (c *propCase) readNested() *nestedState {
	if !c.nested {
		return nil
	}
	if _, err := os.Lstat(c.full("sub/.git")); err != nil {
		return nil
	}
	s := &nestedState{dirty: map[string]content{}, disk: map[string]content{}}
	for _, rec := range strings.Split(c.git("-C", "sub", "status", "--porcelain=v2", "-z", "--untracked-files=all"), "\x00") {
		switch {
		case strings.HasPrefix(rec, "1 "):
			f := strings.SplitN(rec, " ", 9)
			s.dirty[f[8]] = parseContent(f[3], f[6])
		case strings.HasPrefix(rec, "? "):
			s.dirty[rec[2:]] = content{}
		}
	}
	disk, _ := c.walk()
	for p, d := range disk {
		if rest, ok := strings.CutPrefix(p, "sub/"); ok {
			s.disk[rest] = d
		}
	}
	return s
}

// nestedOracle is what the guard must find discarded in the nested
// repository since before (the earlier boundary): each path dirty then
// that holds its HEAD content now (absent for a new file), with the
// content lost. A nested repository gone is a concern, not judged.
func (c *propCase) nestedOracle(before *nestedState) map[string]content {
	after := c.readNested()
	if before == nil || after == nil {
		return nil
	}
	out := map[string]content{}
	for p, h := range before.dirty {
		w, now := before.disk[p], after.disk[p]
		if now != w && now == h {
			out[p] = w
		}
	}
	return out
}
