package travel

import (
	"context"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/internal/gitobj"
)

// Signing is what a push asks the user's git before it writes a run's
// records: whether it signs the runs made here (SignsRuns), and who the
// records say made them (recordsIdent). A worker of implloop work learns
// it once, before any agent ran (LearnSigning), and gives it to each push
// of its results (PushOptions.Signing): an agent shares git's
// configuration with the worker, and what it sets there while the worker
// lives (implloop.signRuns false, another user.name) does not make the
// worker's results go unsigned or under another name. LearnSigning also
// learns how git signs and verifies (gpg.format, user.signingKey,
// gpg.*.program, gpg.ssh.allowedSignersFile, gpg.ssh.revocationFile,
// gpg.minTrustLevel, push.gpgSign: pin.go), and every git that signs or
// verifies with a learned Signing (Push, CASPushAs, Pull with VerifyAs,
// CheckSelfTrust) is given those values on its command line: an agent
// that names another signing program or key, or another allowed signers
// file, changes neither what the worker runs nor whom it trusts
// (ConfigChanged says what it changed). The zero Signing learned
// nothing of that: git reads its configuration at each call.
type Signing struct {
	Sign        bool
	Name, Email string
	// cfg is git's signing and verifying configuration as learned (nil:
	// not learned).
	cfg *gitConfig
}

// LearnSigning reads Signing from the git of the repository at dir.
func LearnSigning(ctx context.Context, dir string) (Signing, error) {
	name, email := recordsIdent(ctx, dir)
	cfg, err := learnConfig(ctx, dir, name+" <"+email+">")
	if err != nil {
		return Signing{}, err
	}
	return Signing{Sign: SignsRuns(ctx, dir), Name: name, Email: email, cfg: cfg}, nil
}

// pin is s's learned configuration (nil: none, or no s).
func (s *Signing) pin() *gitConfig {
	if s == nil {
		return nil
	}
	return s.cfg
}

// identEnv is the environment that makes git name s's Name and Email as
// author and committer (none without them).
func (s *Signing) identEnv() []string {
	if s == nil || s.Name == "" || s.Email == "" {
		return nil
	}
	return []string{"GIT_AUTHOR_NAME=" + s.Name, "GIT_AUTHOR_EMAIL=" + s.Email, "GIT_COMMITTER_NAME=" + s.Name, "GIT_COMMITTER_EMAIL=" + s.Email}
}

// ident is s's Name and Email as a commit's author or committer, dated
// now (zero without them: git's own).
func (s *Signing) ident() gitobj.Ident {
	if s == nil || s.Name == "" || s.Email == "" {
		return gitobj.Ident{}
	}
	return gitobj.Ident{Name: s.Name, Email: s.Email}
}

// known is what a push read before it writes a run's records (write):
// the records ref's value (known only when haveRecords), and who the
// records say made them and how git signs them (ident: nil, asked of
// git).
type known struct {
	records     string
	haveRecords bool
	ident       *Signing
}

// pin is the signing configuration k's ident learned (nil: none).
func (k *known) pin() *gitConfig {
	if k == nil {
		return nil
	}
	return k.ident.pin()
}

// name and email are who the records say made them: k's, else as
// recordsIdent says.
func (k *known) name(ctx context.Context, dir string) (name, email string) {
	if k != nil && k.ident != nil {
		return k.ident.Name, k.ident.Email
	}
	return recordsIdent(ctx, dir)
}

// maxExactRefs: a push of more runs than this reads all records and
// boundary refs rather than naming each on the command line.
const maxExactRefs = 64

// readRunRefs reads the records ref and the boundary ref of each run in one
// git process (two a run before): the commit each names, "" for a ref
// that does not exist. A ref that names anything but a commit is read as
// refValue reads it (peeled, or an error).
func readRunRefs(ctx context.Context, dir string, runs []string) (records, bounds map[string]string, err error) {
	want := map[string]bool{}
	var args []string
	for _, r := range runs {
		want[RecordsRef(r)], want[boundary.RunRef(r)] = true, true
		args = append(args, RecordsRef(r), boundary.RunRef(r))
	}
	if len(runs) > maxExactRefs {
		args = []string{RecordsRefPrefix, boundary.RunRefPrefix}
	}
	out, err := git(ctx, dir, nil, nil, append([]string{"for-each-ref", "--format=%(objectname) %(objecttype) %(refname)"}, args...)...)
	if err != nil {
		return nil, nil, err
	}
	val := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 || !want[f[2]] {
			continue
		}
		if f[1] != "commit" {
			if f[0], err = refValue(ctx, dir, f[2]); err != nil {
				return nil, nil, err
			}
		}
		val[f[2]] = f[0]
	}
	records, bounds = map[string]string{}, map[string]string{}
	for _, r := range runs {
		records[r], bounds[r] = val[RecordsRef(r)], val[boundary.RunRef(r)]
	}
	return records, bounds, nil
}
