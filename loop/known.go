package loop

import (
	"context"
	"slices"
	"strings"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitcmd"
)

// Known is what a run learns of its work tree from git before it looks at
// it, learned once by a driver that starts many runs in one work tree (a
// worker of implloop work runs each task as a run of its own, in one
// worktree it keeps) and given to each (Options.Known), instead of each
// run asking git again: about seven processes a run.
//
// Known is learned before any agent ran in the work tree (Learn), and an
// agent shares git's configuration with the driver. What it holds stands
// for the driver's whole life where a run would otherwise take up what
// an agent set: what boundaries keep of ignored files (an agent's
// implloop.keep* is not taken up), the watch (a matter of speed: every
// boundary is right with or without it), and the ignore rules of git's
// configuration (info/exclude, core.excludesFile), which every run goes
// by, as the later tasks of one serial run go by its first boundary's:
// an agent that points core.excludesFile at a file ignoring its work
// hides nothing from the next task's run (knownRulesChanged says so).
// Where the work tree's git directories are is checked before each use,
// and asked of git again when it no longer holds (boundary.Repo).
type Known struct {
	// Dirs are where implloop keeps its state for the work tree
	// (cache.StateDir).
	Dirs cache.Dirs
	// Top is the work tree's top level as git names it (the watch's
	// root; "": none); WatchOff: git config implloop.watch is false.
	Top      string
	WatchOff bool
	// Keep is what boundaries keep of ignored files (boundary.KeepSettings);
	// nil when it could not be read: each run reads it, and says why not.
	Keep *boundary.Keep
	// Repo is what a run's first boundary asks git (boundary.LearnRepo).
	Repo *boundary.Repo
}

// Learn learns Known for the work tree at root.
func Learn(ctx context.Context, root string) (*Known, error) {
	dirs, err := cache.StateDir(root)
	if err != nil {
		return nil, err
	}
	k := &Known{Dirs: dirs}
	off, _ := gitcmd.Output(ctx, root, "config", "--type=bool", "--get", "implloop.watch")
	k.WatchOff = off == "false"
	if !k.WatchOff {
		k.Top, _ = gitcmd.Output(ctx, root, "rev-parse", "--show-toplevel") // "": no watch, as a run without Known
	}
	if keep, err := boundary.KeepSettings(ctx, root); err == nil {
		k.Keep = &keep
	}
	if k.Repo, err = boundary.LearnRepo(ctx, root); err != nil {
		return nil, err
	}
	return k, nil
}

// Relearn is Learn for a work tree made again where first was learned
// (a worker's, after a reset of it failed): agents have run there since,
// so what first learned of the ignore rules and of what boundaries keep
// stands, as it does for the runs that used first (nil first: Learn).
func Relearn(ctx context.Context, root string, first *Known) (*Known, error) {
	k, err := Learn(ctx, root)
	if err != nil || first == nil {
		return k, err
	}
	k.Keep = first.Keep // read as a copy (knownKeep)
	k.Repo.KeepRulesOf(first.Repo)
	return k, nil
}

// stateDirs are where implloop keeps its state for the run's work tree:
// Known's, else asked of git once a run.
func (e *engine) stateDirs() (cache.Dirs, error) {
	if e.o.Known != nil {
		return e.o.Known.Dirs, nil
	}
	if e.dirs == nil {
		d, err := cache.StateDir(e.o.RepoRoot)
		if err != nil {
			return cache.Dirs{}, err
		}
		e.dirs = &d
	}
	return *e.dirs, nil
}

// knownKeep is Known's Keep (a copy), nil without one.
func (e *engine) knownKeep() *boundary.Keep {
	if e.o.Known == nil || e.o.Known.Keep == nil {
		return nil
	}
	k := *e.o.Known.Keep
	k.Paths = slices.Clone(k.Paths)
	return &k
}

// knownRepo is the option that gives a run's first boundary Known's
// Repo (none without one).
func (e *engine) knownRepo() []boundary.Option {
	if e.o.Known == nil || e.o.Known.Repo == nil {
		return nil
	}
	return []boundary.Option{boundary.WithRepo(e.o.Known.Repo)}
}

// knownRulesChanged says, at a run's first boundary, how git's ignore
// rules differ from those Known learned before any agent ran, which the
// run goes by (boundary.Repo): a task of an earlier run changed them
// (without Known a first boundary's rules are git's, and this says
// nothing).
func (e *engine) knownRulesChanged(b0 boundary.Snapshot) {
	if len(b0.RulesChanged) == 0 {
		return
	}
	e.emit(Event{Type: EvConcern, Message: "the ignore rules changed since this work tree's runs began (" + strings.Join(b0.RulesChanged, "; ") +
		"), a task of an earlier run most likely: this run goes on deciding what is ignored with the rules they began with, so nothing the new rules hide leaves its sight"})
}

// stashTop is the newest stash entry (boundary.StashTop): through Known's
// Repo, which asks git only when the stash's files changed since.
func (e *engine) stashTop(ctx context.Context) (boundary.Stash, error) {
	if e.o.Known != nil && e.o.Known.Repo != nil {
		return e.o.Known.Repo.StashTop(ctx, e.o.RepoRoot)
	}
	return boundary.StashTop(ctx, e.o.RepoRoot)
}
