package loop

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/procgroup"
	"github.com/implloop/implloop/treewatch"
)

// While a run holds the work tree's lock it keeps a watch on the work tree
// (treewatch), and each boundary is taken from the paths that changed
// since the previous one (boundary.WithChanged) when the watch was whole
// over that interval; otherwise, and whenever the boundary cannot be sure,
// the whole tree is looked at as before. `git config implloop.watch false`
// turns the watch off. The watch's state is in <git-dir>/implloop/watch
// (for `implloop status --json`), removed when the run ends.

// treeWatch is the engine's part that holds the work tree's watch: nil
// without one; watchBase the commit of the boundary taken after its last
// sync.
type treeWatch struct {
	watch        *treewatch.Watcher
	watchState   string
	watchBase    string
	watchSkipped bool
}

// watchFile is the watch's state file in the work tree's state directory.
const watchFile = "watch"

// WatchInfo is what a run says about its watch (the watch file).
type WatchInfo struct {
	RunID   string    `json:"run_id"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Dirs is how many directories are watched; StartupMS how long
	// watching them took.
	Dirs      int     `json:"dirs"`
	StartupMS float64 `json:"startup_ms"`
	// Broken says why every boundary looks at the whole tree anyway
	// (the watch limit reached, ...).
	Broken string `json:"broken,omitempty"`
}

// WatchStatus says whether a run watches the work tree now.
type WatchStatus struct {
	InUse bool `json:"in_use"`
	// Why not: no run holds the lock, the run keeps no watch.
	Reason string `json:"reason,omitempty"`
	*WatchInfo
}

// startWatch starts the work tree's watch for the run (nil when it cannot
// start, or is turned off: every boundary then looks at the whole tree).
// stateDir is the work tree's state directory (where the lock is).
func (e *engine) startWatch(ctx context.Context, stateDir string) {
	root := ""
	if k := e.o.Known; k != nil {
		if k.WatchOff || k.Top == "" {
			return
		}
		root = k.Top
	} else {
		if off, _ := gitcmd.Output(ctx, e.o.RepoRoot, "config", "--type=bool", "--get", "implloop.watch"); off == "false" {
			return
		}
		var err error
		if root, err = gitcmd.Output(ctx, e.o.RepoRoot, "rev-parse", "--show-toplevel"); err != nil {
			return
		}
	}
	e.watchState = filepath.Join(stateDir, watchFile)
	w, err := treewatch.Start(root, treewatch.Options{CookieDir: filepath.Join(stateDir, "watch-cookies")})
	if err != nil {
		// Not a concern of the run's: its boundaries are what they were
		// without a watch (inotify's instances used up, no inotify).
		// implloop status --json says why.
		e.writeWatchInfo(WatchInfo{Broken: "it could not start: " + err.Error()})
		return
	}
	e.watch = w
	e.writeWatch()
}

// writeWatch writes the watch file.
func (e *engine) writeWatch() {
	if e.watch == nil {
		return
	}
	st := e.watch.Stats()
	e.writeWatchInfo(WatchInfo{Dirs: st.Dirs, StartupMS: float64(st.Startup.Microseconds()) / 1000, Broken: st.Broken})
}

// writeWatchInfo writes info, the run's, as the watch file.
func (e *engine) writeWatchInfo(info WatchInfo) {
	info.RunID, info.PID, info.Started = e.runID, os.Getpid(), e.now()
	b, _ := json.Marshal(info)
	tmp := e.watchState + ".tmp"
	if os.WriteFile(tmp, append(b, '\n'), 0o644) == nil {
		_ = os.Rename(tmp, e.watchState)
	}
}

// stopWatch ends the watch.
func (e *engine) stopWatch() {
	if e.watchState != "" {
		os.Remove(e.watchState)
	}
	if e.watch == nil {
		return
	}
	e.watch.Close()
	e.watch = nil
	_ = os.Remove(filepath.Join(filepath.Dir(e.watchState), "watch-cookies")) // empty once closed
}

// watchOptions syncs the watch before a boundary: the paths that changed
// since the previous boundary, when the watch saw them all and prev is
// the boundary taken right after the previous sync.
func (e *engine) watchOptions(ctx context.Context, prev *boundary.Snapshot) []boundary.Option {
	if e.watch == nil {
		return nil
	}
	c := e.watch.Sync(ctx)
	base := e.watchBase
	e.watchBase = ""
	if !c.Complete || prev == nil || prev.Commit == "" || prev.Commit != base {
		return nil
	}
	return []boundary.Option{boundary.WithChanged(c.Paths, c.Nested, c.Unwatched)}
}

// watched notes the boundary taken after a sync: the next one may start
// from it. A run's first boundary lists the wholly ignored directories,
// which need no watch.
func (e *engine) watched(snap boundary.Snapshot) {
	if e.watch == nil {
		return
	}
	e.watchBase = snap.Commit
	if d := snap.WatchUnskip(); len(d) > 0 {
		e.watch.Unskip(d)
	}
	if snap.Ignored != nil && len(snap.Ignored.Dirs) > 0 && !e.watchSkipped {
		e.watch.Skip(snap.Ignored.Dirs)
		e.watchSkipped = true
		e.writeWatch()
	}
}

// ReadWatch says whether a run watches the work tree at repoRoot now. It
// reads the watch and lock files and writes nothing.
func ReadWatch(repoRoot string) (WatchStatus, error) {
	dirs, err := cache.StateDir(repoRoot)
	if err != nil {
		return WatchStatus{}, err
	}
	h := readLockHolder(filepath.Join(dirs.Lock, "lock"))
	if h.RunID == "" || !lockHeld(dirs.Lock) || !procgroup.Alive(h.PID) {
		return WatchStatus{Reason: "no run holds the work tree's lock"}, nil
	}
	b, err := os.ReadFile(filepath.Join(dirs.Lock, watchFile))
	if errors.Is(err, os.ErrNotExist) {
		return WatchStatus{Reason: "run " + h.RunID + " keeps no watch (turned off, or it could not start)"}, nil
	}
	if err != nil {
		return WatchStatus{}, err
	}
	var info WatchInfo
	if err := json.Unmarshal(b, &info); err != nil || info.RunID != h.RunID {
		return WatchStatus{Reason: "run " + h.RunID + " keeps no watch"}, nil
	}
	st := WatchStatus{InUse: info.Broken == "", WatchInfo: &info}
	if info.Broken != "" {
		st.Reason = "the watch is not in use: " + strings.TrimSpace(info.Broken)
	}
	return st, nil
}
