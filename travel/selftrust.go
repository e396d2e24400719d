package travel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gitobj"
)

// SelfTrustError says why a run pushed from a clone would not be trusted
// by a clone with the same trust settings (its own allowed signers): a
// worker's results are built on by the other workers and replayed by the
// fan-in only when they are, so a worker checks it before it claims
// anything.
type SelfTrustError struct {
	// Unsigned: runs are pushed from here unsigned (neither
	// implloop.signRuns nor commit.gpgSign is set).
	Unsigned bool
	// Sign: git could not sign (the signing key or its agent).
	Sign error
	// Trust: what the trust rule says of a run signed here.
	Trust Trust
}

func (e *SelfTrustError) Error() string {
	const cost = "other workers and the fan-in would do every task of this worker again"
	switch {
	case e.Unsigned:
		return "runs pushed from this clone are not signed (implloop.signRuns, else commit.gpgSign, is not true): " + cost
	case e.Sign != nil:
		why := e.Sign.Error()
		var ge *gitcmd.Error
		if errors.As(e.Sign, &ge) && ge.Stderr != "" {
			why = signWhy(ge.Stderr)
		}
		return "git cannot sign here: " + why
	}
	return fmt.Sprintf("a run signed here is not trusted here (%s, %s): %s", e.Trust.Why, e.Trust.Who, cost)
}

func (e *SelfTrustError) Unwrap() error { return e.Sign }

// CheckSelfTrust signs a probe commit (the empty tree, written as a
// loose object that no ref names) as a push signs a run's records, and
// verifies it as a pull verifies pulled records: nil when a run pushed
// from dir is trusted by a clone with dir's trust settings, else a
// *SelfTrustError. s is the signing as learned (LearnSigning), which
// the probe signs and verifies with; nil: git's now.
func CheckSelfTrust(ctx context.Context, dirs cache.Dirs, s *Signing) error {
	dir := dirs.Root
	sign := s != nil && s.Sign
	if s == nil {
		sign = SignsRuns(ctx, dir)
	}
	if !sign {
		return &SelfTrustError{Unsigned: true}
	}
	empty, err := EmptyTree(ctx, dirs)
	if err != nil {
		return err
	}
	// Signed by git (and ssh-keygen, or gpg): the proof that a worker's
	// signatures may be made in process (proveSSH) is the same commit
	// signed both ways. Dated now, to the second, for both.
	who := s.ident()
	if who.Name != "" {
		who.When = time.Now()
	}
	probe := gitobj.Commit{Tree: empty, Author: who, Committer: who, Message: "implloop: a signing probe (implloop work)\n"}
	if pin := s.pin(); pin != nil {
		pin.ssh = nil
	}
	c, err := signedCommit(ctx, dirs, s.pin(), probe)
	if err != nil {
		return &SelfTrustError{Sign: err}
	}
	proveSSH(dirs, s.pin(), probe, c)
	sigs, err := verifyCommits(ctx, dir, []string{c}, s.pin())
	if err != nil {
		return err
	}
	got := sigs[0]
	if got.letter == "G" {
		return nil
	}
	if got.letter == "N" {
		got.letter = "E" // signed (commit-tree -S), so: cannot be checked
	}
	return &SelfTrustError{Trust: TrustOf(&cache.Pulled{Signature: got.letter, Signer: got.signer, Key: got.key, Author: got.author})}
}

// signWhy is why git could not sign, from its stderr: the first line
// that says something (the signing program's banner of @ left out), and
// the line after it when that one is a banner's title ("WARNING:
// UNPROTECTED PRIVATE KEY FILE!" says what is wrong only with the next:
// "Permissions 0644 for '...' are too open.").
func signWhy(stderr string) string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if n := len(l); n > 1 && l[n-1] == '?' && strings.ContainsRune(".!@", rune(l[n-2])) {
			l = l[:n-1] // a carriage return, which git prints as "?"
		}
		l = strings.TrimPrefix(strings.TrimPrefix(l, "fatal: "), "error: ")
		l = strings.Trim(l, "@ \t\r")
		if strings.IndexFunc(l, unicode.IsLetter) >= 0 {
			lines = append(lines, l)
		}
	}
	switch {
	case len(lines) == 0:
		return strings.TrimSpace(stderr)
	case len(lines) > 1 && strings.HasSuffix(lines[0], "!"):
		return lines[0] + " " + lines[1]
	}
	return lines[0]
}
