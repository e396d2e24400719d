package boundary

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/internal/gitobj"
)

// refMove is a ref a Take moves: ref to id, only while it holds old (""
// when it must not exist), logged (when git logs it) with msg. anyOld
// moves it even from elsewhere when it no longer holds old (moved
// meanwhile: the chain goes on from id). wrap prefixes a failure.
type refMove struct {
	ref, id, old, msg string
	anyOld            bool
	wrap              string
}

// moveRefs moves the refs a Take moves (the run's ref, and its kept ref
// at a boundary that changed what it keeps), each as `git update-ref -m
// <msg> <ref> <id> <old>` would: in one `git update-ref --stdin` when
// that is the same thing (quietRefs), else one by one. A batch that
// fails changed nothing (git's transaction is all or nothing), and the
// moves are then made one by one, each with its own checks and fallback.
func (g *gitRepo) moveRefs(moves []refMove) error {
	if len(moves) > 1 && g.quietRefs(moves) {
		var in bytes.Buffer
		for _, m := range moves {
			old := m.old
			if old == "" {
				old = g.zeroID() // -z: an empty old value is no check at all
			}
			fmt.Fprintf(&in, "update %s\x00%s\x00%s\x00", m.ref, m.id, old)
		}
		if _, _, err := g.run(nil, in.Bytes(), "update-ref", "-m", moves[0].msg, "-z", "--stdin"); err == nil {
			return nil
		} else if g.ctx.Err() != nil {
			return fmt.Errorf("%s: %w", moves[0].wrap, err)
		}
	}
	for _, m := range moves {
		_, _, err := g.run(nil, nil, "update-ref", "-m", m.msg, m.ref, m.id, m.old)
		if err != nil && m.anyOld {
			_, _, err = g.run(nil, nil, "update-ref", "-m", m.msg, m.ref, m.id)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m.wrap, err)
		}
	}
	return nil
}

// zeroID is the null object id of the repository's object format.
func (g *gitRepo) zeroID() string {
	if g.sha256 {
		return strings.Repeat("0", 64)
	}
	return strings.Repeat("0", 40)
}

// quietKeys are the configuration quietRefs goes by: core.logAllRefUpdates
// logs refs/implloop/ only when "always" (git init writes "true"), a
// reftable is not files, and core.hooksPath may name a directory holding
// a reference-transaction hook.
var quietKeys = []gitobj.Key{
	{Name: "logallrefupdates", Harmless: []string{"true", "false", "yes", "no", "on", "off", "1", "0"}},
	{Name: "refstorage", Harmless: []string{"files"}},
	{Name: "hookspath"},
}

// quietRefs reports whether moving refs in one transaction is what
// moving them one by one would be, save for the number of processes:
// nothing sees the moves apart but their reflogs (each move's own
// message) and the reference-transaction hook (one transaction each).
// So only when git writes no reflog for any of them (none is there, and
// git's configuration cannot ask for one: core.logAllRefUpdates is not
// set to "always" anywhere, so refs/implloop/ is not logged), runs no hook of
// the kind (none in the repository's hooks directory, core.hooksPath
// mentioned nowhere), and keeps its refs in files (no reftable, whose
// logs cannot be looked for so).
func (g *gitRepo) quietRefs(moves []refMove) bool {
	if _, mentioned := gitobj.ConfigMentions(gitobj.Repo{Dir: g.root, GitDir: g.gitDir, CommonDir: g.commonDir}, quietKeys...); mentioned {
		return false
	}
	absent := func(p string) bool {
		_, err := os.Lstat(p)
		return errors.Is(err, os.ErrNotExist) || isNotDirErr(err)
	}
	if !absent(filepath.Join(g.commonDir, "reftable")) || !absent(filepath.Join(g.commonDir, "hooks", "reference-transaction")) {
		return false
	}
	for _, m := range moves {
		if !strings.HasPrefix(m.ref, "refs/implloop/") || !absent(filepath.Join(g.commonDir, "logs", filepath.FromSlash(m.ref))) {
			return false
		}
	}
	return true
}
