package travel

import (
	"path/filepath"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitobj"
)

// Objects is the object writer of the repository whose journal
// directories are dirs (objects, for the worker's own commits).
func Objects(dirs cache.Dirs) *gitobj.Writer { return objects(dirs) }

// objects is the object writer of the repository whose journal
// directories are dirs: objects written in process where git would write
// them the same way (gitobj), by git otherwise. dirs come from the
// journal (cache.StateDir asked git once), so opening it asks git
// nothing; without them (State empty) git writes, in dirs.Root.
func objects(dirs cache.Dirs) *gitobj.Writer {
	r := gitobj.Repo{Dir: dirs.Root}
	if dirs.State != "" && dirs.Lock != "" {
		r.CommonDir, r.GitDir = filepath.Dir(dirs.State), filepath.Dir(dirs.Lock)
	}
	return gitobj.Open(r)
}
