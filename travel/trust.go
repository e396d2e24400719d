package travel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gitobj"
)

// # Trust
//
// A run made on this machine is trusted. A pulled run is trusted only when
// git's own verification of its records commit says the signature is good
// and made by an allowed signer (`%G?` is G: for SSH keys, a principal of
// gpg.ssh.allowedSignersFile; for OpenPGP and X.509, a key the keyring
// holds valid, and at least gpg.minTrustLevel when that is set). The
// signature covers the records' tree and, through the commit's parents,
// every boundary commit of the run, so a signed run's rows, blobs and
// trees are what its signer made.
//
// TrustOf is the one trust rule: the loop asks it before a replay across
// runs, before it takes over a pulled lineage, and restore asks it before
// writing another run's content; explain and the report say what it said.

// Trust is the trust rule's answer for one run.
type Trust struct {
	Trusted bool
	// Local: the run was made on this machine (not pulled).
	Local bool
	// Who made it, in words: "this machine", "alice@example.com (SSH key
	// SHA256:...)", or, for an unsigned pulled run, who its records say
	// pushed it ("Mallory <m@example.com>, unsigned").
	Who string
	// Why it is trusted or not: "made on this machine", "signed by an
	// allowed signer", "not signed", "signed by a key that is not an
	// allowed signer", ...
	Why string
	// Remote is where a pulled run came from.
	Remote string
}

// String is the trust in one phrase: "made on this machine", "signed by
// alice@example.com (SSH key ...), an allowed signer", "pulled from origin,
// not signed; pushed by Mallory <m@example.com>, as their git says" (no
// parentheses of its own: callers put it in theirs).
func (t Trust) String() string {
	switch {
	case t.Local:
		return t.Why
	case t.Trusted:
		return t.Why + ": " + t.Who
	}
	s := "pulled"
	if t.Remote != "" {
		s += " from " + t.Remote
	}
	return s + ", " + t.Why + "; " + t.Who
}

// TrustOf is the trust rule (see the package's Trust section): p is how
// the run was pulled, nil for a run made here.
func TrustOf(p *cache.Pulled) Trust {
	if p == nil {
		return Trust{Trusted: true, Local: true, Who: "this machine", Why: "made on this machine"}
	}
	t := Trust{Remote: p.Remote}
	signer := p.Signer
	if signer == "" {
		signer = "an unknown signer"
	}
	if p.Key != "" {
		signer += " (key " + p.Key + ")"
	}
	pushed := "pushed by " + orUnknown(p.Author) + ", as their git says"
	switch p.Signature {
	case "G":
		t.Trusted, t.Who, t.Why = true, signer, "signed by an allowed signer"
	case "N", "":
		t.Who, t.Why = pushed, "not signed"
	case "U":
		t.Who, t.Why = signer+"; "+pushed, "signed by a key that is not an allowed signer"
	case "E":
		t.Who, t.Why = pushed, "signed, but the signature cannot be checked here: no key or allowed signers file for it"
	case "X":
		t.Who, t.Why = signer, "signed with an expired signature"
	case "Y":
		t.Who, t.Why = signer, "signed by an expired key"
	case "R":
		t.Who, t.Why = signer, "signed by a revoked key"
	case "B":
		t.Who, t.Why = pushed, "its signature does not verify"
	default:
		t.Who, t.Why = pushed, "its signature is not one git accepts ("+p.Signature+")"
	}
	return t
}

func orUnknown(s string) string {
	if s == "" {
		return "someone unknown"
	}
	return s
}

// TrustOfRun is TrustOf for run runID of journal j.
func TrustOfRun(j *cache.Journal, runID string) (Trust, error) {
	p, ok, err := j.GetPulled(runID)
	if err != nil {
		return Trust{}, err
	}
	if !ok {
		p = nil
	}
	return TrustOf(p), nil
}

// signature is git's verification of one commit.
type signature struct {
	letter string // %G?
	signer string // %GS
	key    string // %GF, else %GK
	author string // "%an <%ae>"
}

// verifyCommits verifies the signatures of commits with git's own
// machinery (what `git verify-commit` checks: %G? is G exactly when it
// passes, gpg.minTrustLevel aside, which is checked with %GT when set).
// git says N ("none") of an SSH signature it has no allowed signers file
// to check: the caller, who knows whether the commit is signed
// (hasSignature), makes that E ("cannot be checked").
//
// A plain SSH signature that verifies is checked in process, as git
// would check it (sshsig.go); git verifies the others. git starts the
// signature program (ssh-keygen twice, gpg) once per commit, and waits
// on each: those commits are verified by a few `git log` processes at
// once, which keeps the pull's wall time close to what it is unsigned.
// pin is the configuration they verify with (nil: git's now).
func verifyCommits(ctx context.Context, dir string, commits []string, pin *gitConfig) ([]signature, error) {
	if len(commits) == 0 {
		return nil, nil
	}
	sigs := make([]signature, len(commits))
	rest, at, err := verifyInProcess(ctx, dir, commits, pin, sigs)
	if err != nil {
		return nil, err
	}
	if len(rest) == 0 {
		return sigs, nil
	}
	got, err := verifyWithGit(ctx, dir, rest, pin)
	if err != nil {
		return nil, err
	}
	for k, i := range at {
		sigs[i] = got[k]
	}
	return sigs, nil
}

// verifyInProcess fills sigs with the G of each commit whose SSH
// signature is checked in process (sshsig.go), and returns the others
// (rest, at their indexes in commits) for git.
func verifyInProcess(ctx context.Context, dir string, commits []string, pin *gitConfig, sigs []signature) (rest []string, at []int, err error) {
	all := func() ([]string, []int, error) {
		at := make([]int, len(commits))
		for i := range at {
			at[i] = i
		}
		return commits, at, nil
	}
	cfg := map[string]string(nil)
	if pin != nil {
		cfg = pin.read
	} else {
		keys, values, err := readConfig(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		cfg = lastOf(keys, values)
	}
	v := sshVerifierFor(cfg, os.Getenv("HOME"))
	if v == nil {
		return all()
	}
	done := make([]bool, len(commits))
	err = catBatch(ctx, dir, commits, func(i int, typ string, size int64, r io.Reader) error {
		if typ != "commit" || len(commits[i]) != 40 || size > maxSignedCommit {
			return nil
		}
		raw, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		sigs[i], done[i] = v.verify(raw)
		return nil
	})
	var ce *catError
	if err != nil && !errors.As(err, &ce) {
		return nil, nil, fmt.Errorf("reading the signed commits: %w", err)
	}
	for i, c := range commits {
		if !done[i] {
			rest, at = append(rest, c), append(at, i)
		}
	}
	return rest, at, nil
}

// maxSignedCommit bounds a commit checked in process (records and seal
// commits are small; git checks a larger one).
const maxSignedCommit = 1 << 20

// verifyWithGit is verifyCommits by git alone.
func verifyWithGit(ctx context.Context, dir string, commits []string, pin *gitConfig) ([]signature, error) {
	minTrust := pin.minTrustLevel(ctx, dir)
	const per, most = 16, 4
	n := min(most, (len(commits)+per-1)/per)
	size := (len(commits) + n - 1) / n
	sigs := make([]signature, len(commits))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := 0; k < n; k++ {
		lo, hi := k*size, min((k+1)*size, len(commits))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = verifyChunk(ctx, dir, commits[lo:hi], sigs[lo:hi], minTrust, pin)
		}()
	}
	wg.Wait()
	return sigs, errors.Join(errs...)
}

// verifyChunk is verifyCommits of some commits, in one `git log`, into
// sigs. --no-show-signature: log.showSignature would print git's
// verification before each commit's line.
func verifyChunk(ctx context.Context, dir string, commits []string, sigs []signature, minTrust string, pin *gitConfig) error {
	format := "%H%x1f%G?%x1f%GS%x1f%GK%x1f%GF%x1f%an <%ae>"
	if minTrust != "" {
		// Only when asked for: git 2.39 aborts on %GT of an SSH
		// signature when no allowed signers file is configured.
		format += "%x1f%GT"
	}
	o := gitcmd.Options{Dir: dir, Stdin: strings.NewReader(strings.Join(commits, "\n") + "\n")}
	out, _, err := gitcmd.Run(ctx, o, pin.with("log", "-z", "--no-walk=unsorted", "--no-show-signature", "--stdin", "--format="+format)...)
	if err != nil {
		return fmt.Errorf("verifying the records' signatures: %w", err)
	}
	recs := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	if len(recs) != len(commits) {
		return fmt.Errorf("verifying the records' signatures: git answered for %d of %d commits", len(recs), len(commits))
	}
	for i, rec := range recs {
		f := strings.Split(string(rec), "\x1f")
		if len(f) < 6 || f[0] != commits[i] {
			return fmt.Errorf("verifying the records' signatures: unexpected answer for %s", commits[i])
		}
		s := signature{letter: f[1], signer: f[2], key: f[4], author: f[5]}
		if s.key == "" {
			s.key = f[3]
		}
		if s.letter == "G" && minTrust != "" && len(f) > 6 && trustLevel(f[6]) < trustLevel(minTrust) {
			s.letter = "U"
		}
		sigs[i] = s
	}
	return nil
}

// trustLevel orders git's signature trust levels (gpg.minTrustLevel).
func trustLevel(s string) int {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "never":
		return 1
	case "marginal":
		return 2
	case "fully":
		return 3
	case "ultimate":
		return 4
	}
	return 0 // undefined
}

// hasSignature reports whether a raw commit object carries a signature
// header (gpgsig, or gpgsig-sha256 in a SHA-256 repository).
func hasSignature(raw []byte) bool {
	head, _, _ := bytes.Cut(raw, []byte("\n\n"))
	return bytes.Contains(head, []byte("\ngpgsig ")) || bytes.Contains(head, []byte("\ngpgsig-sha256 "))
}

// SignError is a run's records that git could not sign: the user's
// signing settings (user.signingKey, gpg.format, the agent holding the
// key) do not work here.
type SignError struct {
	Run string
	Err error
}

func (e *SignError) Error() string {
	return fmt.Sprintf("signing the records of run %s failed: %s", e.Run, gitWhy(e.Err))
}

func (e *SignError) Unwrap() error { return e.Err }

// SignsRuns reports whether push signs the runs made here: when
// implloop.signRuns is set, as it says; else as commit.gpgSign says
// (whether the user's git signs their commits).
func SignsRuns(ctx context.Context, dir string) bool {
	for _, key := range []string{"implloop.signRuns", "commit.gpgSign"} {
		v, err := git(ctx, dir, nil, nil, "config", "--type=bool", "--get", key)
		if err == nil && v != "" {
			return v == "true"
		}
	}
	return false
}

// SigningKey is how git will sign, in words ("ssh key ~/.ssh/id.pub"),
// for push --dry-run.
func SigningKey(ctx context.Context, dir string) string {
	format, _ := git(ctx, dir, nil, nil, "config", "--get", "gpg.format")
	if format == "" {
		format = "openpgp"
	}
	key, _ := git(ctx, dir, nil, nil, "config", "--get", "user.signingKey")
	if key == "" {
		return format + ", git's default key"
	}
	return format + " key " + key
}

// signRecords signs run's records commit c when it is not signed yet (the
// records are written unsigned when the run ends): the commit without
// transcripts and the whole one are written again as they were, signed
// with `git commit-tree -S` (the user's signing settings; pin's when
// set), and the ref moved to the new one. It returns the records commit
// the ref now names.
func signRecords(ctx context.Context, dirs cache.Dirs, run, c string, pin *gitConfig) (string, error) {
	dir := dirs.Root
	raw, err := git(ctx, dir, nil, nil, "cat-file", "commit", c)
	if err != nil {
		return "", err
	}
	if hasSignature([]byte(raw)) {
		return c, nil
	}
	lite, err := liteOf(ctx, dir, c)
	if err != nil {
		return "", err
	}
	sign := func(commit string, parents []string) (string, error) {
		raw, err := git(ctx, dir, nil, nil, "cat-file", "commit", commit)
		if err != nil {
			return "", err
		}
		h, err := parseCommit([]byte(raw))
		if err != nil {
			return "", err
		}
		if parents == nil {
			parents = h.parents
		}
		author, ok1 := identOf(h.author)
		committer, ok2 := identOf(h.committer)
		var out string
		if ok1 && ok2 {
			out, err = signedCommit(ctx, dirs, pin, gitobj.Commit{Tree: h.tree, Parents: parents, Author: author, Committer: committer, Message: h.message})
		} else {
			args := []string{"commit-tree", "-S", h.tree}
			for _, p := range parents {
				args = append(args, "-p", p)
			}
			out, err = git(ctx, dir, []byte(h.message), h.env(), pin.with(append(args, "-F", "-")...)...)
		}
		if err != nil {
			return "", &SignError{Run: run, Err: err}
		}
		return out, nil
	}
	signedLite, err := sign(lite, nil)
	if err != nil {
		return "", err
	}
	if lite == c { // the records are those without transcripts
		return signedLite, setRecordsRef(ctx, dir, run, signedLite, c)
	}
	signedFull, err := sign(c, []string{signedLite})
	if err != nil {
		return "", err
	}
	return signedFull, setRecordsRef(ctx, dir, run, signedFull, c)
}

func setRecordsRef(ctx context.Context, dir, run, to, from string) error {
	_, err := git(ctx, dir, nil, nil, "update-ref", "-m", "implloop: records of "+run+" signed", RecordsRef(run), to, from)
	return err
}

// commitHeader is what signRecords keeps of a commit to write it again.
type commitHeader struct {
	tree              string
	parents           []string
	author, committer string // "Name <email> time zone"
	message           string
}

func parseCommit(raw []byte) (*commitHeader, error) {
	head, msg, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		return nil, fmt.Errorf("a commit without a message")
	}
	h := &commitHeader{message: string(msg)}
	for _, line := range strings.Split(string(head), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "tree":
			h.tree = v
		case "parent":
			h.parents = append(h.parents, v)
		case "author":
			h.author = v
		case "committer":
			h.committer = v
		}
	}
	if h.tree == "" || h.author == "" || h.committer == "" {
		return nil, fmt.Errorf("a commit without tree, author or committer")
	}
	return h, nil
}

// identOf reads a commit's author or committer ("Name <email> seconds
// +hhmm") as the Ident gitobj writes the same way; ok false for any
// other form (git is given it then: commitHeader.env).
func identOf(line string) (gitobj.Ident, bool) {
	name, rest, ok1 := strings.Cut(line, " <")
	email, date, ok2 := strings.Cut(rest, "> ")
	secs, zone, ok3 := strings.Cut(date, " ")
	if !ok1 || !ok2 || !ok3 || len(zone) != 5 || (zone[0] != '+' && zone[0] != '-') {
		return gitobj.Ident{}, false
	}
	n, err1 := strconv.ParseInt(secs, 10, 64)
	hh, err2 := strconv.Atoi(zone[1:3])
	mm, err3 := strconv.Atoi(zone[3:])
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || mm > 59 {
		return gitobj.Ident{}, false
	}
	off := hh*3600 + mm*60
	if zone[0] == '-' {
		off = -off
	}
	id := gitobj.Ident{Name: name, Email: email, When: time.Unix(n, 0).In(time.FixedZone("", off))}
	if name+" <"+email+"> "+strings.TrimPrefix(gitobj.DateOf(id.When), "@") != line {
		return gitobj.Ident{}, false
	}
	return id, true
}

// env is the environment that makes commit-tree write h's author and
// committer again.
func (h *commitHeader) env() []string {
	var env []string
	for _, who := range []struct{ prefix, ident string }{{"GIT_AUTHOR_", h.author}, {"GIT_COMMITTER_", h.committer}} {
		name, rest, _ := strings.Cut(who.ident, " <")
		email, date, _ := strings.Cut(rest, "> ")
		env = append(env, who.prefix+"NAME="+name, who.prefix+"EMAIL="+email, who.prefix+"DATE="+date)
	}
	return env
}
