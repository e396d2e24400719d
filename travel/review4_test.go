package travel

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitobj"
)

// review4Commit is the commit the review's tests sign.
func (l *signLab) review4Commit() gitobj.Commit {
	who := gitobj.Ident{Name: "CI Bot", Email: "ci@example.com", When: time.Unix(1796190000, 0).UTC()}
	return gitobj.Commit{Tree: l.tree, Author: who, Committer: who, Message: "implloop records of run r-1\n\nImplloop-Run: r-1\n"}
}

// agree signs c with signingKey as the worker's pinned configuration
// (learned after user.signingKey was set to it) both ways: signedCommit
// (in process where it decides so) and `git commit-tree -S` as its
// fallback runs it. It fails the test where they do not agree: one
// signed and the other failed, or two different commits. inProcess says
// whether signedCommit signed in process.
func (l *signLab) agree(t *testing.T, signingKey string, c gitobj.Commit) (inProcess bool) {
	t.Helper()
	ctx := context.Background()
	l.r.Git("config", "user.signingKey", signingKey)
	s, err := LearnSigning(ctx, l.r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// As a worker starts: its probe signed by git and in process.
	_ = CheckSelfTrust(ctx, l.dirs, &s)
	inProcess = s.pin().ssh != nil
	mine, myErr := signedCommit(ctx, l.dirs, s.pin(), c)
	args := []string{"commit-tree", "-S", c.Tree}
	for _, p := range c.Parents {
		args = append(args, "-p", p)
	}
	theirs, gitErr := git(ctx, l.r.Dir, []byte(c.Message), identEnvOf(c), s.pin().with(append(args, "-F", "-")...)...)
	switch {
	case (myErr == nil) != (gitErr == nil):
		t.Errorf("signedCommit (in process: %v): %s, %v; git commit-tree -S: %s, %v", inProcess, mine, myErr, theirs, gitErr)
	case myErr == nil && mine != theirs:
		t.Errorf("signedCommit (in process: %v) wrote %s, git %s", inProcess, mine, theirs)
	}
	return inProcess
}

// sshString appends s as an SSH string (a length, then the bytes).
func review4String(b, s []byte) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

// review4Key is an unencrypted OpenSSH Ed25519 private key file's
// parts, to write it as ssh-keygen does or otherwise.
type review4Key struct {
	envPub    []byte // the public key blob in the envelope
	check     uint32
	pub       []byte // the public key in the private section
	priv      []byte // seed and public key
	comment   string
	pad       []byte // nil: 1, 2, 3... to a multiple of 8
	trailing  []byte // after the private section
	lineWidth int    // 0: 70
}

// readReview4Key reads the parts of ssh-keygen's file.
func readReview4Key(t *testing.T, file []byte) review4Key {
	t.Helper()
	s := strings.TrimPrefix(string(file), "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	s = strings.TrimSuffix(s, "-----END OPENSSH PRIVATE KEY-----\n")
	blob, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(s, "\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	next := func() []byte {
		n := binary.BigEndian.Uint32(blob)
		v := blob[4 : 4+n]
		blob = blob[4+n:]
		return v
	}
	blob = blob[len("openssh-key-v1\x00"):]
	next()
	next()
	next()
	blob = blob[4:] // nkeys
	var k review4Key
	k.envPub = next()
	priv := next()
	blob = priv
	k.check = binary.BigEndian.Uint32(blob)
	blob = blob[8:]
	next() // type
	k.pub, k.priv, k.comment = next(), next(), string(next())
	return k
}

// file is k as a private key file.
func (k review4Key) file() []byte {
	var ps []byte
	ps = binary.BigEndian.AppendUint32(ps, k.check)
	ps = binary.BigEndian.AppendUint32(ps, k.check)
	ps = review4String(ps, []byte("ssh-ed25519"))
	ps = review4String(ps, k.pub)
	ps = review4String(ps, k.priv)
	ps = review4String(ps, []byte(k.comment))
	if k.pad == nil {
		for i := byte(1); len(ps)%8 != 0; i++ {
			ps = append(ps, i)
		}
	} else {
		ps = append(ps, k.pad...)
	}
	b := []byte("openssh-key-v1\x00")
	b = review4String(b, []byte("none"))
	b = review4String(b, []byte("none"))
	b = review4String(b, nil)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = review4String(b, k.envPub)
	b = review4String(b, ps)
	b = append(b, k.trailing...)
	b64 := base64.StdEncoding.EncodeToString(b)
	w := k.lineWidth
	if w == 0 {
		w = 70
	}
	var out bytes.Buffer
	out.WriteString("-----BEGIN OPENSSH PRIVATE KEY-----\n")
	for len(b64) > 0 {
		n := min(w, len(b64))
		out.WriteString(b64[:n] + "\n")
		b64 = b64[n:]
	}
	out.WriteString("-----END OPENSSH PRIVATE KEY-----\n")
	return out.Bytes()
}

// TestReview4PrivateKeyFilesOpenSSHRefuses: x/crypto/ssh reads private
// key files that OpenSSH's ssh-keygen refuses (sshkey_parse_private2,
// private2_uudecode, private2_decrypt): signedCommit signs those in
// process where `git commit-tree -S` fails.
func TestReview4PrivateKeyFilesOpenSSHRefuses(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	l := newSignLab(t)
	c := l.review4Commit()
	file, err := os.ReadFile(l.key)
	if err != nil {
		t.Fatal(err)
	}
	k := readReview4Key(t, file)
	if !bytes.Equal(k.file(), file) {
		t.Fatalf("the key's parts do not make ssh-keygen's file again:\n%s\n%s", k.file(), file)
	}
	other := readReview4Key(t, func() []byte {
		b, err := os.ReadFile(l.sigLab.key("other", "ed25519", 0))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}())
	pubLine, err := os.ReadFile(l.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	// A comment that makes the base64 end in padding, to flip the bits
	// past its last byte.
	padded := k
	for len(padded.file()) > 0 && !bytes.Contains(padded.file(), []byte("=\n-----END")) {
		padded.comment += "x"
	}
	nonCanonical := func() []byte {
		f := padded.file()
		i := bytes.Index(f, []byte("=\n-----END"))
		for f[i-1] == '=' {
			i--
		}
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		f[i-1] = alphabet[strings.IndexByte(alphabet, f[i-1])|1]
		return f
	}
	// cut is file with its last newline replaced by end.
	cut := func(file []byte, end string) []byte {
		return []byte(strings.TrimSuffix(string(file), "\n") + end)
	}
	with := func(f func(*review4Key)) []byte {
		kk := k
		f(&kk)
		return kk.file()
	}
	for _, v := range []struct {
		name string
		file []byte
	}{
		// Controls: as ssh-keygen writes them, both sign the same (the
		// others: ssh-keygen refuses them, and so does the key reader).
		{"as ssh-keygen wrote it", file},
		{"another comment", padded.file()},
		// PEM forms.
		{"no newline after the end line", cut(file, "")},
		{"CRLF after the end line", cut(file, "\r\n")},
		{"a space after the end line", cut(file, " \n")},
		{"a PEM header", bytes.Replace(file, []byte("-----\n"), []byte("-----\nComment: mine\n"), 1)},
		{"a broken block, then a good one", []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n!!!!\n-----END OPENSSH PRIVATE KEY-----\n" + string(file))},
		{"base64 with bits past its end", nonCanonical()},
		// The key's structure.
		{"another key in the envelope", with(func(k *review4Key) { k.envPub = other.envPub })},
		{"another public key in the private section", with(func(k *review4Key) { k.pub = other.pub })},
		{"a 33-byte public key in the private section", with(func(k *review4Key) { k.pub = append(slices.Clone(k.pub), 0) })},
		{"no padding to the cipher's block", with(func(k *review4Key) { k.pad = []byte{}; k.comment += "x" })},
		{"data after the private section", with(func(k *review4Key) { k.trailing = []byte{0, 0, 0, 0} })},
		{"a NUL in the comment", with(func(k *review4Key) { k.comment = "ci\x00laptop" })},
	} {
		t.Run(v.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "id")
			if err := os.WriteFile(p, v.file, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p+".pub", pubLine, 0o644); err != nil {
				t.Fatal(err)
			}
			in := l.agree(t, p+".pub", c)
			control := strings.HasPrefix(v.name, "as ssh-keygen") || v.name == "another comment"
			if in != control {
				t.Errorf("signed in process: %v", in)
			}
			if _, ok := parseOpenSSHEd25519(v.file, review4String(review4String(nil, []byte("ssh-ed25519")), k.pub)); ok != control {
				t.Errorf("the key reader read it: %v", ok)
			}
		})
	}
}

// TestReview4TildeDotDotThroughSymlink: git reads user.signingKey
// "~/link/../id.pub" as $HOME + "/link/../id.pub", which the kernel
// resolves through the link (its target's parent); sshSignerFor cleans
// the path first (filepath.Join), so it reads $HOME/id.pub: another key.
func TestReview4TildeDotDotThroughSymlink(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	l := newSignLab(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	elsewhere := t.TempDir()
	if err := os.Mkdir(filepath.Join(elsewhere, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "sub"), filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	// $HOME/id is one key, elsewhere/id (what git reaches) another.
	mine := l.sigLab.key("mine", "ed25519", 0)
	theirs := l.sigLab.key("theirs", "ed25519", 0)
	for dst, src := range map[string]string{filepath.Join(home, "id"): mine, filepath.Join(elsewhere, "id"): theirs} {
		for _, suffix := range []string{"", ".pub"} {
			b, err := os.ReadFile(src + suffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !l.agree(t, "~/link/../id.pub", l.review4Commit()) {
		t.Log("not signed in process")
	}
	// The same with the .. in HOME (git takes HOME's real path).
	t.Setenv("HOME", filepath.Join(home, "link")+"/..")
	if !l.agree(t, "~/id.pub", l.review4Commit()) {
		t.Log("not signed in process")
	}
}

// TestReview4NoPasswdEntry: ssh-keygen refuses to run for a user the
// system does not know ("No user exists for uid N": getpwuid fails at
// its start), as in a container run with --user <uid>; git cannot sign
// then, but signedCommit signs in process. As root, the test runs
// itself again as such a user (the keys made for it by root).
func TestReview4NoPasswdEntry(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	if key := os.Getenv("REVIEW4_KEY"); key != "" {
		// The user without an entry.
		l := &signLab{sigLab: newSigLab(t), key: key}
		l.r.Git("config", "user.name", "CI Bot")
		l.r.Git("config", "user.email", "ci@example.com")
		l.r.Git("config", "gpg.format", "ssh")
		var err error
		if l.dirs, err = cache.StateDir(l.r.Dir); err != nil {
			t.Fatal(err)
		}
		if !l.agree(t, key+".pub", l.review4Commit()) {
			t.Log("not signed in process")
		}
		return
	}
	const uid = 4242
	if os.Getuid() != 0 {
		t.Skip("needs root, to run as a user the system does not know")
	}
	if _, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		t.Skipf("uid %d has an entry", uid)
	}
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	dir, err := os.MkdirTemp("", "review4-nopasswd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	key := filepath.Join(dir, "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "travel.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, key, key + ".pub", bin} {
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^TestReview4NoPasswdEntry$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REVIEW4_KEY="+key, "HOME="+dir, "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("as uid %d: %v\n%s", uid, err, out)
	}
}

// TestReview4SSHKeygenOnPath: gpg.ssh.program unset (or "ssh-keygen")
// is pinned as "ssh-keygen", which git finds on PATH; where that is not
// OpenSSH's (a wrapper that asks for a touch, refuses, or signs with
// another key) git's commit is not the one signed in process.
func TestReview4SSHKeygenOnPath(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	l := newSignLab(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "ssh-keygen"), []byte("#!/bin/sh\necho 'refused: touch your key' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	l.agree(t, l.key+".pub", l.review4Commit())
}
