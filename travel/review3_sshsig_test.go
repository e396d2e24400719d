package travel

import (
	"bytes"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Review findings on the in-process SSH signature check (sshsig.go):
// each test builds a commit, or an allowed signers file, on which the
// in-process check says G and git (with ssh-keygen) does not. None is a
// forgery an outsider can make: each needs an allowed signer's key to
// sign an unusual payload, or the user's own file to be unusual. They
// break the rule the check is built on (G in process only where git
// says G).

// unsignedRaw is an unsigned commit of the empty tree (its object).
func (l *sigLab) unsignedRaw(msg string) []byte {
	l.t.Helper()
	return l.raw(strings.TrimSpace(l.r.Git("commit-tree", l.tree, "-m", msg)))
}

// TestReviewSSHSigReservedField: ssh-keygen verifies over an empty
// reserved field whatever the signature blob carries
// (sshsig_wrap_verify: sshbuf_put_string(toverify, NULL, 0)); verify
// puts the blob's reserved bytes into what it checks, so a signature
// made over a non-empty reserved field is G in process and B in git.
func TestReviewSSHSigReservedField(t *testing.T) {
	l := newSigLab(t)
	alice := l.key("alice", "ed25519", 0)
	l.allow("alice@example.com " + l.pub(alice))
	payload := l.unsignedRaw("m")
	pem, err := os.ReadFile(alice)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	reserved := []byte("x")
	h := sha512.Sum512(payload)
	signed := []byte("SSHSIG")
	for _, f := range [][]byte{[]byte("git"), reserved, []byte("sha512"), h[:]} {
		signed = sshString(signed, f)
	}
	s, err := signer.Sign(rand.Reader, signed)
	if err != nil {
		t.Fatal(err)
	}
	blob := binary.BigEndian.AppendUint32([]byte("SSHSIG"), 1)
	for _, f := range [][]byte{signer.PublicKey().Marshal(), []byte("git"), reserved, []byte("sha512"), ssh.Marshal(s)} {
		blob = sshString(blob, f)
	}
	b64 := base64.StdEncoding.EncodeToString(blob)
	var armored strings.Builder
	armored.WriteString(sshSigBegin)
	for len(b64) > 70 {
		armored.WriteString(b64[:70] + "\n")
		b64 = b64[70:]
	}
	armored.WriteString(b64 + "\n" + sshSigEnd + "\n")
	l.check(l.write(withSig(payload, []byte(armored.String())))) // fails: in process G, git B
}

// TestReviewSSHSigTwoAuthorLines: git's %an is the last "author" header
// (pretty.c parse_commit_header keeps the last), commitAuthor the first:
// the same G with another author.
func TestReviewSSHSigTwoAuthorLines(t *testing.T) {
	l := newSigLab(t)
	alice := l.key("alice", "ed25519", 0)
	l.allow("alice@example.com " + l.pub(alice))
	payload := bytes.Replace(l.unsignedRaw("m"), []byte("\ncommitter "), []byte("\nauthor Mallory <m@example.com> 1 +0000\ncommitter "), 1)
	l.check(l.write(withSig(payload, l.sshSign(alice, "git", payload)))) // fails: authors differ
}

// TestReviewSSHSigAllowedKeyNonCanonicalBase64: parseAllowedSigners
// decodes a key's base64 leniently (StdEncoding, not Strict), so a line
// whose last base64 character carries non-zero padding bits is read as
// the key; OpenSSH's b64_pton refuses it (the bits are a "subliminal
// channel"), ssh-keygen skips the line, and git says the key is not
// allowed (U) where the process says G.
func TestReviewSSHSigAllowedKeyNonCanonicalBase64(t *testing.T) {
	l := newSigLab(t)
	bob := l.key("bob", "ecdsa", 256) // 104-byte blob: one '=' of padding
	f := strings.Fields(l.pub(bob))
	b64 := f[1]
	if !strings.HasSuffix(b64, "=") || strings.HasSuffix(b64, "==") {
		t.Fatalf("want one padding character: %s", b64)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	last := strings.IndexByte(alphabet, b64[len(b64)-2])
	odd := b64[:len(b64)-2] + string(alphabet[last|1]) + "="
	if odd == b64 {
		odd = b64[:len(b64)-2] + string(alphabet[last|2]) + "="
	}
	if d, err := base64.StdEncoding.DecodeString(odd); err != nil || base64.StdEncoding.EncodeToString(d) != b64 {
		t.Fatalf("not the same key: %v", err)
	}
	l.allow("bob@example.com " + f[0] + " " + odd)
	// The line is left to git (ssh-keygen skips it): nothing decided in
	// process (l.check fails the test where it decides otherwise).
	if got := l.check(l.signed(bob, "b")); got[0] {
		t.Fatalf("decided in process: the file's line is one OpenSSH refuses")
	}
}

// TestReviewSSHSigAuthorEncoding: git's %an is the author as
// i18n.logOutputEncoding has it (git log re-encodes a commit whose
// "encoding" header names another, to UTF-8 by default); commitAuthor
// gives the raw bytes.
func TestReviewSSHSigAuthorEncoding(t *testing.T) {
	l := newSigLab(t)
	alice := l.key("alice", "ed25519", 0)
	l.allow("alice@example.com " + l.pub(alice))
	payload := l.unsignedRaw("m")
	payload = bytes.Replace(payload, []byte("\nauthor implloop test "), []byte("\nauthor J\xf6rg "), 1)
	payload = bytes.Replace(payload, []byte("\n\n"), []byte("\nencoding ISO-8859-1\n\n"), 1)
	l.check(l.write(withSig(payload, l.sshSign(alice, "git", payload)))) // fails: authors differ
}
