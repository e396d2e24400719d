package travel

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitobj"
)

// # Seals: one signature for a push's runs
//
// Each run's records commit is signed, so a run carries its signer's
// word wherever it goes. Verifying a signature costs git two ssh-keygen
// (or one gpg) processes, and a pull of a team's hundred runs would pay
// that a hundred times. So a signing push also writes a seal: one commit,
// signed the same way, whose tree names each run it pushes and the
// records commit it pushes for it (a gitlink: `160000 commit <records>
// <run>`), on refs/implloop/seals/<seal>. A pull verifies the seals that
// cover the runs it imports first; a run whose fetched records commit is
// the one a good seal names is verified by that seal (the seal's
// signature covers its tree, which names the records commit, whose hash
// covers everything the run's own signature does), the others one by
// one. A seal signed by a key that is not allowed, or naming another
// commit for the run, verifies nothing: the run's own signature decides.

// SealRefPrefix is where a push's seals are kept.
const SealRefPrefix = "refs/implloop/seals/"

// sealNS is where a pull fetches seals; they are read there and dropped.
const sealNS = "refs/implloop-seals/"

// writeSeal writes and signs the seal of runs (run id -> records commit)
// and returns the commit: made by s's Name and signed as s learned when
// s learned them (nil: as git says now).
// Its tree is written in process where git would write it the same way
// (dirs: the journal's directories).
func writeSeal(ctx context.Context, dirs cache.Dirs, runs map[string]string, s *Signing) (string, error) {
	ids := make([]string, 0, len(runs))
	for id := range runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	tree := make([]gitobj.Entry, 0, len(ids))
	for _, id := range ids {
		tree = append(tree, gitobj.Entry{Mode: gitobj.ModeGitlink, Name: id, ID: runs[id]})
	}
	t, err := objects(dirs).Tree(ctx, tree)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("implloop seal of %d run(s)\n\nImplloop-Seal: %d\n", len(ids), Format)
	c, err := signedCommit(ctx, dirs, s.pin(), gitobj.Commit{Tree: t, Author: s.ident(), Committer: s.ident(), Message: msg})
	if err != nil {
		return "", &SignError{Run: strings.Join(ids, ", "), Err: err}
	}
	return c, nil
}

// verifyRuns is git's verification of each pending run's records commit,
// in the order of todo: through the seals fetched (seals: their commits,
// as the pull found them under sealNS) where a good one names the
// commit, else the commit's own signature. b counts what the seals take
// to read; pin is the configuration git verifies with (nil: git's now).
func verifyRuns(ctx context.Context, dir string, todo []pending, seals []string, b *budget, pin *gitConfig) ([]signature, error) {
	if len(todo) == 0 {
		return nil, nil
	}
	sigs := make([]signature, len(todo))
	covered := make([]bool, len(todo))
	if err := verifyBySeals(ctx, dir, todo, seals, b, sigs, covered, pin); err != nil {
		return nil, err
	}
	var rest []string
	var at []int
	for i, p := range todo {
		if !covered[i] {
			rest, at = append(rest, p.commit), append(at, i)
		}
	}
	got, err := verifyCommits(ctx, dir, rest, pin)
	if err != nil {
		return nil, err
	}
	for k, i := range at {
		sigs[i] = got[k]
	}
	return sigs, nil
}

// verifyBySeals fills sigs (and covered) for the runs of todo a good seal
// (of seals, commits) names with the commit fetched for them.
func verifyBySeals(ctx context.Context, dir string, todo []pending, seals []string, b *budget, sigs []signature, covered []bool, pin *gitConfig) error {
	if len(seals) == 0 {
		return nil
	}
	names, err := sealedRuns(ctx, dir, seals, todo, b)
	if err != nil {
		return err
	}
	pick := fewestSeals(names, len(todo))
	if len(pick) == 0 {
		return nil
	}
	commits := make([]string, len(pick))
	for k, i := range pick {
		commits[k] = seals[i]
	}
	got, err := verifyCommits(ctx, dir, commits, pin)
	if err != nil {
		return err
	}
	for k, i := range pick {
		if got[k].letter != "G" {
			continue // not a seal this clone trusts: the runs' own signatures decide
		}
		for _, r := range names[i] {
			if !covered[r] {
				sigs[r], covered[r] = got[k], true
			}
		}
	}
	return nil
}

// sealedRuns is, for each seal, the runs of todo it names with the
// commit fetched for them (indexes in todo): the seals' commits are read
// for their trees, then the trees, each in one `git cat-file --batch`.
// What is not a commit or a tree names nothing.
func sealedRuns(ctx context.Context, dir string, seals []string, todo []pending, b *budget) ([][]int, error) {
	want := map[string][]int{} // "run commit" -> indexes in todo
	for i, p := range todo {
		k := p.run + " " + p.commit
		want[k] = append(want[k], i)
	}
	trees := make([]string, len(seals))
	err := catBatch(ctx, dir, seals, func(i int, typ string, size int64, r io.Reader) error {
		if typ != "commit" {
			return nil
		}
		if err := b.pull(pending{"(seal)", seals[i]}, size); err != nil {
			return err
		}
		raw, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		trees[i], _ = commitTree(raw)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var ids []string
	var owner []int
	for i, t := range trees {
		if t != "" {
			ids, owner = append(ids, t), append(owner, i)
		}
	}
	names := make([][]int, len(seals))
	err = catBatch(ctx, dir, ids, func(k int, typ string, size int64, r io.Reader) error {
		if typ != "tree" {
			return nil
		}
		if err := b.pull(pending{"(seal)", seals[owner[k]]}, size); err != nil {
			return err
		}
		return readTree(r, len(ids[k])/2, func(mode, name, oid string) error {
			if mode == "160000" {
				names[owner[k]] = append(names[owner[k]], want[name+" "+oid]...)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// fewestSeals picks the seals to verify (indexes in names, which lists
// the runs each names, of n): the fewest that name every run they can,
// the largest first, as each verification costs git a process or two.
func fewestSeals(names [][]int, n int) []int {
	order := make([]int, 0, len(names))
	for i := range names {
		if len(names[i]) > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, c int) bool { return len(names[order[a]]) > len(names[order[c]]) })
	var pick []int
	seen := make([]bool, n)
	for _, i := range order {
		adds := false
		for _, r := range names[i] {
			adds = adds || !seen[r]
		}
		if !adds {
			continue
		}
		for _, r := range names[i] {
			seen[r] = true
		}
		pick = append(pick, i)
	}
	return pick
}
