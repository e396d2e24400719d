package boundary

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// writeTreeOrReseed is writeTree for a boundary (WithRun), with one way
// out of a private index that git can no longer build a tree from.
//
// The private index is implloop's alone: `git gc` does not know it, so
// the objects only it names (the blob of an untracked file a task wrote,
// the cached trees) are collected once no ref reaches them any more. The
// documented way to forget a run (deleting its refs) followed by
// `git gc --prune=now` does exactly that, and then every `write-tree`
// fails with "invalid object" for a file whose stat data did not change
// (addChanged never hashes it again). A shared part git expired
// (splitIndex.sharedIndexExpire) breaks it the same way. The index is only
// a cache of the work tree: on a failure it is dropped and seeded again
// from the real index (whose objects gc keeps), and the tree is written
// once more. A second failure is the error.
func (t *taker) writeTreeOrReseed() (string, error) {
	tree, err := t.writeTree()
	if err == nil || t.o.run == "" || t.seeded || t.g.ctx.Err() != nil {
		return tree, err
	}
	private := filepath.Join(stateDir(t.g.gitDir), "boundary-index")
	if rerr := os.Remove(private); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return "", fmt.Errorf("%w (and the boundary index could not be rebuilt: %v)", err, rerr)
	}
	if rerr := t.prepareIndex(); rerr != nil {
		return "", fmt.Errorf("%w (and the boundary index could not be rebuilt: %v)", err, rerr)
	}
	return t.writeTree()
}
