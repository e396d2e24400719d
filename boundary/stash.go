package boundary

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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

// stashRacy is how old the files a stash is read from must be for what
// git read from them to be remembered (Repo.StashTop): a file changed
// again within its file system's timestamp granularity could keep its
// stat data.
const stashRacy = 3 * time.Second

// stashSeen is what git said the stash's newest entry was, and the stat
// data of the files it read that from then.
type stashSeen struct {
	fp  string
	top Stash
}

// StashTop is StashTop for r's work tree (dir within it): git is asked
// again only when one of the files it reads the answer from changed
// since it was last asked (stashFingerprint), so that a worker's runs,
// between whose tasks nothing touched the stash, ask once. A nil r, or
// one that no longer holds, asks git every time.
func (r *Repo) StashTop(ctx context.Context, dir string) (Stash, error) {
	fp, ok := r.stashFingerprint(dir)
	if ok {
		r.mu.Lock()
		seen := r.stash
		r.mu.Unlock()
		if seen != nil && seen.fp == fp {
			return seen.top, nil
		}
	}
	top, err := StashTop(ctx, dir)
	if err != nil || !ok {
		return top, err
	}
	if again, ok := r.stashFingerprint(dir); ok && again == fp {
		r.mu.Lock()
		r.stash = &stashSeen{fp: fp, top: top}
		r.mu.Unlock()
	}
	return top, nil
}

// stashFingerprint is the stat data of every file `git log -g -1
// refs/stash` may read its answer from: the reflog and the ref of each
// name git tries for refs/stash (refs/stash first; others only when it is
// not there), and their lines in packed-refs; ok false when it cannot tell a change
// from them (a reftable; a file without change time, or changed too
// recently: stashRacy; a symbolic ref; a symbolic link), or r does not hold for dir.
func (r *Repo) stashFingerprint(dir string) (fp string, ok bool) {
	if r == nil {
		return "", false
	}
	if root, err := findRoot(dir); err != nil || root != r.root || !r.Current() {
		return "", false
	}
	now := time.Now()
	if _, err := os.Lstat(filepath.Join(r.commonDir, "reftable")); !errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	var b strings.Builder
	var files, names []string
	for _, rule := range []string{"%s", "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD"} {
		name := fmt.Sprintf(rule, "refs/stash")
		files, names = append(files, name, "logs/"+name), append(names, name)
	}
	// packed-refs by the lines of those names (and what follows each: a
	// peeled id), not its stat data: other refs come and go in it.
	packed, err := os.ReadFile(filepath.Join(r.commonDir, "packed-refs"))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", false
	default:
		lines := strings.Split(string(packed), "\n")
		for i, l := range lines {
			if _, name, ok := strings.Cut(l, " "); ok && slices.Contains(names, strings.TrimSuffix(name, "\r")) {
				b.WriteString(l + "\x00")
				if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "^") {
					b.WriteString(lines[i+1])
				}
			}
		}
	}
	b.WriteString("\x00\x00")
	for _, f := range files {
		fi, err := os.Lstat(filepath.Join(r.commonDir, filepath.FromSlash(f)))
		switch {
		case errors.Is(err, os.ErrNotExist) || isNotDirErr(err):
			b.WriteString("-\x00")
			continue
		case err != nil:
			return "", false
		}
		if !strings.HasPrefix(f, "logs/") && !fi.Mode().IsRegular() || symbolic(r.commonDir, f) {
			return "", false // a symbolic ref: git may read its target's reflog
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return "", false // git reads what the link names, whose changes its stat data does not show
		}
		st := fileStat(fi)
		if st.Ctime == 0 || now.Sub(time.Unix(0, st.Ctime)) < r.racy || now.Sub(fi.ModTime()) < r.racy {
			return "", false
		}
		fmt.Fprintf(&b, "%v %o\x00", st, fi.Mode())
	}
	return b.String(), true
}

// symbolic reports whether the ref file f (under commonDir) names another
// ref ("ref: ...").
func symbolic(commonDir, f string) bool {
	if strings.HasPrefix(f, "logs/") {
		return false
	}
	b, err := os.ReadFile(filepath.Join(commonDir, filepath.FromSlash(f)))
	return err == nil && strings.HasPrefix(string(b), "ref:")
}
