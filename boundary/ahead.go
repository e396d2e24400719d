package boundary

import (
	"context"
	"fmt"
	"strings"

	"github.com/implloop/implloop/internal/gitobj"
)

// AheadRefPrefix is where the work of calls made ahead (--jobs) is kept
// between the moment a call returns and its task's turn: one ref per call,
// refs/implloop/ahead/<run>/<name>, on a commit of its worktree's tree
// whose parent is the boundary it started from. A worktree's index names
// the tree's objects only while the worktree exists, and a crashed run's
// worktrees are removed by the next run: without the ref, `git gc` could
// take the work a resume is to merge. Never pushed.
const AheadRefPrefix = "refs/implloop/ahead/"

// KeepAhead commits tree (a worktree's, see WorktreeTree) on base and
// points refs/implloop/ahead/<run>/<name> at the commit, which it
// returns. name must be usable as one ref name component.
func KeepAhead(ctx context.Context, repoDir, run, name, base, tree string) (string, error) {
	if err := checkRunID(run); err != nil {
		return "", err
	}
	if err := checkRunID(name); err != nil {
		return "", err
	}
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return "", err
	}
	us := gitobj.Ident{Name: "implloop", Email: "implloop@localhost"}
	id, err := g.objects(nil).Commit(ctx, gitobj.Commit{Tree: tree, Parents: []string{base}, Author: us, Committer: us, Message: "implloop: run " + run + ", a call made ahead, in its worktree\n"})
	if err != nil {
		return "", fmt.Errorf("keeping a call's work: %w", err)
	}
	if _, _, err := g.run(nil, nil, "update-ref", "-m", "implloop: a call made ahead", AheadRefPrefix+run+"/"+name, id); err != nil {
		return "", fmt.Errorf("keeping a call's work: %w", err)
	}
	return id, nil
}

// DropAhead deletes the refs KeepAhead made for calls (run and name
// each), once they are settled (their work merged, or refused), in one
// git command.
func DropAhead(ctx context.Context, repoDir string, calls ...[2]string) error {
	var in strings.Builder
	for _, c := range calls {
		if checkRunID(c[0]) == nil && checkRunID(c[1]) == nil {
			in.WriteString("delete " + AheadRefPrefix + c[0] + "/" + c[1] + "\n")
		}
	}
	if in.Len() == 0 {
		return nil
	}
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return err
	}
	_, _, err = g.run(nil, []byte(in.String()), "update-ref", "--stdin")
	return err
}

// HasCommit reports whether the repository has commit id (a forgotten
// run's, collected by git gc, is gone).
func HasCommit(ctx context.Context, repoDir, id string) bool {
	g, err := openGit(ctx, repoDir)
	if err != nil || !isHexID(id) {
		return false
	}
	return g.hasObject(id + "^{commit}")
}
