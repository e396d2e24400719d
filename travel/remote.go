package travel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/runid"
)

// RemoteError is a push or fetch that git could not do: the remote is
// unreachable, unknown, or refused the update.
type RemoteError struct {
	Remote string
	Op     string // "push" or "fetch"
	Err    error
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("git %s %s failed: %s", e.Op, e.Remote, gitWhy(e.Err))
}

// gitWhy is why a git command failed, in git's own first words where it
// printed any ("'origin' does not appear to be a git repository", "Could
// not resolve host", a rejection), else err's text.
func gitWhy(err error) string {
	why := err.Error()
	var ge *gitcmd.Error
	if errors.As(err, &ge) && ge.Stderr != "" {
		why, _, _ = strings.Cut(ge.Stderr, "\n")
		why = strings.TrimPrefix(strings.TrimPrefix(why, "fatal: "), "error: ")
	}
	return stripSideband(why)
}

// stripSideband drops what git pads a remote's lines with: the ANSI
// clear to end of line on a terminal, eight spaces elsewhere.
func stripSideband(s string) string {
	return strings.TrimRight(strings.ReplaceAll(s, "\x1b[K", ""), " \t\r")
}

func (e *RemoteError) Unwrap() error { return e.Err }

// ErrUnfinished: a run asked to push has not finished (it is running, or
// was killed and not resumed), so it has no records yet.
var ErrUnfinished = errors.New("the run has not finished")

// DefaultRemote is the remote of the current branch's upstream, else
// origin.
func DefaultRemote(ctx context.Context, dir string) string {
	if b, err := git(ctx, dir, nil, nil, "symbolic-ref", "-q", "--short", "HEAD"); err == nil && b != "" {
		if r, err := git(ctx, dir, nil, nil, "config", "branch."+b+".remote"); err == nil && r != "" {
			return r
		}
	}
	return "origin"
}

// PushOptions say what Push pushes where.
type PushOptions struct {
	Remote string   // "" for DefaultRemote
	Runs   []string // run ids; none: every run that ended
	// NoTranscripts pushes the records without prompts, agent output and
	// gate output.
	NoTranscripts bool
	// With are refs set in the same atomic push, each only while the
	// remote still holds its Old value (claims.go): a worker's claim
	// moved to the records it pushes. ErrCASFailed when one does not.
	With []RefUpdate
	// New: the runs are new to the remote (a worker's run, just made):
	// no ls-remote first, and no seal of them alone (a single run's own
	// signature is what a pull verifies).
	New bool
	// Signing is whether the runs made here are signed, who their
	// records say made them, and how git signs them (and whether the
	// push itself is signed: push.gpgSign), as a worker learned it when
	// it started (LearnSigning); nil: asked of git now. A push with a
	// learned Signing runs no hook (--no-verify), as a worker's claim
	// pushes run none.
	Signing *Signing
	// Sealed are runs pushed before from here (run id -> the records
	// commit pushed, PushResult.Records), sealed again with a signing
	// push's runs: a worker seals every run it pushed in each push, so
	// that a pull verifies one signature a worker, not one a run.
	Sealed map[string]string
}

// PushResult is what Push pushed.
type PushResult struct {
	Remote  string
	Runs    []string // the runs pushed (with their lineages), oldest first
	Skipped []string // runs that have not ended: nothing to push yet
	There   []string // runs the remote has already
	// Signed are the runs of Runs whose records went signed (signed here
	// now, or pulled signed); the others went unsigned.
	Signed []string
	// Records are the records commits pushed, by run.
	Records map[string]string
}

// lsRemote is what the remote's refs/implloop/ refs point at.
func lsRemote(ctx context.Context, dir, remote string) (map[string]string, error) {
	return RemoteRefs(ctx, dir, remote, "refs/implloop/*")
}

// pushRuns are the runs o asks to push, each with its lineage, oldest
// first, and the runs that have not ended (not asked for by name: left
// out).
func pushRuns(j *cache.Journal, o PushOptions) (runs []*cache.Run, skipped []string, err error) {
	asked := o.Runs
	if len(asked) == 0 {
		all, err := j.ListRuns()
		if err != nil {
			return nil, nil, err
		}
		for _, r := range all {
			if r.Finished() {
				asked = append(asked, r.ID)
			} else {
				skipped = append(skipped, r.ID)
			}
		}
	}
	// The runs to push, each with its lineage: an ancestor of a run has
	// ended even when it never recorded so (a resume took over).
	want := map[string]*cache.Run{}
	for _, id := range asked {
		lin, err := j.Lineage(id)
		if err != nil {
			return nil, nil, err
		}
		if !lin[0].Finished() {
			return nil, nil, fmt.Errorf("run %s: %w", id, ErrUnfinished)
		}
		for i := range lin {
			want[lin[i].ID] = &lin[i]
		}
	}
	for _, r := range want {
		runs = append(runs, r)
	}
	sort.Slice(runs, func(a, b int) bool { return runs[a].StartedAt.Before(runs[b].StartedAt) })
	return runs, skipped, nil
}

// pushScope is what Push and PlanPush start from: the remote (the default
// one when the options name none), the runs that go and those skipped
// (pushRuns), the runs pulled from elsewhere, and whether the user's git
// signs.
type pushScope struct {
	remote  string
	runs    []*cache.Run
	skipped []string
	pulled  map[string]cache.Pulled
	sign    bool
}

func scopePush(ctx context.Context, j *cache.Journal, o PushOptions) (pushScope, error) {
	dir := j.Root()
	sc := pushScope{remote: o.Remote}
	if sc.remote == "" {
		sc.remote = DefaultRemote(ctx, dir)
	}
	var err error
	if sc.runs, sc.skipped, err = pushRuns(j, o); err != nil {
		return pushScope{}, err
	}
	if sc.pulled, err = j.PulledRuns(); err != nil {
		return pushScope{}, err
	}
	if o.Signing != nil {
		sc.sign = o.Signing.Sign
	} else {
		sc.sign = SignsRuns(ctx, dir)
	}
	return sc, nil
}

// Push pushes runs' records and boundary refs to a remote in one atomic
// `git push`. A run goes with its lineage (the runs it resumes), whose
// records a resume needs; records not written yet (a run killed and then
// resumed) are written first. When the user's git signs commits
// (SignsRuns), the records of every run made here are signed first with
// git's own signing (signRecords); a pulled run goes as it came, signed
// by whoever signed it or not at all: a push never vouches for another's
// run.
func Push(ctx context.Context, j *cache.Journal, o PushOptions) (*PushResult, error) {
	dir := j.Root()
	sc, err := scopePush(ctx, j, o)
	if err != nil {
		return nil, err
	}
	res := &PushResult{Remote: sc.remote, Skipped: sc.skipped, Records: map[string]string{}}
	runs, pulled, sign := sc.runs, sc.pulled, sc.sign
	// What the remote has already is not pushed again: a push of many
	// runs sends only the new ones, and records without transcripts are
	// not pushed over the whole records (their transcripts left already).
	there := map[string]string{}
	if !o.New {
		if there, err = lsRemote(ctx, dir, res.Remote); err != nil {
			return nil, err
		}
	}
	var refspecs []string
	sealed := map[string]string{} // run made here -> the records commit pushed, signed
	// The refs of the runs that go, and the records refs of those
	// sealed again (sealedBefore), in one read.
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	for run := range o.Sealed {
		ids = append(ids, run)
	}
	recordsOf, boundsOf, err := readRunRefs(ctx, dir, ids)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		_, isPulled := pulled[r.ID]
		full, signedNow, err := write(ctx, j, r.ID, sign && !isPulled, &known{records: recordsOf[r.ID], haveRecords: true, ident: o.Signing})
		if err != nil {
			return nil, err
		}
		bounds := boundsOf[r.ID]
		if sign && !isPulled && !signedNow {
			if full, err = signRecords(ctx, j.Dirs(), r.ID, full, o.Signing.pin()); err != nil {
				return nil, err
			}
		}
		records := full
		if o.NoTranscripts {
			if records, err = liteOf(ctx, dir, full); err != nil {
				return nil, err
			}
		}
		var specs []string
		if have := there[RecordsRef(r.ID)]; have != records && have != full {
			specs = append(specs, records+":"+RecordsRef(r.ID))
		}
		if bounds != "" && there[boundary.RunRef(r.ID)] != bounds {
			specs = append(specs, bounds+":"+boundary.RunRef(r.ID))
		}
		if len(specs) == 0 {
			res.There = append(res.There, r.ID)
			continue
		}
		refspecs = append(refspecs, specs...)
		res.Runs = append(res.Runs, r.ID)
		res.Records[r.ID] = records
		for i, u := range o.With {
			if u.Records == r.ID {
				o.With[i].New = records
			}
		}
		if signedNow || isSigned(ctx, dir, records) {
			res.Signed = append(res.Signed, r.ID)
			if sign && !isPulled {
				sealed[r.ID] = records
			}
		}
	}
	for _, u := range o.With {
		if u.Records != "" && u.New == "" {
			return nil, fmt.Errorf("push: run %s's records are not in this push, for %s", u.Records, u.Ref)
		}
	}
	if len(refspecs) == 0 && len(o.With) == 0 {
		return res, nil
	}
	if len(sealed) > 0 {
		o.Sealed = sealedBefore(o.Sealed, pulled, recordsOf)
	}
	if err := sendPush(ctx, j.Dirs(), res.Remote, refspecs, sealed, o); err != nil {
		return nil, err
	}
	return res, nil
}

// sealedBefore is what of sealed (PushOptions.Sealed) a push that signs
// may seal again: runs made here (never a pulled one: a push never
// vouches for another's run) whose records ref holds the commit named
// (records: the commit each run's records ref held, as the push read
// them: readRunRefs).
func sealedBefore(sealed map[string]string, pulled map[string]cache.Pulled, records map[string]string) map[string]string {
	if len(sealed) == 0 {
		return nil
	}
	ok := map[string]string{}
	for run, c := range sealed {
		if _, isPulled := pulled[run]; records[run] == c && c != "" && !isPulled {
			ok[run] = c
		}
	}
	return ok
}

// isSigned reports whether commit c carries a signature.
func isSigned(ctx context.Context, dir, c string) bool {
	raw, err := git(ctx, dir, nil, nil, "cat-file", "commit", c)
	return err == nil && hasSignature([]byte(raw))
}

// sendPush is Push's one `git push --atomic`: refspecs, the seal of the
// sealed runs (with o.Sealed; not of a new run alone: PushOptions.New),
// and o.With's compare-and-swap updates.
func sendPush(ctx context.Context, dirs cache.Dirs, remote string, refspecs []string, sealed map[string]string, o PushOptions) error {
	dir := dirs.Root
	if len(sealed) > 0 && (!o.New || len(o.Sealed) > 0) {
		// One signature that a pull verifies for all of them (seal.go).
		all := maps.Clone(o.Sealed)
		if all == nil {
			all = map[string]string{}
		}
		maps.Copy(all, sealed)
		seal, err := writeSeal(ctx, dirs, all, o.Signing)
		if err != nil {
			return err
		}
		refspecs = append(refspecs, seal+":"+SealRefPrefix+seal)
	}
	leases, specs := casArgs(o.With)
	args := []string{"push", "--atomic", "--quiet"}
	if o.Signing.pin() != nil {
		// A worker's: no hook runs, as none runs for its claims
		// (CASPushAs); its agents can write the hooks directory.
		args = append(args, "--no-verify")
	}
	args = append(append(args, leases...), remote)
	if _, err := git(ctx, dir, nil, nil, o.Signing.pin().with(append(append(args, refspecs...), specs...)...)...); err != nil {
		if len(o.With) > 0 {
			return pushError(remote, err)
		}
		return &RemoteError{Remote: remote, Op: "push", Err: err}
	}
	return nil
}

// pullNS is where a pull fetches records before it has checked them:
// outside refs/implloop/, so nothing unchecked is ever pushed on or read
// as a run's.
const pullNS = "refs/implloop-pull/"

// PullResult is what Pull found and imported.
type PullResult struct {
	Remote   string
	Imported []string // runs added to the journal, oldest first
	Present  []string // runs the journal had already
	// Retrusted are runs the journal had, signed but not trusted when
	// pulled, that are trusted now (a key added to the allowed signers
	// since): verified again, as the pull found them signed.
	Retrusted []string
	// Trust is what the trust rule says of each imported run (TrustOf).
	Trust map[string]Trust
	// Refused are the runs a pull with SkipRefused left out, each with
	// why: nothing of them was imported.
	Refused []*RefusedError
}

// PullOption changes how Pull reads.
type PullOption func(*pullConfig)

type pullConfig struct {
	limits Limits
	now    func() time.Time
	skip   bool
	pin    *gitConfig
	only   map[string]bool // nil: every run
	via    *Lister         // the remote's protocol, as a Lister of it chose it (nil: asked)
}

// Via makes a pull talk to the remote in the protocol l chose for it
// (the remote is l's): a worker that lists the remote's claims does not
// ask git for the remote's URL again at each pull.
func Via(l *Lister) PullOption { return func(c *pullConfig) { c.via = l } }

// OnlyRuns makes a pull fetch and import the records of the runs named
// only (those the remote has; every seal is fetched, to verify them): a
// worker needs the results its plan's claims name, not every run the
// remote ever had, which a fresh clone would import whole. At most
// maxOnlyRuns; more, and the pull reads every run.
func OnlyRuns(ids []string) PullOption {
	return func(c *pullConfig) {
		if len(ids) > maxOnlyRuns {
			return
		}
		c.only = map[string]bool{}
		for _, id := range ids {
			c.only[id] = true
		}
	}
}

// maxOnlyRuns is how many runs OnlyRuns names at most: each is a refspec
// on git fetch's command line.
const maxOnlyRuns = 1000

// SkipRefused makes a pull leave out each run whose records it refuses
// (PullResult.Refused) and import the others, instead of importing
// nothing: one malformed or forged records ref, which anyone with push
// access can put on the remote, then costs its own run only. Nothing of
// a refused run is imported either way, nor anything that depends on it
// (a resume of it is refused in turn).
func SkipRefused() PullOption { return func(c *pullConfig) { c.skip = true } }

// VerifyAs makes the pull verify signatures with git's signing
// configuration as s learned it (LearnSigning: the allowed signers and
// revoked keys, the programs that verify, the minimum trust level),
// whatever git's configuration says now: a worker's pull trusts what it
// trusted when it started. A Signing that learned none: git's now.
func VerifyAs(s Signing) PullOption { return func(c *pullConfig) { c.pin = s.cfg } }

// WithLimits caps what the pull reads (zero fields: DefaultLimits).
func WithLimits(l Limits) PullOption { return func(c *pullConfig) { c.limits = l } }

// WithClock is the clock pulled runs' dates are checked against (tests).
func WithClock(now func() time.Time) PullOption { return func(c *pullConfig) { c.now = now } }

// Pull fetches every run's records from remote ("" for DefaultRemote)
// and imports those the journal lacks: each record is checked (see
// readRecords), their blobs stored with their hashes checked, and the
// rows added in one transaction, so a refused record leaves the journal
// as it was. Then refs/implloop/records/<run> and
// refs/implloop/runs/<run> are set for each imported run. open opens the
// journal for writing; it is called only after the fetch succeeded.
//
// Each imported run's records commit is verified with git's own
// verification (verifyCommits) while the records are read, and how it
// was pulled, its signer included, is journaled with it (cache.Pulled):
// TrustOf decides from that whether its work may stand in for this
// machine's. A signature that does not verify (records changed after
// they were signed) is refused like any forged record. Every object read
// is counted against the limits (WithLimits), and a run dated in the
// future, or whose start is not its id's, is refused.
func Pull(ctx context.Context, dir, remote string, open func() (*cache.Journal, error), opts ...PullOption) (*PullResult, error) {
	cfg := pullConfig{now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, endCat := withCatSessions(ctx, dir)
	defer endCat()
	p := &puller{ctx: ctx, dir: dir, bud: newBudget(cfg.limits), now: cfg.now(), pin: cfg.pin, only: cfg.only, via: cfg.via, deleted: map[string]bool{},
		res: &PullResult{Remote: remote, Trust: map[string]Trust{}}}
	if p.res.Remote == "" {
		p.res.Remote = DefaultRemote(ctx, dir)
	}
	defer p.dropStaging()
	staged, err := p.fetch()
	if err != nil {
		return nil, err
	}
	if staged == "" {
		p.cleared = true
		return p.res, nil // the remote has no runs: no journal needed
	}
	j, err := open()
	if err != nil {
		return nil, err
	}
	defer j.Close()
	p.j = j
	var (
		recheck []cache.Pulled
		ins     []*incoming
		sigOf   map[string]signature
		added   []string
	)
	skip := map[string]bool{}
	for {
		recheck, ins, sigOf, added, err = p.importStaged(staged, skip)
		var refused *RefusedError
		if err == nil {
			break
		}
		if !cfg.skip || !errors.As(err, &refused) || skip[refused.Run] || !strings.Contains(staged+"\n", " "+pullNS+refused.Run+"\n") {
			return nil, err
		}
		// Nothing of that try was imported (one transaction): try again
		// without the run refused.
		skip[refused.Run] = true
		p.res.Refused = append(p.res.Refused, refused)
		p.reset()
		p.bud = newBudget(cfg.limits) // each try reads the pull anew
	}
	if err := reverify(ctx, dir, j, recheck, p.seals, p.bud, p.res, p.pin); err != nil {
		return nil, err
	}
	for _, in := range ins { // parents first
		if id := in.rec.Run.ID; slices.Contains(added, id) {
			p.res.Imported = append(p.res.Imported, id)
			row := p.pulledRow(in, sigOf[in.commit])
			p.res.Trust[id] = TrustOf(&row)
		}
	}
	return p.res, nil
}

// importStaged imports the staged runs but those of skip (sortStaged,
// repair, importRuns).
func (p *puller) importStaged(staged string, skip map[string]bool) (recheck []cache.Pulled, ins []*incoming, sigOf map[string]signature, added []string, err error) {
	todo, repairs, recheck, err := p.sortStaged(staged, skip)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := p.repair(repairs); err != nil {
		return nil, nil, nil, nil, err
	}
	ins, sigOf, added, err = p.importRuns(todo)
	return recheck, ins, sigOf, added, err
}

// reset readies p for another try of importStaged, after one that
// refused a run (and so imported nothing, set no ref).
func (p *puller) reset() {
	p.refs.Reset()
	clear(p.deleted)
	p.res.Present = nil
}

// puller is one Pull under way: where it reads, what it has read
// against the limits, and the ref updates it makes in one update-ref.
type puller struct {
	ctx context.Context
	dir string
	j   *cache.Journal // opened once the fetch found runs
	bud *budget
	now time.Time
	res *PullResult
	pin *gitConfig // the configuration signatures are verified with (nil: git's)
	// only are the runs it fetches and imports (nil: every run; OnlyRuns).
	only map[string]bool
	via  *Lister // Via
	// refs are the update-ref lines the import sets at once: the staging
	// refs deleted, the imported runs' refs set, the present runs'
	// repaired.
	refs strings.Builder
	// haveRef are the records and boundary refs the repository had.
	haveRef map[string]bool
	// staging are the staging refs and the seal refs there were once
	// the fetch ended; seals, the seals' commits.
	staging []string
	seals   []string
	// deleted are the staging refs whose deletion refs holds already.
	deleted map[string]bool
	// listed: staging and seals are as the listing after the fetch
	// found them.
	listed bool
	// cleared: the staging refs went with refs (or there were none).
	cleared bool
}

// dropStaging deletes the seals, which are read where they are fetched,
// and the staging refs unless they went with the refs an import set.
// What an interrupted pull left behind, the next fetch's --prune
// deletes.
func (p *puller) dropStaging() {
	if p.listed && p.cleared {
		// As the listing after the fetch found them, less those the
		// import deleted: no listing again. Not in the import's own
		// update: another pull of the clone (a user's, beside a worker's)
		// may hold one of them, which must not fail this one.
		var del strings.Builder
		for _, ref := range p.staging {
			if !p.deleted[ref] {
				fmt.Fprintf(&del, "delete %s\n", ref)
			}
		}
		if del.Len() > 0 {
			_, _ = git(p.ctx, p.dir, []byte(del.String()), nil, "update-ref", "--stdin")
		}
		return
	}
	ns := []string{sealNS}
	if !p.cleared || p.only != nil {
		// (A pull of only some runs may have staged others beside them,
		// which its import does not clear.)
		ns = append(ns, pullNS)
	}
	out, err := git(p.ctx, p.dir, nil, nil, append([]string{"for-each-ref", "--format=delete %(refname)"}, ns...)...)
	if err == nil && out != "" {
		_, _ = git(p.ctx, p.dir, []byte(out+"\n"), nil, "update-ref", "--stdin")
	}
}

// fetch fetches the remote's records into the staging refs (pullNS) and
// its seals (sealNS), and lists what it staged: "<commit> <ref>" lines.
// With only, it fetches those runs' records alone (a pattern per run, which
// git does not refuse when the remote lacks the run), and lists those.
func (p *puller) fetch() (string, error) {
	specs := []string{"+" + RecordsRefPrefix + "*:" + pullNS + "*"}
	if p.only != nil {
		specs = specs[:0]
		for id := range p.only {
			if runid.RefSafe(id) {
				specs = append(specs, "+"+RecordsRefPrefix+id+"*:"+pullNS+id+"*")
			}
		}
		sort.Strings(specs)
	}
	var proto []string
	if p.via != nil && p.via.remote == p.res.Remote && p.via.dir == p.dir {
		proto = slices.Clone(p.via.pre)
	} else {
		proto = protocolOf(p.ctx, p.dir, p.res.Remote)
	}
	// No auto maintenance (a process more, each pull: what a pull
	// fetches is staged and dropped again; the user's own next git
	// command does it). A key older gits ignore, unlike the option.
	args := append(proto, "-c", "maintenance.auto=false", "fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head", p.res.Remote)
	args = append(append(args, specs...), "+"+SealRefPrefix+"*:"+sealNS+"*")
	if _, err := git(p.ctx, p.dir, nil, nil, args...); err != nil {
		return "", &RemoteError{Remote: p.res.Remote, Op: "fetch", Err: err}
	}
	// What the fetch staged, the seals it fetched and the records and
	// boundary refs the repository has: one listing, read by the steps
	// that follow (sortStaged, verifyRuns, setRefs) rather than each
	// listing its own.
	out, err := git(p.ctx, p.dir, nil, nil, "for-each-ref", "--format=%(objectname) %(refname)", pullNS, sealNS, RecordsRefPrefix, boundary.RunRefPrefix)
	if err != nil {
		return "", err
	}
	p.haveRef, p.listed = map[string]bool{}, true
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		oid, ref, ok := strings.Cut(line, " ")
		switch {
		case !ok:
		case strings.HasPrefix(ref, pullNS):
			p.staging = append(p.staging, ref)
			// Another run whose id starts with one of only's, or one an
			// interrupted pull left staged, is not this pull's.
			if p.only == nil || p.only[strings.TrimPrefix(ref, pullNS)] {
				keep = append(keep, line)
			}
		case strings.HasPrefix(ref, sealNS):
			p.staging = append(p.staging, ref)
			p.seals = append(p.seals, oid)
		default:
			p.haveRef[ref] = true
		}
	}
	return strings.Join(keep, "\n"), nil
}

// sortStaged sorts the staged runs. Those the journal lacks are to be
// imported (todo). Of those it has: one that lost its records ref gets
// it back from the records fetched (repairs), one that lost only its
// boundary ref gets it back now, and one pulled signed but not trusted
// is verified again (recheck). Every staging ref is deleted with the
// refs the import sets.
func (p *puller) sortStaged(staged string, skip map[string]bool) (todo, repairs []pending, recheck []cache.Pulled, err error) {
	pulledRows, err := p.j.PulledRuns()
	if err != nil {
		return nil, nil, nil, err
	}
	for _, line := range strings.Split(staged, "\n") {
		commit, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		fmt.Fprintf(&p.refs, "delete %s\n", ref)
		p.deleted[ref] = true
		run := strings.TrimPrefix(ref, pullNS)
		if skip[run] {
			continue
		}
		if !runid.Valid(run) {
			return nil, nil, nil, &RefusedError{Run: run, Commit: commit, Reason: "the run id is not one implloop writes"}
		}
		if _, err := p.j.GetRun(run); errors.Is(err, cache.ErrNotFound) {
			todo = append(todo, pending{run, commit})
			continue
		} else if err != nil {
			return nil, nil, nil, err
		}
		p.res.Present = append(p.res.Present, run)
		if row, ok := pulledRows[run]; ok && row.Commit == commit && strings.Contains("UEXYR", row.Signature) {
			recheck = append(recheck, row) // signed, not trusted when pulled: maybe now
		}
		if !p.haveRef[RecordsRef(run)] {
			repairs = append(repairs, pending{run, commit})
		} else if err := repairRefs(p.ctx, p.dir, p.j, run, nil, p.haveRef, &p.refs); err != nil {
			return nil, nil, nil, err
		}
	}
	return todo, repairs, recheck, nil
}

// repair gives runs the journal has back their records refs, to the
// records fetched for them. A records ref is what push sends on: one
// given back is checked as an import's are, and must be of the run the
// journal has.
func (p *puller) repair(repairs []pending) error {
	if len(repairs) == 0 {
		return nil
	}
	got, err := readRecords(p.ctx, p.dir, repairs, p.bud, p.now, nil)
	if err == nil {
		err = checkBoundaries(p.ctx, p.dir, got)
	}
	if err != nil {
		return err
	}
	for _, in := range got {
		if err := repairRefs(p.ctx, p.dir, p.j, in.rec.Run.ID, in, p.haveRef, &p.refs); err != nil {
			return err
		}
	}
	return nil
}

// verified is git's verification of the signatures of a pull's runs.
type verified struct {
	sigs []signature
	err  error
}

// importRuns reads, checks and imports the runs of todo in one
// transaction, the work overlapped: git verifies the signatures (one
// process for all) while the records are read; the rows go in and the
// blobs are stored as the runs are decoded; once all are read, the
// checks that need every run are made (checkAll). The import commits
// only once all are done, and not at all when one refused something. It
// returns the runs read, parents first, git's verification of each by
// commit, and the runs the journal added.
func (p *puller) importRuns(todo []pending) (ins []*incoming, sigOf map[string]signature, added []string, err error) {
	verify := make(chan verified, 1)
	go func() {
		sigs, err := verifyRuns(p.ctx, p.dir, todo, p.seals, p.bud, p.pin)
		verify <- verified{sigs, err}
	}()
	decoded := make(chan *incoming, len(todo))
	toStore := make(chan *incoming, len(todo))
	var readErr error
	read := make(chan struct{})
	go func() {
		ins, readErr = readRecords(p.ctx, p.dir, todo, p.bud, p.now, func(in *incoming) { decoded <- in; toStore <- in })
		close(decoded)
		close(toStore)
		close(read)
	}()
	stored := make(chan error, 1)
	go func() {
		stored <- storeBlobs(p.ctx, p.dir, p.j, toStore, len(todo), p.bud, func() error { <-read; return readErr })
	}()
	sigOf = map[string]signature{}
	checked := make(chan error, 1)
	go func() {
		<-read
		var err error
		ins, err = p.checkAll(todo, ins, readErr, <-verify, stored, sigOf)
		checked <- err
	}()
	wait := sync.OnceValue(func() error { return <-checked })
	added, err = p.j.ImportRecords(func(yield func(*cache.Records) bool) {
		for in := range decoded {
			if !yield(in.rec) {
				return
			}
		}
	}, func(w *cache.Journal) error {
		if err := wait(); err != nil {
			return err
		}
		return p.setRefs(w, ins, sigOf)
	})
	if werr := wait(); werr != nil {
		return nil, nil, nil, werr // the refusal, rather than the rollback it caused
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return ins, sigOf, added, nil
}

// checkAll makes the checks that need every run read, once the reading
// ended (with readErr) and git verified the signatures (v): the
// signatures first, as one that does not verify says the most of a
// forged record, then the lineage and the boundary commits; then it
// waits for the blobs to be stored. It returns the runs parents first.
func (p *puller) checkAll(todo []pending, ins []*incoming, readErr error, v verified, stored <-chan error, sigOf map[string]signature) ([]*incoming, error) {
	err := readErr
	if err == nil {
		err = v.err
	}
	if err == nil {
		err = checkSignatures(todo, ins, v.sigs, sigOf)
	}
	if err == nil {
		ins, err = parentsFirst(ins)
	}
	if err == nil {
		err = checkParents(p.j, ins)
	}
	if err == nil {
		err = checkBoundaries(p.ctx, p.dir, ins)
	}
	if serr := <-stored; err == nil {
		err = serr
	}
	return ins, err
}

// setRefs journals how each checked run was pulled, then sets every ref
// of the pull, the staging refs dropped, in one update-ref. It runs once
// every check passed and before the import commits: a pull killed
// between the two leaves refs to checked records that the journal
// lacks, which the next pull imports, never runs in the journal whose
// boundary commits no ref keeps from git gc.
func (p *puller) setRefs(w *cache.Journal, ins []*incoming, sigOf map[string]signature) error {
	for _, in := range ins {
		if err := w.PutPulled(p.pulledRow(in, sigOf[in.commit])); err != nil {
			return err
		}
	}
	for _, in := range ins {
		fmt.Fprintf(&p.refs, "update %s %s\n", RecordsRef(in.rec.Run.ID), in.commit)
		if bs := in.rec.Boundaries; len(bs) > 0 && bs[len(bs)-1].Commit != "" {
			fmt.Fprintf(&p.refs, "update %s %s\n", boundary.RunRef(in.rec.Run.ID), bs[len(bs)-1].Commit)
		}
	}
	if _, err := git(p.ctx, p.dir, []byte(p.refs.String()), nil, "update-ref", "--stdin"); err != nil {
		return err
	}
	p.cleared = true
	return nil
}

// pulledRow is how a run was pulled: from where, at which records
// commit, pushed by whom, and git's verification of its signature.
func (p *puller) pulledRow(in *incoming, sig signature) cache.Pulled {
	return cache.Pulled{RunID: in.rec.Run.ID, Remote: p.res.Remote, Commit: in.commit, Author: sig.author,
		Signature: sig.letter, Signer: sig.signer, Key: sig.key, At: p.now}
}

// repairRefs adds to refs the updates a run the journal has lacks: its
// records ref (to the commit fetched for it, in, read and checked; nil
// when the ref exists) and its boundary ref (to the last boundary commit
// the journal names, when git has it), as a pull killed after its import
// and before its refs left it. Records whose boundaries are not the
// journal's are another run's under its name: refused.
func repairRefs(ctx context.Context, dir string, j *cache.Journal, run string, in *incoming, haveRef map[string]bool, refs *strings.Builder) error {
	bs, err := j.Boundaries(run)
	if err != nil {
		return err
	}
	if in != nil {
		theirs := in.rec.Boundaries
		same := len(theirs) == len(bs)
		for i := 0; same && i < len(bs); i++ {
			same = theirs[i].Commit == bs[i].Commit && theirs[i].Tree == bs[i].Tree
		}
		if !same {
			return &RefusedError{Run: run, Commit: in.commit, Reason: "its boundaries are not those of the run this journal has"}
		}
		fmt.Fprintf(refs, "update %s %s\n", RecordsRef(run), in.commit)
	}
	if haveRef[boundary.RunRef(run)] {
		return nil
	}
	if len(bs) == 0 || bs[len(bs)-1].Commit == "" {
		return nil
	}
	last := bs[len(bs)-1].Commit
	if _, err := git(ctx, dir, nil, nil, "cat-file", "-e", last+"^{commit}"); err == nil {
		fmt.Fprintf(refs, "update %s %s\n", boundary.RunRef(run), last)
	}
	return nil
}

// parentsFirst orders runs so that each comes after the run it resumes.
func parentsFirst(ins []*incoming) ([]*incoming, error) {
	byID := map[string]*incoming{}
	for _, in := range ins {
		byID[in.rec.Run.ID] = in
	}
	sort.Slice(ins, func(a, b int) bool { return ins[a].rec.Run.StartedAt.Before(ins[b].rec.Run.StartedAt) })
	var out []*incoming
	done := map[string]bool{}
	var visit func(in *incoming, depth int) error
	visit = func(in *incoming, depth int) error {
		id := in.rec.Run.ID
		if done[id] {
			return nil
		}
		if depth > len(ins) {
			return &RefusedError{Run: id, Commit: in.commit, Reason: "its lineage is a cycle"}
		}
		if p, ok := byID[in.rec.Run.ParentID]; ok {
			if err := visit(p, depth+1); err != nil {
				return err
			}
		}
		done[id] = true
		out = append(out, in)
		return nil
	}
	for _, in := range ins {
		if err := visit(in, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkParents refuses a resumed run whose parent is neither in the
// journal nor in the pull: a resume here would have no lineage to replay.
func checkParents(j *cache.Journal, ins []*incoming) error {
	have := map[string]bool{}
	for _, in := range ins {
		p := in.rec.Run.ParentID
		if p != "" && !have[p] {
			if _, err := j.GetRun(p); err != nil {
				return &RefusedError{Run: in.rec.Run.ID, Commit: in.commit,
					Reason: fmt.Sprintf("it resumes run %s, which is neither in this journal nor on the remote", p)}
			}
		}
		have[in.rec.Run.ID] = true
	}
	return nil
}

// checkBoundaries checks that every boundary commit the records name was
// fetched with them and has the tree they say.
func checkBoundaries(ctx context.Context, dir string, ins []*incoming) error {
	var revs []string
	var owner []*incoming
	var trees []string
	for _, in := range ins {
		for _, b := range in.rec.Boundaries {
			if b.Commit == "" {
				continue
			}
			revs = append(revs, b.Commit+"^{tree}")
			owner, trees = append(owner, in), append(trees, b.Tree)
		}
	}
	if len(revs) == 0 {
		return nil
	}
	out, err := git(ctx, dir, []byte(strings.Join(revs, "\n")+"\n"), nil, "cat-file", "--batch-check=%(objectname)")
	if err != nil {
		return err
	}
	lines := strings.Split(out, "\n")
	for i, rev := range revs {
		if i >= len(lines) || lines[i] != trees[i] {
			return &RefusedError{Run: owner[i].rec.Run.ID, Commit: owner[i].commit,
				Reason: fmt.Sprintf("boundary commit %.12s is not in its history with tree %.12s", strings.TrimSuffix(rev, "^{tree}"), trees[i])}
		}
	}
	return nil
}

// storeBlobs copies the records' blobs the store lacks from git into it
// in one batch, each checked against the hash it is named by: a blob that
// fails leaves none of them stored. It takes the runs as they are decoded
// (n of them), reading their blobs in at most four `git cat-file --batch`
// rounds while the next runs are decoded; readErr says whether the reading
// failed, which stores nothing.
func storeBlobs(ctx context.Context, dir string, j *cache.Journal, runs <-chan *incoming, n int, b *budget, readErr func() error) error {
	batch, err := j.Blobs().NewBatch()
	if err != nil {
		return err
	}
	var chunk []*incoming
	round := func() error {
		var ids, hashes []string
		var owner []*incoming
		for _, in := range chunk {
			for _, h := range j.Blobs().Missing(in.rec.Blobs()) {
				ids, hashes, owner = append(ids, in.blobs[h]), append(hashes, h), append(owner, in)
			}
		}
		chunk = chunk[:0]
		return catBatch(ctx, dir, ids, func(i int, typ string, size int64, r io.Reader) error {
			if typ != "blob" {
				return &RefusedError{Run: owner[i].rec.Run.ID, Commit: owner[i].commit, Reason: fmt.Sprintf("blob %s is a %s", hashes[i], typ)}
			}
			if err := b.blob(pending{owner[i].rec.Run.ID, owner[i].commit}, hashes[i], size); err != nil {
				return err
			}
			// All into one pack, gate output too: the HTML report
			// copies a packed gate output beside itself to name it
			// (loop.Inspector.WriteHTMLReport). A file each cost more than the
			// whole pull besides.
			err := batch.Add(hashes[i], r)
			if errors.Is(err, cache.ErrBlobMismatch) {
				return &RefusedError{Run: owner[i].rec.Run.ID, Commit: owner[i].commit, Reason: err.Error()}
			}
			return err
		})
	}
	per := (n + 3) / 4
	for in := range runs {
		if err != nil {
			continue // the reader never waits on this goroutine
		}
		if chunk = append(chunk, in); len(chunk) >= per {
			err = round()
		}
	}
	if err == nil {
		err = readErr()
	}
	if err == nil {
		err = round()
	}
	if err != nil {
		batch.Abort()
		return err
	}
	return batch.Commit()
}

// checkSignatures pairs each read run with git's verification of its
// records commit (sigs, in the order of todo) into sigOf, by commit, with
// git's "none" made "cannot be checked" where the commit is signed
// (verifyCommits), and refuses a run whose signature does not verify:
// its records were changed after they were signed.
func checkSignatures(todo []pending, ins []*incoming, sigs []signature, sigOf map[string]signature) error {
	for i, p := range todo {
		sigOf[p.commit] = sigs[i]
	}
	for _, in := range ins {
		s := sigOf[in.commit]
		if s.letter == "N" && in.signed {
			s.letter = "E"
		}
		sigOf[in.commit] = s
		if s.letter == "B" {
			return &RefusedError{Run: in.rec.Run.ID, Commit: in.commit,
				Reason: "its signature does not verify: the records were changed after they were signed"}
		}
	}
	return nil
}

// reverify verifies again the runs the journal has that were pulled
// signed but not trusted (their key was not allowed, or could not be
// checked here), at the records commit they were pulled at: an allowed
// signers file that has their key now makes them trusted. A run trusted
// once stays so until it is pulled into another clone (a key removed
// from the allowed signers does not reach back). pin is the
// configuration git verifies with (nil: git's now).
func reverify(ctx context.Context, dir string, j *cache.Journal, rows []cache.Pulled, seals []string, b *budget, res *PullResult, pin *gitConfig) error {
	if len(rows) == 0 {
		return nil
	}
	todo := make([]pending, len(rows))
	for i, p := range rows {
		todo[i] = pending{p.RunID, p.Commit}
	}
	sigs, err := verifyRuns(ctx, dir, todo, seals, b, pin)
	if err != nil {
		return err
	}
	for i, p := range rows {
		s := sigs[i]
		if s.letter == "N" {
			s.letter = "E" // it was signed when pulled, and its commit is the same
		}
		if s.letter == p.Signature && s.key == p.Key {
			continue
		}
		p.Signature, p.Signer, p.Key = s.letter, s.signer, s.key
		if err := j.PutPulled(p); err != nil {
			return err
		}
		if s.letter == "G" {
			res.Retrusted = append(res.Retrusted, p.RunID)
			res.Trust[p.RunID] = TrustOf(&p)
		}
	}
	return nil
}
