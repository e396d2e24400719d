package travel

import (
	"bytes"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
)

// # SSH signatures checked in process
//
// git verifies an SSH signature with two ssh-keygen processes
// (`-Y find-principals`, then `-Y verify`), about 6 ms of CPU each: a
// worker that pulls its fleet's results at the end, and every pull of a
// team's runs, paid that for each seal and run it verified. So
// verifyCommits first checks the plain case itself, and leaves every
// other case to git as before:
//
//   - git would run ssh-keygen, as ssh-keygen, with no revoked keys and no
//     gpg.minTrustLevel, against an allowed signers file named by an
//     absolute path (or ~/), every line of which is read here exactly:
//     one principal with no patterns, at most the namespaces option (a
//     plain list), an Ed25519, ECDSA or RSA key and a comment;
//   - the commit is SHA-1 and carries one `gpgsig` header and no other
//     signature header (git's payload is then the commit without it),
//     one author and no encoding header;
//   - the signature is an SSH signature (PROTOCOL.sshsig) read exactly:
//     namespace "git", an empty reserved field, SHA-256 or SHA-512, a
//     plain key (no certificate, no security key), a signature
//     algorithm ssh-keygen accepts for it;
//   - its key is on exactly one line of the file, which allows "git".
//
// Then the signature is checked with golang.org/x/crypto/ssh, and when
// it verifies, the answer is git's G, with the principal and key
// fingerprint git would print. Nothing else is ever decided here: a
// signature that does not verify, a key that is not allowed, anything
// unusual goes to git, whose answer stands. The tests hold this
// against ssh-keygen itself.

// sshAllowed is an allowed signers file read for in-process checks.
type sshAllowed struct {
	// lines are the file's keys (their wire form) and what each line
	// says; a key on two lines is marked ambiguous (git decides).
	lines map[string]sshAllowedLine
}

type sshAllowedLine struct {
	principal string
	git       bool // the line allows the namespace "git"
	ambiguous bool // the key is on more than one line
}

// maxAllowedSigners bounds the file read in process (git reads a larger
// one).
const maxAllowedSigners = 1 << 20

// sshVerifierFor is the in-process checker for the configuration git
// verifies with (cfg: configRegexp's keys as `git config` lists them,
// lowercased), nil when git must verify: see the section above. home is
// $HOME, for a path starting with ~/.
func sshVerifierFor(cfg map[string]string, home string) *sshAllowed {
	if v, ok := cfg["gpg.ssh.program"]; ok && v != "ssh-keygen" {
		return nil
	}
	if v := cfg["gpg.ssh.revocationfile"]; v != "" && v != os.DevNull {
		return nil
	}
	if _, ok := cfg["gpg.mintrustlevel"]; ok {
		return nil
	}
	path, ok := userPath(cfg["gpg.ssh.allowedsignersfile"], home)
	if !ok || path == os.DevNull {
		return nil
	}
	data, ok := readSmall(path, maxAllowedSigners, false)
	if !ok {
		return nil
	}
	a, ok := parseAllowedSigners(data)
	if !ok {
		return nil
	}
	return a
}

// parseAllowedSigners reads an allowed signers file (ssh-keygen(1),
// ALLOWED SIGNERS) when every line is of the plain form the section
// above names; ok false otherwise.
func parseAllowedSigners(data []byte) (a *sshAllowed, ok bool) {
	a = &sshAllowed{lines: map[string]sshAllowedLine{}}
	for line := range strings.SplitSeq(string(data), "\n") {
		for _, c := range []byte(line) {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return nil, false
			}
		}
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) < 3 || !plainWord(f[0], "@+") {
			return nil, false
		}
		principal, rest := f[0], f[1:]
		git := true
		if v, ok := strings.CutPrefix(rest[0], `namespaces="`); ok {
			list, ok := strings.CutSuffix(v, `"`)
			if !ok || list == "" {
				return nil, false
			}
			git = false
			for ns := range strings.SplitSeq(list, ",") {
				if !plainWord(ns, "") {
					return nil, false
				}
				git = git || ns == "git"
			}
			rest = rest[1:]
		}
		if len(rest) < 2 || !sshKeyType(rest[0]) {
			return nil, false // another option, or a key type not read here
		}
		pub, ok := plainPublicKey(rest[0], rest[1])
		if !ok {
			return nil, false
		}
		k := string(pub.Marshal())
		l, seen := a.lines[k]
		if seen {
			l.ambiguous = true
		} else {
			l = sshAllowedLine{principal: principal, git: git}
		}
		a.lines[k] = l
	}
	return a, true
}

// plainPublicKey reads a public key written as typ and base64 (a line
// of an allowed signers file, a .pub file) exactly: strict base64
// (OpenSSH refuses stray padding bits), a blob naming typ, and nothing
// the blob would not marshal to again.
func plainPublicKey(typ, b64 string) (ssh.PublicKey, bool) {
	blob, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return nil, false
	}
	pub, err := ssh.ParsePublicKey(blob)
	if err != nil || pub.Type() != typ || !bytes.Equal(pub.Marshal(), blob) {
		return nil, false
	}
	return pub, true
}

// userPath is a file named in git's configuration as git finds it: an
// absolute path, or ~/ and the rest joined to home as they are. ok is
// false for anything else, and for a path with . or .. in it, which the
// kernel resolves after a symbolic link where a cleaned path would not.
func userPath(p, home string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		p = strings.TrimSuffix(home, "/") + "/" + rest
	}
	return p, filepath.IsAbs(p) && filepath.Clean(p) == p
}

// sshSigned is the data an SSH signature signs (PROTOCOL.sshsig): the
// magic, the namespace, the reserved field, the hash's name and the
// message's digest.
func sshSigned(namespace string, reserved []byte, hash string, digest []byte) []byte {
	signed := []byte("SSHSIG")
	for _, f := range [][]byte{[]byte(namespace), reserved, []byte(hash), digest} {
		signed = sshString(signed, f)
	}
	return signed
}

// plainWord: letters, digits, '.', '_', '-' and the bytes of extra; no
// pattern characters, quotes or commas.
func plainWord(s, extra string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// sshKeyType: the plain key types checked in process.
func sshKeyType(t string) bool {
	switch t {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSA:
		return true
	}
	return false
}

// sshSigAlgo says whether ssh-keygen accepts signature algorithm algo
// for a key of type keyType (RSA: SHA-2 only).
func sshSigAlgo(keyType, algo string) bool {
	if keyType == ssh.KeyAlgoRSA {
		return algo == ssh.KeyAlgoRSASHA256 || algo == ssh.KeyAlgoRSASHA512
	}
	return algo == keyType
}

// verify is git's G for commit (its raw object, SHA-1), when the plain
// case holds and the signature verifies; ok false otherwise (git
// decides).
func (a *sshAllowed) verify(commit []byte) (sig signature, ok bool) {
	payload, armored, ok := splitSignedCommit(commit)
	if !ok {
		return signature{}, false
	}
	blob, ok := dearmorSSH(armored)
	if !ok {
		return signature{}, false
	}
	s, ok := parseSSHSig(blob)
	if !ok || s.namespace != "git" || len(s.reserved) != 0 {
		// ssh-keygen verifies over an empty reserved field, whatever
		// the blob holds.
		return signature{}, false
	}
	line, found := a.lines[string(s.pubKey)]
	if !found || line.ambiguous || !line.git {
		return signature{}, false
	}
	pub, err := ssh.ParsePublicKey(s.pubKey)
	if err != nil || !sshKeyType(pub.Type()) || !sshSigAlgo(pub.Type(), s.sig.Format) {
		return signature{}, false
	}
	if pub.Type() == ssh.KeyAlgoRSA {
		ck, ok := pub.(ssh.CryptoPublicKey)
		if !ok {
			return signature{}, false
		}
		rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey)
		if !ok || rk.N.BitLen() < 1024 || rk.N.BitLen() > 16384 {
			return signature{}, false
		}
	}
	var digest []byte
	switch s.hash {
	case "sha256":
		h := sha256.Sum256(payload)
		digest = h[:]
	case "sha512":
		h := sha512.Sum512(payload)
		digest = h[:]
	default:
		return signature{}, false
	}
	if pub.Verify(sshSigned(s.namespace, s.reserved, s.hash, digest), &s.sig) != nil {
		return signature{}, false
	}
	author, ok := commitAuthor(payload)
	if !ok {
		return signature{}, false
	}
	fp := ssh.FingerprintSHA256(pub)
	return signature{letter: "G", signer: line.principal, key: fp, author: author}, true
}

func sshString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// splitSignedCommit is git's parse_buffer_signed_by_header (commit.c)
// for a SHA-1 commit: the payload (the commit without its "gpgsig"
// header) and the signature; ok false when it has none, or has another
// signature header (gpgsig-sha256), which git leaves out of the payload
// too (git decides those).
func splitSignedCommit(buf []byte) (payload, sig []byte, ok bool) {
	const header = "gpgsig"
	inSig, saw := false, false
	for line := buf; len(line) > 0; {
		n := bytes.IndexByte(line, '\n') + 1
		if n == 0 {
			n = len(line)
		}
		switch {
		case inSig && line[0] == ' ':
			sig = append(sig, line[1:n]...)
		case bytes.HasPrefix(line, []byte(header+" ")):
			if saw {
				return nil, nil, false // two signatures: git's to read
			}
			sig = append(sig, line[len(header)+1:n]...)
			saw, inSig = true, true
		case bytes.HasPrefix(line, []byte(header)):
			return nil, nil, false // gpgsig-sha256, or another
		default:
			if line[0] == '\n' {
				n = len(line) // the message, whole
			}
			payload = append(payload, line[:n]...)
			inSig = false
		}
		line = line[n:]
	}
	return payload, sig, saw
}

const (
	sshSigBegin = "-----BEGIN SSH SIGNATURE-----\n"
	sshSigEnd   = "-----END SSH SIGNATURE-----"
)

// dearmorSSH is the signature blob of an armored SSH signature as git
// stores it: the begin line, base64 lines, the end line and its
// newline, nothing else.
func dearmorSSH(armored []byte) ([]byte, bool) {
	body, ok := bytes.CutPrefix(armored, []byte(sshSigBegin))
	if !ok {
		return nil, false
	}
	body, ok = bytes.CutSuffix(body, []byte(sshSigEnd+"\n"))
	if !ok || len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, false
	}
	b64 := bytes.ReplaceAll(body, []byte("\n"), nil)
	blob := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Strict().Decode(blob, b64)
	if err != nil {
		return nil, false
	}
	return blob[:n], true
}

// sshSig is a parsed SSH signature blob (PROTOCOL.sshsig).
type sshSig struct {
	pubKey    []byte
	namespace string
	reserved  []byte
	hash      string
	sig       ssh.Signature
}

// parseSSHSig reads an SSH signature blob exactly: the magic, version 1,
// its fields, a plain signature (no security key's extra fields), and
// nothing after them.
func parseSSHSig(b []byte) (s sshSig, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte("SSHSIG"))
	if !ok || len(rest) < 4 || binary.BigEndian.Uint32(rest) != 1 {
		return s, false
	}
	rest = rest[4:]
	var f [5][]byte
	for i := range f {
		if f[i], rest, ok = sshField(rest); !ok {
			return s, false
		}
	}
	if len(rest) != 0 {
		return s, false
	}
	s.pubKey, s.namespace, s.reserved, s.hash = f[0], string(f[1]), f[2], string(f[3])
	format, rest, ok := sshField(f[4])
	if !ok {
		return s, false
	}
	blob, rest, ok := sshField(rest)
	if !ok || len(rest) != 0 {
		return s, false
	}
	s.sig = ssh.Signature{Format: string(format), Blob: blob}
	return s, true
}

// sshField reads one SSH wire string.
func sshField(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

// commitAuthor is git's "%an <%ae>" of a commit's headers
// (split_ident_line: the name before the first '<', trailing blanks
// trimmed; the email up to the next '>'), when it has one author header
// and no encoding header (git re-encodes the author then); ok false
// otherwise (git says).
func commitAuthor(payload []byte) (string, bool) {
	author := ""
	for line := range strings.SplitSeq(string(payload), "\n") {
		if line == "" {
			break
		}
		if strings.HasPrefix(line, "encoding ") {
			return "", false
		}
		id, ok := strings.CutPrefix(line, "author ")
		if !ok {
			continue
		}
		if author != "" {
			return "", false // two: git's is the last
		}
		lt := strings.IndexByte(id, '<')
		if lt < 0 {
			return "", false
		}
		gt := strings.IndexByte(id[lt+1:], '>')
		if gt < 0 {
			return "", false
		}
		name := strings.TrimRight(id[:lt], " \t\r") // git's isspace
		author = name + " <" + id[lt+1:lt+1+gt] + ">"
	}
	return author, author != ""
}
