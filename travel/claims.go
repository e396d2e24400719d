package travel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitcmd"
)

// # Claims: leases kept as refs on the remote
//
// Workers that share a plan (implloop work) agree on who does which task
// through the remote alone: a claim is a ref,
// refs/implloop/claims/<plan>/<task>, and every change to one is a
// compare-and-swap push (CASPush): `git push --atomic
// --force-with-lease=<ref>:<expected>`, which git's receive-pack applies
// only while the ref still holds the expected value (absent, for a new
// claim). Of two workers that push a claim at once, exactly one wins.
//
// A claim that is running points at a lease commit (NewLease), a new one
// at each renewal, so a claim whose value has not changed for a lease
// period belongs to a worker that stopped. A claim that is done points at
// the records commit of the run that did the task, pushed in the same
// atomic push as the records themselves: the result and the end of the
// lease land together or not at all.

// ClaimsRefPrefix is where claims are kept, per plan.
const ClaimsRefPrefix = "refs/implloop/claims/"

// ClaimRef is the claim of task in plan (a key naming the plan and the
// commit its workers start from).
func ClaimRef(plan, task string) string { return ClaimsRefPrefix + plan + "/" + task }

// RefUpdate is one ref a compare-and-swap push sets: to New ("" deletes
// it), only while the remote has Old there ("" absent).
type RefUpdate struct {
	Ref string
	New string
	Old string
	// Records, in a Push: New is the records commit the push sends for
	// this run (a worker's claim, moved to its result).
	Records string
}

// ErrCASFailed is a compare-and-swap push the remote refused: one of its
// refs no longer held the value expected (another worker got there
// first). Nothing of that push was applied.
var ErrCASFailed = errors.New("the remote's ref no longer holds the value expected")

// casArgs are the push arguments of updates: the refspecs and a lease
// per ref.
func casArgs(ups []RefUpdate) (leases, specs []string) {
	for _, u := range ups {
		leases = append(leases, "--force-with-lease="+u.Ref+":"+u.Old)
		specs = append(specs, u.New+":"+u.Ref)
	}
	return leases, specs
}

// CASPush applies updates on remote in one atomic push, each only while
// the remote still holds its Old value: ErrCASFailed (wrapped) when one
// does not, and then none is applied.
func CASPush(ctx context.Context, dir, remote string, updates ...RefUpdate) error {
	return CASPushAs(ctx, nil, dir, remote, updates...)
}

// CASPushAs is CASPush with git's signing configuration as s learned it
// (LearnSigning), which a push uses when push.gpgSign says to sign it
// (nil s: git's now).
func CASPushAs(ctx context.Context, s *Signing, dir, remote string, updates ...RefUpdate) error {
	leases, specs := casArgs(updates)
	args := append([]string{"push", "--atomic", "--quiet", "--no-verify"}, leases...)
	args = append(append(args, remote), specs...)
	if _, err := git(ctx, dir, nil, nil, s.pin().with(args...)...); err != nil {
		return pushError(remote, err)
	}
	return nil
}

// pushError is a failed push's error: ErrCASFailed when the remote (or
// git, from what the remote advertised) refused it for a lease.
func pushError(remote string, err error) error {
	var ge *gitcmd.Error
	if errors.As(err, &ge) {
		s := ge.Stderr
		if strings.Contains(s, "stale info") || strings.Contains(s, "[rejected]") ||
			strings.Contains(s, "atomic push failed") || strings.Contains(s, "failed to update ref") ||
			strings.Contains(s, "cannot lock ref") || strings.Contains(s, "failed to lock") {
			return fmt.Errorf("git push %s: %w", remote, ErrCASFailed)
		}
	}
	return &RemoteError{Remote: remote, Op: "push", Err: err}
}

// RemoteRefs are the refs of remote that match patterns (ls-remote
// patterns: "refs/implloop/claims/<plan>/*"), by name.
func RemoteRefs(ctx context.Context, dir, remote string, patterns ...string) (map[string]string, error) {
	return (&Lister{dir: dir, remote: remote}).Refs(ctx, patterns...)
}

// Lister lists a remote's refs, as often as a worker looks, in the
// protocol quickest for the remote's transport (NewLister).
type Lister struct {
	dir, remote string
	pre         []string // git options before ls-remote
}

// NewLister is a Lister of remote (a name or a URL) from the repository
// at dir, in the protocol quickest for it (protocolOf).
func NewLister(ctx context.Context, dir, remote string) *Lister {
	return &Lister{dir: dir, remote: remote, pre: protocolOf(ctx, dir, remote)}
}

// protocolOf are the git options that talk to remote quickest: over
// git://, protocol version 1. git's version-2 client sends each request
// in several small writes on a TCP socket without TCP_NODELAY, so that
// each round trip waits out the server's delayed ACK (on loopback,
// measured: 54 ms a listing, 6 ms in version 1, where the server speaks
// first; a pull's fetch 230 ms, 145 ms). Other transports keep git's
// default: there version 2 filters the refs on the server, which matters
// on a host with many of them.
func protocolOf(ctx context.Context, dir, remote string) []string {
	if url, err := git(ctx, dir, nil, nil, "ls-remote", "--get-url", remote); err == nil && strings.HasPrefix(url, "git://") {
		return []string{"-c", "protocol.version=1"}
	}
	return nil
}

// Refs are the refs of the remote that match patterns, by name.
func (l *Lister) Refs(ctx context.Context, patterns ...string) (map[string]string, error) {
	out, err := git(ctx, l.dir, nil, nil, slices.Concat(l.pre, []string{"ls-remote", l.remote}, patterns)...)
	if err != nil {
		return nil, &RemoteError{Remote: l.remote, Op: "ls-remote", Err: err}
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if oid, ref, ok := strings.Cut(line, "\t"); ok {
			refs[ref] = oid
		}
	}
	return refs, nil
}

// NewLease writes a lease commit: an empty tree (git's, named by its
// hash: emptyTree), and a message naming the plan, the task, the worker,
// the renewal (n) and the lease period its worker keeps (renewed every
// third of it, given up when no renewal got through for all of it), so
// that every lease and renewal is a commit of its own, and a worker
// watching the claim knows how long to wait before taking it over
// (LeasePeriod). The commit object is written whole, in process where
// git would write it the same way (dirs: the journal's directories, as
// cache.StateDir gives them), else with one git process.
func NewLease(ctx context.Context, dirs cache.Dirs, emptyTree, plan, task, worker string, n int, at time.Time, period time.Duration) (string, error) {
	stamp := fmt.Sprintf("implloop <implloop@localhost> %d +0000", at.Unix())
	obj := fmt.Sprintf("tree %s\nauthor %s\ncommitter %s\n\nimplloop claim\n\nplan %s\ntask %s\nworker %s\nrenewal %d\nlease %s\n",
		emptyTree, stamp, stamp, plan, task, worker, n, period)
	c, err := objects(dirs).Object(ctx, "commit", []byte(obj))
	if err != nil {
		return "", fmt.Errorf("lease: %w", err)
	}
	return c, nil
}

// Bounds of a lease period read from a claim (LeasePeriod): what a
// claim on the remote says is believed only within them, so that a
// claim pushed by anyone with push access cannot keep its task from
// being taken over for longer than a day.
const (
	MinLeasePeriod = time.Second
	MaxLeasePeriod = 24 * time.Hour
)

// LeasePeriod reads the lease period a claim's worker keeps from the
// claim's value, a commit on remote: fetched (a lease commit is a few
// hundred bytes) unless the repository has it. period is 0 when the
// value is not a lease commit that names one (an older worker's, or
// anything pushed there: the watcher then goes by its own); moved, when
// the ref no longer holds value (look again). The period is clamped to
// [MinLeasePeriod, MaxLeasePeriod].
func LeasePeriod(ctx context.Context, dir, remote, ref, value string) (period time.Duration, moved bool, err error) {
	if _, err := git(ctx, dir, nil, nil, "cat-file", "-e", value); err != nil {
		if _, err := git(ctx, dir, nil, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, ref); err != nil {
			return 0, false, &RemoteError{Remote: remote, Op: "fetch", Err: err}
		}
		if _, err := git(ctx, dir, nil, nil, "cat-file", "-e", value); err != nil {
			return 0, true, nil // the claim moved on
		}
	}
	typ, err := git(ctx, dir, nil, nil, "cat-file", "-t", value)
	if err != nil || typ != "commit" {
		return 0, false, nil // garbage: no period
	}
	// Read at most a lease commit's worth: the message is ours, short.
	body, err := git(ctx, dir, nil, nil, "cat-file", "-s", value)
	if err != nil {
		return 0, false, nil
	}
	if n, perr := strconv.Atoi(body); perr != nil || n > 4096 {
		return 0, false, nil
	}
	msg, err := git(ctx, dir, nil, nil, "cat-file", "commit", value)
	if err != nil {
		return 0, false, nil
	}
	_, m, _ := strings.Cut(msg, "\n\n")
	if !strings.HasPrefix(m, "implloop claim\n") {
		return 0, false, nil
	}
	for _, line := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(line, "lease "); ok {
			d, perr := time.ParseDuration(v)
			if perr != nil {
				return 0, false, nil
			}
			return min(max(d, MinLeasePeriod), MaxLeasePeriod), false, nil
		}
	}
	return 0, false, nil
}

// EmptyTree writes git's empty tree and returns its name (dirs as for
// NewLease; with State empty, git writes it in dirs.Root).
func EmptyTree(ctx context.Context, dirs cache.Dirs) (string, error) {
	t, err := objects(dirs).Tree(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("lease: %w", err)
	}
	return t, nil
}
