package boundary

import (
	"context"
	"strings"

	"github.com/implloop/implloop/internal/gitcmd"
)

// Stash is the newest entry of the repository's stash (refs/stash).
type Stash struct {
	Commit  string // "" when the stash is empty
	Subject string // its message: "WIP on main: 3f9a1c2 start"
}

// StashTop reads the newest stash entry of the repository around dir
// (read-only). A task whose agent ran `git stash` leaves a new one: the
// loop compares it before and after the task, so that BLOCKED.md can
// name it.
func StashTop(ctx context.Context, dir string) (Stash, error) {
	out, err := gitcmd.Output(ctx, dir, "log", "-g", "-1", "--format=%H%x00%gs", "refs/stash", "--")
	if err != nil {
		if gitcmd.ExitCode(err) > 0 {
			return Stash{}, nil // no stash at all
		}
		return Stash{}, err
	}
	commit, subject, _ := strings.Cut(strings.TrimSpace(out), "\x00")
	return Stash{Commit: commit, Subject: subject}, nil
}
