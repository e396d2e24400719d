package gitobj

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/implloop/implloop/internal/gitcmd"
)

// MaxFileBlob is the largest file BlobFiles stores in process; git
// stores a larger one.
const MaxFileBlob = 32 << 20

// Repo is where objects go and how git runs when it writes them: what the
// caller knows already (from its own `git rev-parse`), so that opening a
// Writer starts no git.
type Repo struct {
	// Dir is where git runs when it writes (a work tree, or a git
	// directory).
	Dir string
	// GitDir is the work tree's git directory (for its config.worktree),
	// CommonDir the repository's common directory (objects/ and config).
	// Without CommonDir, git writes.
	GitDir, CommonDir string
	// Hash is the repository's object format, when the caller knows it
	// (HashKnown); else the Writer writes only when no configuration
	// names one.
	Hash      Hash
	HashKnown bool
	// Env is added to git's environment (later entries win), as
	// gitcmd.Options.Env.
	Env []string
}

// Writer writes objects into one repository: in process when that is
// what git would do, else with git.
type Writer struct {
	repo    Repo
	env     map[string]string // the environment git would run with
	objects string            // "" when git writes
	// Fallback says why git writes every object ("" when the Writer
	// does).
	Fallback string
	commits  string // why git writes commits ("" when the Writer does)
	sync     bool
	mu       sync.Mutex   // guards zw: a Writer may be shared
	zw       *zlib.Writer // reused for each object
}

// Open decides how objects are written into r; it starts no process.
func Open(r Repo) *Writer {
	w := &Writer{repo: r, env: environ(r.Env)}
	w.Fallback = w.decide()
	if w.Fallback == "" {
		w.objects = filepath.Join(r.CommonDir, "objects")
	}
	return w
}

// InProcess reports whether the Writer writes objects itself.
func (w *Writer) InProcess() bool { return w.objects != "" }

// Hash is the object format objects are written in (meaningful when
// InProcess).
func (w *Writer) Hash() Hash { return w.repo.Hash }

func environ(extra []string) map[string]string {
	m := map[string]string{}
	for _, kv := range append(os.Environ(), extra...) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func (w *Writer) decide() string {
	r := w.repo
	if r.CommonDir == "" || !filepath.IsAbs(r.CommonDir) {
		return "the object directory is not known"
	}
	for _, k := range []string{"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH"} {
		if _, ok := w.env[k]; ok {
			return k + " is set"
		}
	}
	for _, kv := range r.Env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GIT_DIR" || k == "GIT_COMMON_DIR" || strings.HasPrefix(k, "GIT_CONFIG") {
			return k + " is given"
		}
	}
	if fi, err := os.Stat(filepath.Join(r.CommonDir, "objects")); err != nil || !fi.IsDir() {
		return "no objects directory in " + r.CommonDir
	}
	s := readSettings(r.GitDir, r.CommonDir, w.env)
	switch {
	case s.unsure != "":
		return "git's configuration: " + s.unsure
	case s.shared:
		return "core.sharedRepository may be set"
	case s.compat:
		return "extensions.compatObjectFormat may be set"
	case s.format && !r.HashKnown:
		return "the object format is not known"
	}
	w.repo.Hash, w.repo.HashKnown = r.Hash, true  // SHA-1 unless the caller said otherwise
	w.sync = s.fsync || runtime.GOOS == "windows" // Git for Windows flushes objects by default
	if s.encoding {
		w.commits = "i18n.commitEncoding may be set"
	}
	return ""
}

// run runs git for a fallback.
func (w *Writer) run(ctx context.Context, stdin []byte, env []string, args ...string) (string, error) {
	o := gitcmd.Options{Dir: w.repo.Dir, Env: append(w.repo.Env[:len(w.repo.Env):len(w.repo.Env)], env...)}
	if stdin != nil {
		o.Stdin = bytes.NewReader(stdin)
	}
	out, _, err := gitcmd.Run(ctx, o, args...)
	return strings.TrimRight(string(out), "\n"), err
}

// write writes one object in process; false when it could not (git
// then writes it, and says what is wrong if anything is).
func (w *Writer) write(kind string, body []byte) (string, bool) {
	id, err := w.loose(kind, body)
	return id, err == nil
}

func (w *Writer) loose(kind string, body []byte) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.zw == nil {
		w.zw, _ = zlib.NewWriterLevel(nil, zlib.BestSpeed)
	}
	return writeLoose(w.objects, w.repo.Hash, kind, body, w.sync, w.zw)
}

func (w *Writer) checkID(what, id string) error {
	if !gitcmd.IsObjectID(id) || w.repo.HashKnown && len(id) != w.repo.Hash.HexLen() {
		return fmt.Errorf("%s: %q is not an object id", what, id)
	}
	return nil
}

// Blob writes data as a blob (`git hash-object -w --no-filters --stdin`).
func (w *Writer) Blob(ctx context.Context, data []byte) (string, error) {
	if w.InProcess() {
		if id, ok := w.write("blob", data); ok {
			return id, nil
		}
	}
	id, err := w.run(ctx, data, nil, "hash-object", "-w", "--no-filters", "--stdin")
	if err != nil {
		return "", fmt.Errorf("writing a blob: %w", err)
	}
	return id, nil
}

// BlobFiles stores the bytes of each file (absolute paths; a symbolic
// link is followed, no filter is applied) as blobs and returns their ids
// in order, as `git hash-object -w --no-filters --stdin-paths` does. An
// error is git's (a *gitcmd.Error carries its stderr) when a file cannot
// be read.
func (w *Writer) BlobFiles(ctx context.Context, paths []string) ([]string, error) {
	ids := make([]string, len(paths))
	var rest []int
	for i, p := range paths {
		if w.InProcess() {
			if id, ok := w.blobFile(p); ok {
				ids[i] = id
				continue
			}
		}
		rest = append(rest, i)
	}
	if len(rest) == 0 {
		return ids, nil
	}
	var in bytes.Buffer
	for _, i := range rest {
		in.WriteString(gitcmd.QuotePath(paths[i]))
		in.WriteByte('\n')
	}
	out, err := w.run(ctx, in.Bytes(), nil, "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return nil, err
	}
	got := strings.Fields(out)
	if len(got) != len(rest) {
		return nil, fmt.Errorf("git hash-object: %d ids for %d files", len(got), len(rest))
	}
	for k, i := range rest {
		if err := w.checkID("git hash-object", got[k]); err != nil {
			return nil, err
		}
		ids[i] = got[k]
	}
	return ids, nil
}

func (w *Writer) blobFile(p string) (string, bool) {
	f, err := openFile(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > MaxFileBlob {
		return "", false
	}
	// git reads as many bytes as the file had when it looked.
	b := make([]byte, fi.Size())
	if _, err := readFull(f, b); err != nil {
		return "", false
	}
	return w.write("blob", b)
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := f.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Object writes an object of kind ("blob" or "commit") whose body the
// caller made whole (`git hash-object -t <kind> -w --stdin`).
func (w *Writer) Object(ctx context.Context, kind string, body []byte) (string, error) {
	switch kind {
	case "blob":
		return w.Blob(ctx, body)
	case "commit":
	default:
		return "", fmt.Errorf("writing a %s: not a kind gitobj writes", kind)
	}
	if w.InProcess() && w.commitShape(body) {
		if id, ok := w.write(kind, body); ok {
			return id, nil
		}
	}
	id, err := w.run(ctx, body, nil, "hash-object", "-t", kind, "-w", "--stdin")
	if err != nil {
		return "", fmt.Errorf("writing a %s: %w", kind, err)
	}
	return id, nil
}

// commitShape reports whether body has the header git's hash-object
// checks a commit for: a tree, parents, an author and a committer line,
// then the message.
func (w *Writer) commitShape(body []byte) bool {
	head, _, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok || bytes.IndexByte(body, 0) >= 0 {
		return false
	}
	lines := strings.Split(string(head), "\n")
	if len(lines) < 3 {
		return false
	}
	i := 0
	if t, ok := strings.CutPrefix(lines[i], "tree "); !ok || w.checkID("", t) != nil {
		return false
	}
	for i++; i < len(lines) && strings.HasPrefix(lines[i], "parent "); i++ {
		if w.checkID("", lines[i][len("parent "):]) != nil {
			return false
		}
	}
	return i+2 == len(lines) && strings.HasPrefix(lines[i], "author ") && strings.HasPrefix(lines[i+1], "committer ")
}

// Tree modes.
const (
	ModeFile    = 0o100644
	ModeExec    = 0o100755
	ModeSymlink = 0o120000
	ModeDir     = 0o040000
	ModeGitlink = 0o160000
)

// Entry is one entry of a tree.
type Entry struct {
	Mode uint32
	Name string
	ID   string
}

func kindOf(mode uint32) string {
	switch mode {
	case ModeDir:
		return "tree"
	case ModeGitlink:
		return "commit"
	}
	return "blob"
}

// treeBody checks entries and makes the tree object's body, entries in
// git's order.
func (w *Writer) treeBody(entries []Entry) ([]byte, error) {
	list := append([]Entry(nil), entries...)
	seen := make(map[string]bool, len(list))
	for _, e := range list {
		switch e.Mode {
		case ModeFile, ModeExec, ModeSymlink, ModeDir, ModeGitlink:
		default:
			return nil, fmt.Errorf("tree entry %q: mode %o", e.Name, e.Mode)
		}
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
			return nil, fmt.Errorf("tree entry %q: not a name git keeps in a tree", e.Name)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("tree entry %q: named twice", e.Name)
		}
		seen[e.Name] = true
		if err := w.checkID("tree entry "+strconv.Quote(e.Name), e.ID); err != nil {
			return nil, err
		}
	}
	sort.Slice(list, func(i, j int) bool { return TreeLess(list[i], list[j]) })
	var body bytes.Buffer
	for _, e := range list {
		raw, _ := hex.DecodeString(e.ID) // checked above
		body.WriteString(strconv.FormatUint(uint64(e.Mode), 8))
		body.WriteByte(' ')
		body.WriteString(e.Name)
		body.WriteByte(0)
		body.Write(raw)
	}
	return body.Bytes(), nil
}

// TreeLess is git's tree order: names compared byte by byte, a tree's as
// if it ended in '/'.
func TreeLess(a, b Entry) bool {
	ka, kb := a.Name, b.Name
	if a.Mode == ModeDir {
		ka += "/"
	}
	if b.Mode == ModeDir {
		kb += "/"
	}
	return ka < kb
}

// Tree writes a tree of entries (`git mktree`); the empty tree when there
// are none.
func (w *Writer) Tree(ctx context.Context, entries []Entry) (string, error) {
	ids, err := w.Trees(ctx, [][]Entry{entries})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// Trees writes several trees (`git mktree --batch`) and returns their ids
// in order.
func (w *Writer) Trees(ctx context.Context, trees [][]Entry) ([]string, error) {
	bodies := make([][]byte, len(trees))
	for i, t := range trees {
		b, err := w.treeBody(t)
		if err != nil {
			return nil, err
		}
		bodies[i] = b
	}
	ids := make([]string, len(trees))
	done := w.InProcess()
	for i := 0; done && i < len(bodies); i++ {
		ids[i], done = w.write("tree", bodies[i])
	}
	if done {
		return ids, nil
	}
	var in bytes.Buffer
	for _, t := range trees {
		for _, e := range t {
			fmt.Fprintf(&in, "%06o %s %s\t%s\x00", e.Mode, kindOf(e.Mode), e.ID, e.Name)
		}
		in.WriteByte(0)
	}
	out, err := w.run(ctx, in.Bytes(), nil, "mktree", "-z", "--batch")
	if err != nil {
		return nil, fmt.Errorf("writing trees: %w", err)
	}
	got := strings.Fields(out)
	if len(got) != len(trees) {
		return nil, fmt.Errorf("git mktree wrote %d trees of %d", len(got), len(trees))
	}
	for i := range got {
		if err := w.checkID("git mktree", got[i]); err != nil {
			return nil, err
		}
	}
	return got, nil
}

// Ident is who made a commit and when.
type Ident struct {
	Name, Email string
	// When is the commit's date, kept to the second with its zone's
	// offset; zero: now, in the local zone (GIT_AUTHOR_DATE and
	// GIT_COMMITTER_DATE, when set, are git's business).
	When time.Time
}

// Commit is an unsigned commit to write.
type Commit struct {
	Tree      string
	Parents   []string
	Author    Ident
	Committer Ident
	Message   string
}

// Commit writes c (`git commit-tree --no-gpg-sign`), its author and
// committer given through git's environment. Its tree and parents must
// be in the repository (as loose objects or in a pack, the Writer's or
// an alternate's), as git checks; where the Writer does not find one,
// git is asked, and refuses.
func (w *Writer) Commit(ctx context.Context, c Commit) (string, error) {
	if err := w.checkID("commit tree", c.Tree); err != nil {
		return "", err
	}
	for _, p := range c.Parents {
		if err := w.checkID("commit parent", p); err != nil {
			return "", err
		}
	}
	c.Parents = distinct(c.Parents) // as git commit-tree: "duplicate parent ... ignored"
	if w.InProcess() && w.commits == "" && w.present(c.Tree, c.Parents) {
		if body, ok := w.commitBody(c); ok {
			if id, ok := w.write("commit", body); ok {
				return id, nil
			}
		}
	}
	args := []string{"commit-tree", "--no-gpg-sign", c.Tree}
	for _, p := range c.Parents {
		args = append(args, "-p", p)
	}
	env := []string{"GIT_AUTHOR_NAME=" + c.Author.Name, "GIT_AUTHOR_EMAIL=" + c.Author.Email,
		"GIT_COMMITTER_NAME=" + c.Committer.Name, "GIT_COMMITTER_EMAIL=" + c.Committer.Email}
	if !c.Author.When.IsZero() {
		env = append(env, "GIT_AUTHOR_DATE="+DateOf(c.Author.When))
	}
	if !c.Committer.When.IsZero() {
		env = append(env, "GIT_COMMITTER_DATE="+DateOf(c.Committer.When))
	}
	id, err := w.run(ctx, []byte(c.Message), env, append(args, "-F", "-")...)
	if err != nil {
		return "", fmt.Errorf("writing a commit: %w", err)
	}
	if err := w.checkID("git commit-tree", id); err != nil {
		return "", err
	}
	return id, nil
}

// SignedCommit writes c signed, in process, as `git commit-tree -S`
// writes it in a SHA-1 repository: sign is given the commit git would
// sign (c as Commit writes it) and returns the signature git's signing
// program would print, which is put in a "gpgsig" header, each of its
// lines after a space. ok is false when git must write it (the caller
// then runs `git commit-tree -S`): where Commit would not write c in
// process, in a repository whose objects are not SHA-1, or when sign
// says no.
func (w *Writer) SignedCommit(c Commit, sign func(payload []byte) ([]byte, bool)) (id string, ok bool) {
	if w.checkID("commit tree", c.Tree) != nil {
		return "", false
	}
	for _, p := range c.Parents {
		if w.checkID("commit parent", p) != nil {
			return "", false
		}
	}
	c.Parents = distinct(c.Parents)
	if !w.InProcess() || w.commits != "" || w.repo.Hash != SHA1 || !w.present(c.Tree, c.Parents) {
		return "", false
	}
	body, ok := w.commitBody(c)
	if !ok {
		return "", false
	}
	sig, ok := sign(body)
	if !ok || len(sig) == 0 || sig[len(sig)-1] != '\n' || bytes.IndexByte(sig, 0) >= 0 {
		return "", false
	}
	return w.write("commit", withSignature(body, sig))
}

// withSignature is commit body with sig in a "gpgsig" header at the end
// of its headers (commit.c add_header_signature: the header's name, then
// each line of sig after a space).
func withSignature(body, sig []byte) []byte {
	end := bytes.Index(body, []byte("\n\n")) + 1 // commitBody always has one
	var b bytes.Buffer
	b.Grow(len(body) + len(sig) + 64)
	b.Write(body[:end])
	b.WriteString("gpgsig")
	for line := range bytes.Lines(sig) {
		b.WriteByte(' ')
		b.Write(line)
	}
	b.Write(body[end:])
	return b.Bytes()
}

// distinct is ids without the repeats, in the order each first comes
// (git commit-tree ignores a parent named again).
func distinct(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		dup := false
		for _, o := range out {
			if o == id {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, id)
		}
	}
	return out
}

// present reports whether the object database holds tree as a tree and
// each of parents as a commit (git commit-tree refuses a tree or parent
// it does not have, peels a tag named as a parent, and refuses one of
// another type; where the Writer cannot tell, git is asked).
func (w *Writer) present(tree string, parents []string) bool {
	if typeOf(w.objects, w.repo.Hash, tree) != "tree" {
		return false
	}
	for _, id := range parents {
		if typeOf(w.objects, w.repo.Hash, id) != "commit" {
			return false
		}
	}
	return true
}

// DateOf is t as GIT_AUTHOR_DATE and GIT_COMMITTER_DATE give it to git
// for a commit to name it so (its second and its zone's offset).
func DateOf(t time.Time) string { return "@" + stamp(t) }

// stamp is a date as git writes it in a commit: seconds and offset.
func stamp(t time.Time) string {
	_, off := t.Zone()
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%d %c%02d%02d", t.Unix(), sign, off/3600, off%3600/60)
}

// commitBody is the commit git commit-tree would write for c; ok false
// when git might write something else.
func (w *Writer) commitBody(c Commit) ([]byte, bool) {
	now := time.Now()
	if c.Author.When.IsZero() || c.Committer.When.IsZero() {
		for _, k := range []string{"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"} {
			if _, set := w.env[k]; set {
				return nil, false
			}
		}
		if !localZoneKnown(w.env) {
			return nil, false
		}
	}
	ident := func(id Ident) (string, bool) {
		t := id.When
		if t.IsZero() {
			t = now
		}
		_, off := t.Zone()
		if !plain(id.Name) || !plain(id.Email) || t.Unix() < 0 || off%60 != 0 || off <= -100*3600 || off >= 100*3600 {
			return "", false
		}
		return id.Name + " <" + id.Email + "> " + stamp(t), true
	}
	author, ok1 := ident(c.Author)
	committer, ok2 := ident(c.Committer)
	if !ok1 || !ok2 || strings.IndexByte(c.Message, 0) >= 0 {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteString("tree " + c.Tree + "\n")
	for _, p := range c.Parents {
		b.WriteString("parent " + p + "\n")
	}
	b.WriteString("author " + author + "\ncommitter " + committer + "\n\n" + c.Message)
	if !gitUTF8(b.Bytes()) {
		return nil, false // git would convert it (from Latin-1)
	}
	return b.Bytes(), true
}

// localZoneKnown reports whether Go's local zone is the one git's C
// library will use: the same TZ as this process's (or none), and one Go
// can load (Go falls back to UTC where the C library reads a POSIX rule).
func localZoneKnown(env map[string]string) bool {
	tz, set := env["TZ"]
	own, ownSet := os.LookupEnv("TZ")
	if set != ownSet || tz != own {
		return false
	}
	if !set || tz == "" || tz == "UTC" {
		return true
	}
	_, err := time.LoadLocation(strings.TrimPrefix(tz, ":"))
	return err == nil
}

// plain reports whether git keeps s as it is in an identity: not empty,
// no character it strips at either end, none it removes inside.
func plain(s string) bool {
	if s == "" || crud(s[0]) || crud(s[len(s)-1]) {
		return false
	}
	return !strings.ContainsAny(s, "<>\n\x00")
}

// crud are the characters git strips from the ends of a name or an
// email (the widest list any git version used).
func crud(c byte) bool {
	return c <= 32 || strings.IndexByte(".,:;<>\"\\'", c) >= 0
}

// gitUTF8 is git's test of a commit's text (commit.c find_invalid_utf8):
// valid UTF-8 without surrogates, U+xxFFFE, U+xxFFFF or U+FDD0..U+FDEF.
func gitUTF8(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		if r >= 0x80 && (r&0xfffe == 0xfffe || r >= 0xfdd0 && r <= 0xfdef) {
			return false
		}
	}
	return true
}

// ErrNotInProcess is what a caller that must write in process (or not at
// all) gets when the Writer would run git.
var ErrNotInProcess = errors.New("objects are written by git here")

// Loose writes an object whose body the caller made (a tree it built
// from entries it checked) in process, or fails: ErrNotInProcess where
// git writes objects (the caller takes its long way, with git).
func (w *Writer) Loose(kind string, body []byte) (string, error) {
	if !w.InProcess() {
		return "", fmt.Errorf("%w: %s", ErrNotInProcess, w.Fallback)
	}
	return w.loose(kind, body)
}
