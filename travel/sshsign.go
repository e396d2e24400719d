package travel

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"os/user"
	"strconv"
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
//     that others can read), byte for byte as ssh-keygen writes an
//     unencrypted Ed25519 key (parseOpenSSHEd25519), and holds that key;
//   - the system knows the user (ssh-keygen will not start without a
//     passwd entry);
//   - the repository's objects are SHA-1 and git would write the
//     commit's text as gitobj writes it.
//
// And it must have been seen to hold: a worker's start signs its
// self-trust probe with git (CheckSelfTrust), signs the same commit in
// process, and signs in process from then on only when the two are the
// same commit, and only while the key files hold what they held then
// and PATH's ssh-keygen is the same file (sshProof): a uid without a
// passwd entry (ssh-keygen will not run), a wrapper named ssh-keygen
// first on PATH, a key file OpenSSH reads otherwise than this code, all
// leave every signature to git.
//
// The signature is checked with the public key before it is used, and
// the private key is wiped once the commit is signed. Anything else is
// git's, as before.

// maxSSHKeyFile bounds a key file read for signing in process.
const maxSSHKeyFile = 64 << 10

// sshKeySigner is the user's SSH key, read to sign as ssh-keygen would.
type sshKeySigner struct {
	pub  ssh.PublicKey
	priv ed25519.PrivateKey
	// files is a digest of the key files as read (sshProof).
	files [sha256.Size]byte
}

// wipe clears the private key.
func (k *sshKeySigner) wipe() { clear(k.priv) }

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
	path, ok := userPath(cfg["user.signingkey"], home)
	if !ok || !strings.HasSuffix(path, ".pub") || strings.HasSuffix(path, "-cert.pub") || strings.ContainsRune(path, '%') {
		return nil
	}
	if _, err := user.LookupId(strconv.Itoa(os.Getuid())); err != nil {
		return nil // ssh-keygen: "No user exists for uid N"
	}
	pubData, ok := readSmall(path, maxSSHKeyFile, false)
	if !ok {
		return nil
	}
	pub, ok := parseEd25519PublicFile(pubData)
	if !ok {
		return nil
	}
	privData, ok := readSmall(strings.TrimSuffix(path, ".pub"), maxSSHKeyFile, true)
	if !ok {
		return nil
	}
	defer clear(privData)
	priv, ok := parseOpenSSHEd25519(privData, pub.Marshal())
	if !ok {
		return nil
	}
	h := sha256.New()
	h.Write(pubData)
	h.Write([]byte{0})
	h.Write(privData)
	k := &sshKeySigner{pub: pub, priv: priv}
	h.Sum(k.files[:0])
	return k
}

// parseOpenSSHEd25519 reads a private key file written as ssh-keygen
// writes an unencrypted Ed25519 key (PROTOCOL.key): its armor, base64 at
// 70 columns, the envelope (cipher and KDF none, one key, whose public
// key is pubBlob), the private section (two equal check numbers, the key
// type, the public key, the seed and public key, a comment without NUL,
// padded 1, 2, 3... to 8 bytes), nothing else. ok false for anything
// else, which OpenSSH might read otherwise.
func parseOpenSSHEd25519(file, pubBlob []byte) (ed25519.PrivateKey, bool) {
	const begin, end = "-----BEGIN OPENSSH PRIVATE KEY-----\n", "-----END OPENSSH PRIVATE KEY-----\n"
	body, ok := bytes.CutPrefix(file, []byte(begin))
	if !ok {
		return nil, false
	}
	body, ok = bytes.CutSuffix(body, []byte(end))
	if !ok {
		return nil, false
	}
	blob, err := base64.StdEncoding.Strict().DecodeString(string(bytes.ReplaceAll(body, []byte("\n"), nil)))
	if err != nil || !bytes.Equal(armor70(blob), body) {
		return nil, false
	}
	defer clear(blob)
	rest, ok := bytes.CutPrefix(blob, []byte("openssh-key-v1\x00"))
	if !ok {
		return nil, false
	}
	var cipher, kdf, kdfOptions, envPub, section []byte
	for _, f := range []*[]byte{&cipher, &kdf, &kdfOptions} {
		if *f, rest, ok = sshField(rest); !ok {
			return nil, false
		}
	}
	if string(cipher) != "none" || string(kdf) != "none" || len(kdfOptions) != 0 || len(rest) < 4 || binary.BigEndian.Uint32(rest) != 1 {
		return nil, false
	}
	if envPub, rest, ok = sshField(rest[4:]); !ok || !bytes.Equal(envPub, pubBlob) {
		return nil, false
	}
	if section, rest, ok = sshField(rest); !ok || len(rest) != 0 || len(section)%8 != 0 || len(section) < 8 {
		return nil, false
	}
	if binary.BigEndian.Uint32(section) != binary.BigEndian.Uint32(section[4:]) {
		return nil, false
	}
	var typ, pub, priv, comment []byte
	rest = section[8:]
	for _, f := range []*[]byte{&typ, &pub, &priv, &comment} {
		if *f, rest, ok = sshField(rest); !ok {
			return nil, false
		}
	}
	wantPub := sshString(sshString(nil, []byte(ssh.KeyAlgoED25519)), pub)
	if string(typ) != ssh.KeyAlgoED25519 || len(pub) != ed25519.PublicKeySize || !bytes.Equal(wantPub, pubBlob) ||
		len(priv) != ed25519.PrivateKeySize || !bytes.Equal(priv[32:], pub) || bytes.IndexByte(comment, 0) >= 0 {
		return nil, false
	}
	for i, b := range rest {
		if int(b) != i+1 || i >= 7 {
			return nil, false
		}
	}
	key := ed25519.NewKeyFromSeed(priv[:32])
	if !bytes.Equal(key[32:], pub) {
		clear(key)
		return nil, false
	}
	return key, true
}

// armor70 is blob in base64 as OpenSSH armors a key or a signature:
// lines of 70 characters, each ended by a newline.
func armor70(blob []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString(blob)
	var out bytes.Buffer
	for len(b64) > 0 {
		n := min(len(b64), 70)
		out.WriteString(b64[:n])
		out.WriteByte('\n')
		b64 = b64[n:]
	}
	return out.Bytes()
}

// readSmall reads a regular file of at most limit bytes (a key, an
// allowed signers file); private: one that no one but its owner may
// read, as ssh-keygen wants a private key file of the user's to be.
func readSmall(path string, limit int64, private bool) ([]byte, bool) {
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
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil || int64(len(data)) > limit {
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
	return plainPublicKey(ssh.KeyAlgoED25519, fields[1])
}

// sign is what `ssh-keygen -Y sign -n git` prints for payload: an SSH
// signature (PROTOCOL.sshsig, SHA-512), armored as ssh-keygen armors it.
func (k *sshKeySigner) sign(payload []byte) ([]byte, bool) {
	digest := sha512.Sum512(payload)
	signed := sshSigned("git", nil, "sha512", digest[:])
	sig := ed25519.Sign(k.priv, signed)
	if k.pub.Verify(signed, &ssh.Signature{Format: ssh.KeyAlgoED25519, Blob: sig}) != nil {
		return nil, false
	}
	sigBlob := sshString(sshString(nil, []byte(ssh.KeyAlgoED25519)), sig)
	blob := binary.BigEndian.AppendUint32([]byte("SSHSIG"), 1)
	for _, f := range [][]byte{k.pub.Marshal(), []byte("git"), nil, []byte("sha512"), sigBlob} {
		blob = sshString(blob, f)
	}
	var out bytes.Buffer
	out.WriteString(sshSigBegin)
	out.Write(armor70(blob))
	out.WriteString(sshSigEnd + "\n")
	return out.Bytes(), true
}

// signedCommit writes c signed as `git commit-tree -S` signs it with
// pin's configuration (nil: git's now) in dirs.Root: in process where
// the section above allows, else with git, whose error it returns.
func signedCommit(ctx context.Context, dirs cache.Dirs, pin *gitConfig, c gitobj.Commit) (string, error) {
	if pin != nil && pin.ssh != nil {
		if k := sshSignerFor(pin.read, os.Getenv("HOME"), os.Getenv("SSH_AUTH_SOCK")); k != nil {
			id, ok := "", pin.ssh.holds(k)
			if ok {
				id, ok = objects(dirs).SignedCommit(c, k.sign)
			}
			k.wipe()
			if ok {
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

// sshProof is what a worker's start saw git sign as it signs in process
// (proveSSH): the key files as they were then, and the ssh-keygen PATH
// named.
type sshProof struct {
	files  [sha256.Size]byte
	keygen keygenID
}

// keygenID is the file `ssh-keygen` names on PATH ("" when none).
type keygenID struct {
	path        string
	dev, ino    uint64
	size, mtime int64
}

func keygenNow() keygenID {
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		return keygenID{}
	}
	fi, err := os.Stat(p)
	if err != nil {
		return keygenID{path: p}
	}
	id := keygenID{path: p, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), st.Ino
	}
	return id
}

// holds reports whether k was read from the key files the proof saw,
// with the same ssh-keygen on PATH.
func (p *sshProof) holds(k *sshKeySigner) bool {
	return p != nil && k.files == p.files && keygenNow() == p.keygen
}

// proveSSH signs c in process and sets pin's proof when that is the
// commit git signed as gitID: from then on the worker signs in process
// while nothing the proof names changed (the section above).
func proveSSH(dirs cache.Dirs, pin *gitConfig, c gitobj.Commit, gitID string) {
	if pin == nil {
		return
	}
	pin.ssh = nil
	keygen := keygenNow()
	k := sshSignerFor(pin.read, os.Getenv("HOME"), os.Getenv("SSH_AUTH_SOCK"))
	if k == nil {
		return
	}
	defer k.wipe()
	if id, ok := objects(dirs).SignedCommit(c, k.sign); ok && id == gitID && keygen == keygenNow() {
		pin.ssh = &sshProof{files: k.files, keygen: keygen}
	}
}
