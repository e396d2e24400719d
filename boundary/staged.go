package boundary

import (
	"bytes"
	"context"

	"github.com/implloop/implloop/internal/gitcmd"
)

// StagedChange is one path a commit would record now.
type StagedChange struct {
	Status string // A, M, D, T, U, ... as git diff --name-status prints it
	Path   string // repo-relative, forward slashes
}

// Staged lists what a commit would record now: the index against HEAD
// (against the empty tree before the first commit). Renames are listed as
// a deletion and an addition, so a file moved into .implloop/ is seen.
// Read-only: git takes no optional lock.
func Staged(ctx context.Context, root string) ([]StagedChange, error) {
	out, err := readGit(ctx, root, "diff", "--cached", "--name-status", "-z", "--no-renames", "--no-ext-diff")
	if err != nil {
		return nil, err
	}
	return parseNameStatus(out), nil
}

// StagedContent is the staged content of path (repo-relative): what a
// commit would record there now.
func StagedContent(ctx context.Context, root, path string) ([]byte, error) {
	return readGit(ctx, root, "cat-file", "blob", ":"+path)
}

// readGit runs a read-only git command in root. --no-optional-locks keeps
// git from refreshing the index, so a check writes nothing.
func readGit(ctx context.Context, root string, args ...string) ([]byte, error) {
	out, _, err := gitcmd.Run(ctx, gitcmd.Options{Dir: root}, append([]string{"--no-optional-locks"}, args...)...)
	return out, err
}

// parseNameStatus reads `git diff --name-status -z --no-renames` output:
// status NUL path NUL, repeated. A trailing odd field is dropped.
func parseNameStatus(out []byte) []StagedChange {
	var res []StagedChange
	if len(out) == 0 {
		return nil
	}
	fields := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		res = append(res, StagedChange{Status: string(fields[i]), Path: string(fields[i+1])})
	}
	return res
}
