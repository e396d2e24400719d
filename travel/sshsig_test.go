package travel

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/implloop/implloop/internal/gittest"
)

// sigLab is a repository whose git verifies SSH signatures against an
// allowed signers file of keys made by ssh-keygen.
type sigLab struct {
	t    *testing.T
	r    *gittest.Repo
	dir  string // where the keys are
	tree string // the empty tree
}

func newSigLab(t *testing.T) *sigLab {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	r := gittest.New(t)
	l := &sigLab{t: t, r: r, dir: t.TempDir()}
	l.tree = strings.TrimSpace(r.Git("hash-object", "-t", "tree", "-w", "/dev/null"))
	return l
}

// key makes a key pair (ssh-keygen -t typ -b bits: bits 0 for the
// type's default) and returns the private key's path.
func (l *sigLab) key(name, typ string, bits int) string {
	l.t.Helper()
	p := filepath.Join(l.dir, name)
	args := []string{"-q", "-t", typ, "-N", "", "-C", name + "@laptop", "-f", p}
	if bits > 0 {
		args = append(args, "-b", strconv.Itoa(bits))
	}
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	return p
}

// pub is the public key line of key (as ssh-keygen wrote it).
func (l *sigLab) pub(key string) string {
	l.t.Helper()
	b, err := os.ReadFile(key + ".pub")
	if err != nil {
		l.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// allow writes the allowed signers file and points git at it.
func (l *sigLab) allow(lines ...string) string {
	l.t.Helper()
	p := filepath.Join(l.dir, "allowed_signers")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		l.t.Fatal(err)
	}
	l.r.Git("config", "gpg.ssh.allowedSignersFile", p)
	return p
}

// signed is a commit of the empty tree signed by key, as git signs.
func (l *sigLab) signed(key, msg string) string {
	l.t.Helper()
	return strings.TrimSpace(l.r.Git("-c", "gpg.format=ssh", "-c", "user.signingKey="+key+".pub", "commit-tree", "-S", l.tree, "-m", msg))
}

// raw is a commit's object.
func (l *sigLab) raw(id string) []byte {
	l.t.Helper()
	return []byte(l.r.Git("cat-file", "commit", id))
}

// write writes raw as a commit object as it is (--literally) and returns
// its id.
func (l *sigLab) write(raw []byte) string {
	l.t.Helper()
	cmd := exec.Command("git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin")
	cmd.Dir, cmd.Env, cmd.Stdin = l.r.Dir, l.r.Env(), bytes.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		l.t.Fatalf("hash-object: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// sshSign is ssh-keygen's signature of payload with key in namespace ns.
func (l *sigLab) sshSign(key, ns string, payload []byte) []byte {
	l.t.Helper()
	cmd := exec.Command("ssh-keygen", "-Y", "sign", "-n", ns, "-f", key)
	cmd.Stdin = bytes.NewReader(payload)
	out, err := cmd.Output()
	if err != nil {
		l.t.Fatalf("ssh-keygen -Y sign: %v", err)
	}
	return out
}

// withSig is payload (a commit without signature) with sig as its
// gpgsig header, where git puts it (after the last header).
func withSig(payload, sig []byte) []byte {
	head, msg, _ := bytes.Cut(payload, []byte("\n\n"))
	var b bytes.Buffer
	b.Write(head)
	b.WriteString("\ngpgsig ")
	b.Write(bytes.ReplaceAll(bytes.TrimSuffix(sig, []byte("\n")), []byte("\n"), []byte("\n ")))
	b.WriteString("\n\n")
	b.Write(msg)
	return b.Bytes()
}

// check verifies commits in process and with git alone, and fails the
// test where the process decided what git did not say; it returns which
// the process decided.
func (l *sigLab) check(commits ...string) []bool {
	l.t.Helper()
	ctx := context.Background()
	in := make([]signature, len(commits))
	_, at, err := verifyInProcess(ctx, l.r.Dir, commits, nil, in)
	if err != nil {
		l.t.Fatal(err)
	}
	byGit, err := verifyWithGit(ctx, l.r.Dir, commits, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	decided := make([]bool, len(commits))
	for i := range decided {
		decided[i] = true
	}
	for _, i := range at {
		decided[i] = false
	}
	for i := range commits {
		if decided[i] && in[i] != byGit[i] {
			l.t.Errorf("commit %d (%s): in process %+v, git %+v", i, commits[i], in[i], byGit[i])
		}
	}
	return decided
}

// TestSSHSignaturesInProcessAsGit: the plain cases (Ed25519, ECDSA and
// RSA keys, a namespaces option allowing git) are decided in process,
// with git's answer; a signature in another namespace, a key not
// allowed or allowed for files only, an altered commit, a signature
// moved to another commit, two signatures, another hash's signature,
// trailing bytes: git's to say, and never G in process.
func TestSSHSignaturesInProcessAsGit(t *testing.T) {
	l := newSigLab(t)
	alice, bob, carol := l.key("alice", "ed25519", 0), l.key("bob", "ecdsa", 256), l.key("carol", "rsa", 2048)
	erin, dave, mallory := l.key("erin", "ed25519", 0), l.key("dave", "ed25519", 0), l.key("mallory", "ed25519", 0)
	l.allow(
		"# the team",
		"alice@example.com "+l.pub(alice),
		"bob@example.com "+l.pub(bob),
		"\tcarol@example.com   "+l.pub(carol),
		"",
		`erin@example.com namespaces="file,git" `+l.pub(erin),
		`dave@example.com namespaces="file" `+l.pub(dave),
	)
	good := []string{l.signed(alice, "a"), l.signed(bob, "b"), l.signed(carol, "c"), l.signed(erin, "e")}
	if got := l.check(good...); !all(got) {
		t.Fatalf("plain signatures decided in process: %v", got)
	}

	a := l.raw(good[0])
	payload, sig, ok := splitSignedCommit(a)
	if !ok {
		t.Fatal("alice's commit has no signature")
	}
	altered := withSig(bytes.Replace(payload, []byte("\n\na"), []byte("\n\nb"), 1), sig)
	moved := withSig(l.raw(strings.TrimSpace(l.r.Git("commit-tree", l.tree, "-m", "other"))), sig)
	twice := withSig(a, sig)
	otherHash := bytes.Replace(a, []byte("\ngpgsig "), []byte("\ngpgsig-sha256 "), 1)
	both := withSig(otherHash, sig)
	trailing := bytes.Replace(a, []byte("-----END SSH SIGNATURE-----\n"), []byte("-----END SSH SIGNATURE-----\n x\n"), 1)
	inFile := withSig(payload, l.sshSign(alice, "file", payload))
	bad := []string{
		l.signed(mallory, "m"), // not allowed
		l.signed(dave, "d"),    // allowed for files only
		l.write(altered), l.write(moved), l.write(twice), l.write(otherHash),
		l.write(both), l.write(trailing), l.write(inFile),
		strings.TrimSpace(l.r.Git("commit-tree", l.tree, "-m", "unsigned")),
	}
	for i, d := range l.check(bad...) {
		if d {
			t.Errorf("bad commit %d decided in process", i)
		}
	}
	// The same signature over the same payload, as git writes it back:
	// decided (withSig is git's layout).
	if got := l.check(l.write(withSig(payload, sig))); !got[0] {
		t.Error("alice's signature as withSig lays it out: not decided in process")
	}
}

func all(b []bool) bool {
	for _, v := range b {
		if !v {
			return false
		}
	}
	return true
}

// TestSSHVerifierForLeavesToGit: configurations and allowed signers files
// the in-process check does not read exactly are git's.
func TestSSHVerifierForLeavesToGit(t *testing.T) {
	dir := t.TempDir()
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOPgBmD4mmSEcOhTb0oJRt6cqWvNhPPmb2wqzhBqcXy4"
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain", "a@example.com "+key+" comment\n")
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "allowed"), []byte("a@example.com "+key+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  map[string]string
		want bool
	}{
		{"plain", map[string]string{"gpg.ssh.allowedsignersfile": plain}, true},
		{"home", map[string]string{"gpg.ssh.allowedsignersfile": "~/allowed"}, true},
		{"ssh-keygen named", map[string]string{"gpg.ssh.allowedsignersfile": plain, "gpg.ssh.program": "ssh-keygen"}, true},
		{"no file", map[string]string{}, false},
		{"dev null", map[string]string{"gpg.ssh.allowedsignersfile": os.DevNull}, false},
		{"missing", map[string]string{"gpg.ssh.allowedsignersfile": filepath.Join(dir, "none")}, false},
		{"relative", map[string]string{"gpg.ssh.allowedsignersfile": "allowed"}, false},
		{"other user's home", map[string]string{"gpg.ssh.allowedsignersfile": "~root/allowed"}, false},
		// git lets the kernel resolve .. (after a symbolic link, another
		// directory's file): left to git.
		{"dot dot", map[string]string{"gpg.ssh.allowedsignersfile": "~/x/../allowed"}, false},
		{"not a regular file", map[string]string{"gpg.ssh.allowedsignersfile": dir}, false},
		{"another program", map[string]string{"gpg.ssh.allowedsignersfile": plain, "gpg.ssh.program": "/usr/bin/ssh-keygen"}, false},
		{"revocations", map[string]string{"gpg.ssh.allowedsignersfile": plain, "gpg.ssh.revocationfile": plain}, false},
		{"min trust", map[string]string{"gpg.ssh.allowedsignersfile": plain, "gpg.mintrustlevel": "fully"}, false},
	}
	for _, c := range cases {
		if got := sshVerifierFor(c.cfg, home) != nil; got != c.want {
			t.Errorf("%s: in process %v, want %v", c.name, got, c.want)
		}
	}
	files := map[string]bool{
		"a@example.com " + key + "\n# c\n\n":                                 true,
		`a@example.com namespaces="git" ` + key:                              true,
		"a@example.com " + key + "\r\n":                                      false,
		"*@example.com " + key:                                               false,
		"a@example.com,b@example.com " + key:                                 false,
		"!a@example.com " + key:                                              false,
		`"a b" ` + key:                                                       false,
		"a@example.com cert-authority " + key:                                false,
		`a@example.com valid-after="20200101" ` + key:                        false,
		`a@example.com namespaces="git",valid-after="2020" ` + key:           false,
		`a@example.com namespaces="g*" ` + key:                               false,
		`a@example.com NAMESPACES="git" ` + key:                              false,
		"a@example.com " + strings.Replace(key, "ssh-ed25519", "ssh-rsa", 1): false,
		"a@example.com ssh-ed25519 notbase64!":                               false,
		"a@example.com sk-ssh-ed25519@openssh.com AAAA":                      false,
		"a@example.com":                                                      false,
	}
	for text, want := range files {
		if _, got := parseAllowedSigners([]byte(text)); got != want {
			t.Errorf("%q: read %v, want %v", text, got, want)
		}
	}
}

// TestSSHSignatureInProcessProperty: a signed commit with bytes changed,
// added or dropped anywhere is never G in process unless git says G of
// it too, with the same signer, key and author.
func TestSSHSignatureInProcessProperty(t *testing.T) {
	l := newSigLab(t)
	alice := l.key("alice", "ed25519", 0)
	l.allow("alice@example.com " + l.pub(alice))
	orig := l.raw(l.signed(alice, "the records\n\nwith a body"))
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		raw := bytes.Clone(orig)
		for range rapid.IntRange(1, 3).Draw(rt, "edits") {
			at := rapid.IntRange(0, len(raw)-1).Draw(rt, "at")
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				raw[at] = rapid.Byte().Draw(rt, "byte")
			case 1:
				raw = append(raw[:at], raw[at+1:]...)
			default:
				raw = append(raw[:at], append([]byte{rapid.SampledFrom([]byte(" \n-=ag")).Draw(rt, "ins")}, raw[at:]...)...)
			}
		}
		id := l.write(raw)
		in := make([]signature, 1)
		rest, _, err := verifyInProcess(ctx, l.r.Dir, []string{id}, nil, in)
		if err != nil {
			rt.Fatal(err)
		}
		if len(rest) == 1 {
			return // git's to say
		}
		byGit, err := verifyWithGit(ctx, l.r.Dir, []string{id}, nil)
		if err != nil {
			rt.Fatal(err)
		}
		if in[0] != byGit[0] {
			rt.Fatalf("in process %+v, git %+v, of %q", in[0], byGit[0], raw)
		}
	})
}

// FuzzParseAllowedSigners: any file is read or left to git, without a
// panic; a file read names principals of the plain form only.
func FuzzParseAllowedSigners(f *testing.F) {
	f.Add([]byte("a@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOPgBmD4mmSEcOhTb0oJRt6cqWvNhPPmb2wqzhBqcXy4 c\n"))
	f.Add([]byte(`a@example.com namespaces="git,file" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOPgBmD4mmSEcOhTb0oJRt6cqWvNhPPmb2wqzhBqcXy4`))
	f.Add([]byte("# x\n\n\t b@x cert-authority ssh-rsa AAAA\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, ok := parseAllowedSigners(data)
		if !ok {
			return
		}
		for _, l := range a.lines {
			if !plainWord(l.principal, "@+") {
				t.Fatalf("principal %q read", l.principal)
			}
		}
	})
}

// fuzzSigned is a commit signed by git with fuzzKey (ssh-keygen's), the
// fuzz target's seed: what verifies in process.
const (
	fuzzKey    = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINicKW/fgF7Qh26AXG3xBFcTp1DaqkC6gUgfDXS5jY9b"
	fuzzSigned = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor F <f@x> 1700000000 +0000\ncommitter F <f@x> 1700000000 +0000\ngpgsig -----BEGIN SSH SIGNATURE-----\n U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAg2Jwpb9+AXtCHboBcbfEEVxOnUN\n qqQLqBSB8NdLmNj1sAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5\n AAAAQM1DjBMzztFLxT9Xt9kopBb0nmza2KfdqwO0u/A5BbBiFbpq/oZIiMvtFF0ldzT+uK\n kMyDnrzGVBjUxW06/bWAU=\n -----END SSH SIGNATURE-----\n\nthe records\n"
)

// FuzzSSHSignedCommit: any commit object is checked in process without
// a panic, and none verifies but the signed seed itself: a byte changed,
// added or dropped anywhere (payload, header, armor, blob) is git's to
// say, or fails.
func FuzzSSHSignedCommit(f *testing.F) {
	a, ok := parseAllowedSigners([]byte("f@example.com " + fuzzKey + "\n"))
	if !ok {
		f.Fatal("the seed's allowed signers file is not read")
	}
	if _, ok := a.verify([]byte(fuzzSigned)); !ok {
		f.Fatal("the seed does not verify in process")
	}
	f.Add([]byte(fuzzSigned))
	f.Add([]byte(strings.Replace(fuzzSigned, "the records", "the recordz", 1)))
	f.Add([]byte("tree x\ngpgsig a\n b\ngpgsig-sha256 c\n\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		payload, sig, ok := splitSignedCommit(raw)
		if ok && len(payload)+len(sig) > len(raw) {
			t.Fatalf("payload and signature longer than the commit")
		}
		if s, ok := a.verify(raw); ok && string(raw) != fuzzSigned {
			t.Fatalf("a commit other than the signed one verified: %+v\n%q", s, raw)
		}
	})
}
