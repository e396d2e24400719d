package travel

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/crypto/ssh"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitobj"
)

// # Signing in process
//
// git signs a commit with SSH by writing it to a temporary file and
// running `ssh-keygen -Y sign -n git -f <user.signingKey> <file>`: two
// processes (about 8 ms of CPU together) for each signature, and a
// worker signs three for each task (its records with and without
// transcripts, and the seal of its push). When what ssh-keygen would do
// is certain, the commit is signed here instead, with the same key file
// and the same bytes: an Ed25519 signature is deterministic, so the
// commit is the very one git writes. That is when
//
//   - the worker learned its signing configuration (a pin), and it says
//     gpg.format ssh, ssh-keygen as the program, and a user.signingKey
//     that names a public key file, `.pub` (not a certificate's), by an
//     absolute path or ~/ (git reads a literal key, `key::` or `ssh-`,
//     from the agent);
//   - no SSH agent is named (SSH_AUTH_SOCK empty or unset: with one,
//     ssh-keygen asks the agent first, which may want a confirmation);
//   - the public key file is one line, an Ed25519 key read exactly;
//   - the private key file beside it (the name without `.pub`) is a
//     regular file that only its owner may read (ssh-keygen refuses one
//     that others can read), in OpenSSH's format, not encrypted, and
//     holds that key;
//   - the repository's objects are SHA-1 and git would write the
//     commit's text as gitobj writes it.
//
// The signature is checked with the public key before it is used.
// Anything else is git's, as before.

// maxSSHKeyFile bounds a key file read for signing in process.
const maxSSHKeyFile = 64 << 10

// sshKeySigner is the user's SSH key, read to sign as ssh-keygen would.
type sshKeySigner struct {
	pub  ssh.PublicKey
	priv ed25519.PrivateKey
}

// sshSignerFor is the in-process signer for the configuration git signs
// with (cfg: configRegexp's keys as learned), nil when git must sign:
// see the section above. home is $HOME (for ~/), agent $SSH_AUTH_SOCK.
func sshSignerFor(cfg map[string]string, home, agent string) *sshKeySigner {
	if cfg["gpg.format"] != "ssh" || agent != "" {
		return nil
	}
	if v, ok := cfg["gpg.ssh.program"]; ok && v != "ssh-keygen" {
		return nil
	}
	path := cfg["user.signingkey"]
	if rest, ok := strings.CutPrefix(path, "~/"); ok && home != "" {
		path = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(path) || !strings.HasSuffix(path, ".pub") || strings.HasSuffix(path, "-cert.pub") || strings.ContainsRune(path, '%') {
		return nil
	}
	pubData, ok := readSmall(path, false)
	if !ok {
		return nil
	}
	pub, ok := parseEd25519PublicFile(pubData)
	if !ok {
		return nil
	}
	privData, ok := readSmall(strings.TrimSuffix(path, ".pub"), true)
	if !ok || !bytes.HasPrefix(privData, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n")) {
		return nil
	}
	raw, err := ssh.ParseRawPrivateKey(privData)
	if err != nil {
		return nil
	}
	priv, ok := raw.(*ed25519.PrivateKey)
	if !ok || len(*priv) != ed25519.PrivateKeySize {
		return nil
	}
	mine, err := ssh.NewPublicKey(priv.Public())
	if err != nil || !bytes.Equal(mine.Marshal(), pub.Marshal()) {
		return nil
	}
	return &sshKeySigner{pub: pub, priv: *priv}
}

// readSmall reads a key file of at most maxSSHKeyFile bytes; private: it
// must be a regular file that no one but its owner may read, as
// ssh-keygen wants a private key file of the user's to be.
func readSmall(path string, private bool) ([]byte, bool) {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, false // not opened: a FIFO would wait for a writer
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	if private {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
			return nil, false
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSSHKeyFile+1))
	if err != nil || len(data) > maxSSHKeyFile {
		return nil, false
	}
	return data, true
}

// parseEd25519PublicFile reads a public key file that is one line: the
// type ssh-ed25519, its key in strict base64 naming the same type, and
// a comment (printable ASCII) or none.
func parseEd25519PublicFile(data []byte) (ssh.PublicKey, bool) {
	line, ok := bytes.CutSuffix(data, []byte("\n"))
	if !ok || bytes.ContainsAny(line, "\n\r\t") {
		return nil, false
	}
	fields := strings.SplitN(string(line), " ", 3)
	if len(fields) < 2 || fields[0] != ssh.KeyAlgoED25519 {
		return nil, false
	}
	if len(fields) == 3 {
		for _, c := range []byte(fields[2]) {
			if c < 0x20 || c > 0x7e {
				return nil, false
			}
		}
	}
	blob, err := base64.StdEncoding.Strict().DecodeString(fields[1])
	if err != nil {
		return nil, false
	}
	pub, err := ssh.ParsePublicKey(blob)
	if err != nil || pub.Type() != ssh.KeyAlgoED25519 || !bytes.Equal(pub.Marshal(), blob) {
		return nil, false
	}
	return pub, true
}

// sign is what `ssh-keygen -Y sign -n git` prints for payload: an SSH
// signature (PROTOCOL.sshsig, SHA-512), armored as ssh-keygen armors it.
func (k *sshKeySigner) sign(payload []byte) ([]byte, bool) {
	digest := sha512.Sum512(payload)
	signed := []byte("SSHSIG")
	for _, f := range [][]byte{[]byte("git"), nil, []byte("sha512"), digest[:]} {
		signed = sshString(signed, f)
	}
	sig := ed25519.Sign(k.priv, signed)
	if k.pub.Verify(signed, &ssh.Signature{Format: ssh.KeyAlgoED25519, Blob: sig}) != nil {
		return nil, false
	}
	sigBlob := sshString(sshString(nil, []byte(ssh.KeyAlgoED25519)), sig)
	blob := binary.BigEndian.AppendUint32([]byte("SSHSIG"), 1)
	for _, f := range [][]byte{k.pub.Marshal(), []byte("git"), nil, []byte("sha512"), sigBlob} {
		blob = sshString(blob, f)
	}
	b64 := base64.StdEncoding.EncodeToString(blob)
	var out bytes.Buffer
	out.WriteString(sshSigBegin)
	for len(b64) > 0 {
		n := min(len(b64), 70)
		out.WriteString(b64[:n])
		out.WriteByte('\n')
		b64 = b64[n:]
	}
	out.WriteString(sshSigEnd + "\n")
	return out.Bytes(), true
}

// signedCommit writes c signed as `git commit-tree -S` signs it with
// pin's configuration (nil: git's now) in dirs.Root: in process where
// the section above allows, else with git, whose error it returns.
func signedCommit(ctx context.Context, dirs cache.Dirs, pin *gitConfig, c gitobj.Commit) (string, error) {
	if pin != nil {
		if k := sshSignerFor(pin.read, os.Getenv("HOME"), os.Getenv("SSH_AUTH_SOCK")); k != nil {
			if id, ok := objects(dirs).SignedCommit(c, k.sign); ok {
				return id, nil
			}
		}
	}
	args := []string{"commit-tree", "-S", c.Tree}
	for _, p := range c.Parents {
		args = append(args, "-p", p)
	}
	return git(ctx, dirs.Root, []byte(c.Message), identEnvOf(c), pin.with(append(args, "-F", "-")...)...)
}

// identEnvOf is the environment that makes git write c's author and
// committer (a zero date: git's now).
func identEnvOf(c gitobj.Commit) []string {
	var env []string
	for _, who := range []struct {
		prefix string
		id     gitobj.Ident
	}{{"GIT_AUTHOR_", c.Author}, {"GIT_COMMITTER_", c.Committer}} {
		if who.id.Name != "" || who.id.Email != "" {
			env = append(env, who.prefix+"NAME="+who.id.Name, who.prefix+"EMAIL="+who.id.Email)
		}
		if !who.id.When.IsZero() {
			env = append(env, who.prefix+"DATE="+gitobj.DateOf(who.id.When))
		}
	}
	return env
}
