package boundary

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gitobj"
)

// Worktrees for tasks that run at once (--jobs): each runs in a linked
// worktree checked out at a boundary commit, and what it did comes back to
// the main work tree as a three-way merge of trees (git merge-tree), written
// only over the paths the merge changes.

// MinMergeTreeGit is the oldest git whose `merge-tree --write-tree` the
// merge needs.
const MinMergeTreeGit = "2.38"

// CheckMergeTree returns an error naming the git version when git is older
// than MinMergeTreeGit.
func CheckMergeTree(ctx context.Context) error {
	v, err := gitcmd.Output(ctx, "", "version")
	if err != nil {
		return err
	}
	major, minor, ok := gitVersion(v)
	if !ok {
		return nil // an unknown format: let merge-tree say what it can do
	}
	if major < 2 || major == 2 && minor < 38 {
		return fmt.Errorf("tasks run at once need git %s or later (git merge-tree --write-tree); this is %s", MinMergeTreeGit, strings.TrimSpace(v))
	}
	return nil
}

// gitVersion reads "git version 2.39.5" (or "2.39.5.windows.1").
func gitVersion(s string) (major, minor int, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return 0, 0, false
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(parts[1])
	return a, b, err1 == nil && err2 == nil
}

// WorktreeDir is where AddWorktree puts task worktrees of run, in the git
// directory of the work tree around repoDir (out of reach of the user's
// tools, like the rest of implloop's state).
func WorktreeDir(ctx context.Context, repoDir, run string) (string, error) {
	if err := checkRunID(run); err != nil {
		return "", err
	}
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return "", err
	}
	return filepath.Join(stateDir(g.gitDir), "worktrees", run), nil
}

// AddWorktree checks commit out, detached, into a new linked worktree at
// path. The user's hooks do not run.
func AddWorktree(ctx context.Context, repoDir, path, commit string) error {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if _, _, err := g.run(nil, nil, worktreeConfig("worktree", "add", "-q", "--detach", "--force", path, commit)...); err != nil {
		return fmt.Errorf("worktree for %.12s: %w", commit, err)
	}
	return nil
}

// ResetWorktree makes the task worktree at path hold commit again,
// detached, for the worker's next task: a worktree is reused from task to
// task this way (a fresh one checks out every file).
//
// last is the tree WorktreeTree read after the last task, "" when it was
// not read. When it was, the worktree's index holds exactly that tree (the
// files the task created included), so only the paths in which it differs
// from commit (diff-tree, from the two trees) are written back or removed
// (`git restore`), the other entries keeping their stat data: nothing
// looks at the other files (a checkout would look at every one), and
// nothing of the task writes after its tree was read (its process group
// is killed when the agent exits). HEAD is set apart (the task may have
// committed). Ignored files the task made (build outputs) stay, as they
// would on a developer's machine.
//
// Otherwise, or should that fail, `checkout -f` rewrites every tracked file
// that differs and `git clean` removes every file git does not track,
// ignored ones included (and the private index's lag is dropped, dropLag;
// the index noted as the commit's, noteIndexAt).
func ResetWorktree(ctx context.Context, path, commit, last string) error {
	if last != "" && resetPaths(ctx, path, commit, last) == nil {
		return nil
	}
	if _, err := gitcmd.Output(ctx, path, worktreeConfig("checkout", "-q", "-f", "--detach", commit)...); err != nil {
		return fmt.Errorf("worktree %s: %w", path, err)
	}
	if _, err := gitcmd.Output(ctx, path, "clean", "-q", "-f", "-f", "-d", "-x"); err != nil {
		return fmt.Errorf("worktree %s: %w", path, err)
	}
	dropLag(path)
	noteIndexAt(path, commit)
	return nil
}

// indexAtFile is where ResetWorktree notes the commit whose tree its
// checkout -f made the index, with the index's fingerprint then: a first
// boundary that finds the index as it was (indexFingerprint) and HEAD at
// that commit knows the index does not differ from HEAD without asking
// (indexDiff).
const indexAtFile = "index-at"

// noteIndexAt notes that the index of the worktree at path holds commit's
// tree, as checkout -f just wrote it (nothing when it cannot be told: an
// index elsewhere, GIT_INDEX_FILE).
func noteIndexAt(path, commit string) {
	gd := dotGitDir(path)
	if gd == "" || os.Getenv("GIT_INDEX_FILE") != "" {
		return
	}
	note := filepath.Join(stateDir(gd), indexAtFile)
	fp, err := indexFingerprint(filepath.Join(gd, "index"))
	if err != nil || os.MkdirAll(stateDir(gd), 0o755) != nil || os.WriteFile(note+".tmp", []byte(commit+"\n"+fp), 0o644) != nil {
		os.Remove(note)
		return
	}
	if os.Rename(note+".tmp", note) != nil {
		os.Remove(note)
	}
}

// indexAt is the commit whose tree the index holds as ResetWorktree
// noted it, when the index still has the fingerprint fp it had then; "".
func (g *gitRepo) indexAt(fp string) string {
	b, err := os.ReadFile(filepath.Join(stateDir(g.gitDir), indexAtFile))
	if err != nil || os.Getenv("GIT_INDEX_FILE") != "" {
		return ""
	}
	commit, noted, _ := strings.Cut(string(b), "\n")
	if fp == "" || noted != fp || !isHexID(commit) {
		return ""
	}
	return commit
}

// dropLag forgets what the private index of the worktree at path lags
// behind the last boundary by (catchUp), once checkout -f and clean -x
// made the worktree the commit's, nothing else on disk: the lag only
// told the next boundary of files that are now the commit's again or
// gone. Every entry of the private index is still checked against the
// disk by its stat data (which the checkout and clean changed wherever
// they wrote), and no untracked file is left for an entry missing from
// it to leave out: the next boundary records the same tree, without the
// git that caught up first.
func dropLag(path string) {
	if gd := dotGitDir(path); gd != "" {
		_ = os.Remove(filepath.Join(stateDir(gd), "boundary-index.lag"))
	}
}

// resetPaths is ResetWorktree's way when the worktree's index holds the
// tree last.
func resetPaths(ctx context.Context, path, commit, last string) error {
	names, err := gitcmd.Output(ctx, path, "diff-tree", "-r", "-z", "--name-only", "--no-renames", commit, last)
	if err != nil {
		return err
	}
	if names = strings.TrimRight(names, "\x00"); names != "" {
		args := worktreeConfig("--literal-pathspecs", "restore", "--source="+commit, "--staged", "--worktree",
			"--no-overlay", "--pathspec-from-file=-", "--pathspec-file-nul")
		if _, _, err := gitcmd.Run(ctx, gitcmd.Options{Dir: path, Stdin: strings.NewReader(names + "\x00")}, args...); err != nil {
			return err
		}
	}
	_, err = gitcmd.Output(ctx, path, worktreeConfig("update-ref", "--no-deref", "HEAD", commit)...)
	return err
}

// worktreeConfig prefixes a git command that writes in a task worktree:
// no user hook runs, and its index (implloop's, and the agent's) is split,
// so that a command that changes a few entries of a large index writes
// only those (as Take's index does).
func worktreeConfig(args ...string) []string {
	return append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.splitIndex=true"}, args...)
}

// RemoveWorktrees removes every task worktree under dir (a WorktreeDir, or
// its parent for every run's) and forgets them: after a task, and after a
// crash, by the next run.
func RemoveWorktrees(ctx context.Context, repoDir, dir string) error {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return err
	}
	var errs []string
	entries, _ := os.ReadDir(dir)
	for _, en := range entries {
		p := filepath.Join(dir, en.Name())
		if _, err := os.Stat(filepath.Join(p, ".git")); err != nil {
			if sub, _ := os.ReadDir(p); len(sub) > 0 {
				// A run's directory of task worktrees.
				if err := RemoveWorktrees(ctx, repoDir, p); err != nil {
					errs = append(errs, err.Error())
				}
				continue
			}
		}
		if err := g.removeWorktree(p); err != nil {
			errs = append(errs, err.Error())
		}
	}
	_ = os.Remove(dir)
	if _, _, err := g.run(nil, nil, "worktree", "prune"); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing task worktrees: %s", strings.Join(errs, "; "))
	}
	return nil
}

// WorktreeTree is the tree of everything in the worktree at path, as a
// boundary records it (git add -A into the worktree's own index: implloop
// owns that index), whatever the task committed there.
func WorktreeTree(ctx context.Context, path string) (string, error) {
	if _, err := gitcmd.Output(ctx, path, worktreeConfig(append([]string{"add", "-A", "--ignore-errors", "--", ":/"}, ownExcludes()...)...)...); err != nil {
		return "", fmt.Errorf("worktree %s: %w", path, err)
	}
	id, err := gitcmd.Output(ctx, path, worktreeConfig("write-tree")...)
	if err != nil {
		return "", fmt.Errorf("worktree %s: %w", path, err)
	}
	return strings.TrimSpace(id), nil
}

// RemoveWorktree removes the task worktree at path and forgets it.
func RemoveWorktree(ctx context.Context, repoDir, path string) error {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return err
	}
	return g.removeWorktree(path)
}

// removeWorktree removes the worktree at path, even locked or dirty, and
// its directory when git cannot (a task broke it), which `worktree
// prune` then forgets (git's own removal leaves nothing to prune).
func (g *gitRepo) removeWorktree(path string) error {
	if _, _, err := g.run(nil, nil, "worktree", "remove", "--force", "--force", path); err != nil {
		if rerr := os.RemoveAll(path); rerr != nil {
			return err
		}
		_, _, _ = g.run(nil, nil, "worktree", "prune")
	}
	return nil
}

// Merge is the outcome of MergeInto.
type Merge struct {
	Tree      string   // the merged tree (with conflicts: git's, with markers)
	Conflicts []string // paths that did not merge cleanly; nothing was written
	// Refused are paths the merge changes that the work tree no longer
	// held as ours had them (changed meanwhile): left alone.
	Refused []string
	Written []string // paths written (or removed) in the work tree
}

// MergeInto merges into ours (a boundary commit: the work tree as it is)
// the work a task did in a worktree started at base (a boundary commit):
// theirs is the worktree's tree. It is git's three-way merge of commits
// (merge-tree --write-tree; base is their merge base). When it merges
// cleanly, the paths in which the result differs from ours are written
// into the work tree, each only where the work tree still holds ours'
// content (Restore's rule); on a conflict nothing is written.
func MergeInto(ctx context.Context, repoDir, base, ours, theirs string) (Merge, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return Merge{}, err
	}
	us := gitobj.Ident{Name: "implloop", Email: "implloop@localhost"}
	theirsCommit, err := g.objects(nil).Commit(ctx, gitobj.Commit{Tree: theirs, Parents: []string{base}, Author: us, Committer: us, Message: "implloop: a task's work from its worktree\n"})
	if err != nil {
		return Merge{}, err
	}
	m, err := g.mergeTree(ours, theirsCommit)
	if err != nil || len(m.Conflicts) > 0 {
		return m, err
	}
	return m, g.writeMerge(ctx, ours, &m)
}
