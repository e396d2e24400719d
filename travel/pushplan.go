package travel

import (
	"bytes"
	"context"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
)

// PushPlan is what a push would send, worked out without writing
// anything (push --dry-run, and what push asks about on a terminal).
type PushPlan struct {
	Remote string
	URL    string // the remote's URL, when it is a configured remote
	// Sign: the runs made here would be signed (SignsRuns), with Key
	// (SigningKey).
	Sign bool
	Key  string
	Runs []PlannedPush // oldest first
	// Skipped are runs that have not ended: nothing to push yet.
	Skipped []string
	// RemoteErr is why the remote could not be asked what it has (every
	// run is listed as going then).
	RemoteErr error
}

// PlannedPush is one run as a push would send it.
type PlannedPush struct {
	Run     string
	Host    string
	Verdict string
	Pulled  bool // pulled from elsewhere: it goes as it came
	There   bool // the remote has it already: nothing goes
	// Bytes is the size of its rows and of the blobs they name (what its
	// records hold); Blobs counts the blobs.
	Bytes int64
	Blobs int
	// Transcripts: prompts, agents' stdout and stderr and gates' output go.
	Transcripts bool
	// Boundaries is how many boundary commits go (each the whole work
	// tree at that moment), and Uncommitted the paths they hold that the
	// user's HEAD did not then: files nobody committed, which leave with
	// them.
	Boundaries  int
	Uncommitted []string
	// Signature is how its records go: "signed (ssh key ...)",
	// "signed by alice@example.com (as pulled)", "unsigned".
	Signature string
	Signed    bool
}

// PlanPush is what Push would send with o: read from the journal and git,
// nothing written (a run whose records are not written yet is sized from
// its rows). The remote is asked what it has (`git ls-remote`); when it
// cannot be reached, RemoteErr says so and every run is listed as going.
func PlanPush(ctx context.Context, j *cache.Journal, o PushOptions) (*PushPlan, error) {
	dir := j.Root()
	sc, err := scopePush(ctx, j, o)
	if err != nil {
		return nil, err
	}
	p := &PushPlan{Remote: sc.remote, Skipped: sc.skipped, Sign: sc.sign}
	p.URL, _ = git(ctx, dir, nil, nil, "config", "--get", "remote."+p.Remote+".url")
	runs, pulled := sc.runs, sc.pulled
	if p.Sign {
		p.Key = SigningKey(ctx, dir)
	}
	there, err := lsRemote(ctx, dir, p.Remote)
	if err != nil {
		p.RemoteErr, there = err, map[string]string{}
	}
	var pairs []string // "<boundary commit> <its HEAD>" for diff-tree
	owner := map[string]int{}
	for _, r := range runs {
		pp, rec, err := p.planRun(ctx, j, r, o, there, pulled)
		if err != nil {
			return nil, err
		}
		for _, b := range rec.Boundaries {
			if b.Commit != "" && b.Head != "" {
				owner[b.Commit] = len(p.Runs)
				pairs = append(pairs, b.Commit+" "+b.Head)
			}
		}
		p.Runs = append(p.Runs, pp)
	}
	p.findUncommitted(ctx, dir, pairs, owner)
	return p, nil
}

// planRun is how run r would go: whether the remote has it (there: the
// remote's refs), what its records weigh, how they would be signed. It
// returns the records that would go, too.
func (p *PushPlan) planRun(ctx context.Context, j *cache.Journal, r *cache.Run, o PushOptions, there map[string]string, pulled map[string]cache.Pulled) (PlannedPush, *cache.Records, error) {
	dir := j.Root()
	rec, err := j.Records(r.ID)
	if err != nil {
		return PlannedPush{}, nil, err
	}
	pp := PlannedPush{Run: r.ID, Host: r.Host, Verdict: r.Verdict, Transcripts: !o.NoTranscripts, Boundaries: len(rec.Boundaries)}
	full, bounds, err := runRefs(ctx, dir, r.ID)
	if err != nil {
		return PlannedPush{}, nil, err
	}
	pp.There = full != "" && there[RecordsRef(r.ID)] != "" &&
		(bounds == "" || there[boundary.RunRef(r.ID)] == bounds)
	if o.NoTranscripts {
		rec = withoutTranscripts(rec)
	}
	if pp.Bytes, pp.Blobs, err = recordsSize(j, rec); err != nil {
		return PlannedPush{}, nil, err
	}
	signed := false
	if full != "" {
		if raw, err := git(ctx, dir, nil, nil, "cat-file", "commit", full); err == nil {
			signed = hasSignature([]byte(raw))
		}
	}
	pu, isPulled := pulled[r.ID]
	pp.Pulled = isPulled
	pp.Signature, pp.Signed = p.signature(signed, isPulled, &pu)
	return pp, rec, nil
}

// recordsSize is the size of rec's rows and of the blobs they name (a
// blob the store lacks counts, weighing nothing).
func recordsSize(j *cache.Journal, rec *cache.Records) (size int64, blobs int, err error) {
	fs, err := files(rec)
	if err != nil {
		return 0, 0, err
	}
	for _, b := range fs {
		size += int64(len(b))
	}
	for _, h := range rec.Blobs() {
		if n, err := j.Blobs().Size(h); err == nil {
			size += n
		}
		blobs++
	}
	return size, blobs, nil
}

// signature says how a run's records would go: a pulled run (pu) as it
// came, a run made here signed already or signed now when the push
// signs, else unsigned.
func (p *PushPlan) signature(signed, isPulled bool, pu *cache.Pulled) (string, bool) {
	if isPulled {
		t := TrustOf(pu)
		switch {
		case signed && t.Trusted:
			return "signed by " + t.Who + " (as pulled)", true
		case signed:
			return "signed, as pulled: " + t.Why, true
		default:
			return "unsigned (as pulled)", false
		}
	}
	switch {
	case signed:
		return "signed", true
	case p.Sign:
		return "signed now (" + p.Key + ")", true
	default:
		return "unsigned (set commit.gpgSign or implloop.signRuns to sign)", false
	}
}

// findUncommitted fills each run's Uncommitted: what its boundaries hold
// that their HEAD did not, from one `git diff-tree --stdin` for every
// boundary of every run (pairs, "<boundary commit> <its HEAD>"; owner:
// boundary commit -> index in p.Runs). When git cannot say, they stay
// empty.
func (p *PushPlan) findUncommitted(ctx context.Context, dir string, pairs []string, owner map[string]int) {
	if len(pairs) == 0 {
		return
	}
	out, err := git(ctx, dir, []byte(strings.Join(pairs, "\n")+"\n"), nil, "diff-tree", "-r", "--name-only", "-z", "--diff-filter=d", "--no-renames", "--stdin")
	if err != nil {
		return
	}
	seen := make([]map[string]bool, len(p.Runs))
	cur := -1
	for _, tok := range bytes.Split([]byte(out), []byte{0}) {
		if len(tok) == 0 {
			continue
		}
		if i, ok := owner[string(tok)]; ok {
			cur = i
			continue
		}
		if cur < 0 {
			continue
		}
		if seen[cur] == nil {
			seen[cur] = map[string]bool{}
		}
		if path := string(tok); !seen[cur][path] {
			seen[cur][path] = true
			p.Runs[cur].Uncommitted = append(p.Runs[cur].Uncommitted, path)
		}
	}
}
