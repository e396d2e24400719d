package boundary

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/implloop/implloop/internal/gitobj"
)

// Three-way merges of trees whose histories are not related (implloop
// work): a worker did a task from a tree (its dependencies' results merged
// onto the plan's base), and the run that gathers the workers' results
// merges that task's work into a tree that holds other tasks' work too.
// git merge-tree finds the merge base from the commits' history; these
// make the history say what the base is: a root commit of the base tree,
// and one commit of each side on it.

// MergeTrees is git's three-way merge of the trees ours and theirs with
// base as their merge base; nothing is written in a work tree.
func MergeTrees(ctx context.Context, repoDir, base, ours, theirs string) (Merge, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return Merge{}, err
	}
	return g.mergeTrees(base, ours, theirs)
}

// MergeTreesInto is MergeTrees into the work tree: ours is a boundary
// commit (the work tree as it is), and when the merge is clean the paths
// in which its result differs from ours are written, as MergeInto writes
// them; on a conflict nothing is written.
func MergeTreesInto(ctx context.Context, repoDir, base, ours, theirs string) (Merge, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return Merge{}, err
	}
	m, err := g.mergeTrees(base, ours+"^{tree}", theirs)
	if err != nil || len(m.Conflicts) > 0 {
		return m, err
	}
	return m, g.writeMerge(ctx, ours, &m)
}

func (g *gitRepo) mergeTrees(base, ours, theirs string) (Merge, error) {
	env := []string{"GIT_AUTHOR_NAME=implloop", "GIT_AUTHOR_EMAIL=implloop@localhost", "GIT_COMMITTER_NAME=implloop",
		"GIT_COMMITTER_EMAIL=implloop@localhost", "GIT_AUTHOR_DATE=@0 +0000", "GIT_COMMITTER_DATE=@0 +0000"}
	commit := func(tree string, parents ...string) (string, error) {
		if isHexID(tree) {
			// Written in process where git would write it the same way.
			zero := gitobj.Ident{Name: "implloop", Email: "implloop@localhost", When: time.Unix(0, 0).UTC()}
			return g.objects(nil).Commit(g.ctx, gitobj.Commit{Tree: tree, Parents: parents, Author: zero, Committer: zero, Message: "implloop: a merge side\n"})
		}
		args := []string{"commit-tree", "--no-gpg-sign", tree}
		for _, p := range parents {
			args = append(args, "-p", p)
		}
		out, _, err := g.run(env, []byte("implloop: a merge side\n"), args...)
		return strings.TrimSpace(string(out)), err
	}
	b, err := commit(base)
	if err != nil {
		return Merge{}, fmt.Errorf("merging trees: %w", err)
	}
	o, err := commit(ours, b)
	if err != nil {
		return Merge{}, fmt.Errorf("merging trees: %w", err)
	}
	t, err := commit(theirs, b)
	if err != nil {
		return Merge{}, fmt.Errorf("merging trees: %w", err)
	}
	return g.mergeTree(o, t)
}

// mergeTree is `git merge-tree --write-tree` of two commits: the merged
// tree, or the conflicting paths.
func (g *gitRepo) mergeTree(ours, theirs string) (Merge, error) {
	out, _, err := g.run(nil, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs)
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if err != nil && exitCode(err) != 1 || len(lines) == 0 || !isHexID(lines[0]) {
		if err == nil {
			err = fmt.Errorf("git merge-tree said %q", clip(out))
		}
		return Merge{}, fmt.Errorf("merging a task's work: %w", err)
	}
	m := Merge{Tree: lines[0]}
	if err != nil { // exit 1: conflicts, one path per line after the tree
		for _, l := range lines[1:] {
			if l != "" {
				m.Conflicts = append(m.Conflicts, l)
			}
		}
	}
	return m, nil
}

// writeMerge writes a clean merge m into the work tree whose boundary
// commit is ours: each path in which m's tree differs from ours, only
// where the work tree still holds ours' content (Restore's rule).
func (g *gitRepo) writeMerge(ctx context.Context, ours string, m *Merge) error {
	changes, err := g.diffTree(nil, ours+"^{tree}", m.Tree, false)
	if err != nil {
		return err
	}
	r := &restorer{ctx: ctx, root: g.root, g: g}
	for _, c := range changes {
		if Excluded(c.Path) {
			continue
		}
		res := r.one(LostContent{Path: c.Path, Lost: c.After, Base: c.Before}, false)
		switch res.Action {
		case RestoreRefused, RestoreFailed:
			m.Refused = append(m.Refused, c.Path)
		case RestoreWritten, RestoreRemoved:
			m.Written = append(m.Written, c.Path)
		}
	}
	return nil
}

// CommitTree is the tree a boundary of a clean checkout of commit has:
// the commit's tree less implloop's own files and the paths exclude
// names (the plan: Take's WithExclude). Workers start from it, as the run
// that gathers their results does from its first boundary.
func CommitTree(ctx context.Context, repoDir, commit string, exclude ...string) (string, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "implloop-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, _, err := g.run(env, nil, "read-tree", commit+"^{tree}"); err != nil {
		return "", fmt.Errorf("the tree of %.12s: %w", commit, err)
	}
	paths := []string{"BLOCKED.md", ".implloop"}
	for _, x := range exclude {
		if x != "" {
			paths = append(paths, x)
		}
	}
	args := append([]string{"--literal-pathspecs", "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"}, paths...)
	if _, _, err := g.run(env, nil, args...); err != nil {
		return "", fmt.Errorf("the tree of %.12s: %w", commit, err)
	}
	out, _, err := g.run(env, nil, "write-tree")
	if err != nil {
		return "", fmt.Errorf("the tree of %.12s: %w", commit, err)
	}
	return strings.TrimSpace(string(out)), nil
}
