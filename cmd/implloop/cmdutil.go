package main

// The helpers every command shares: finding the repository, opening the
// journal and resolving a run in it, and turning the loop's errors into
// messages with hints. Commands open the journal only through these, as a
// loop.Inspector, and ask it for what they print (or hand its journal to
// a library that writes: travel).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/sandbox"
)

// openRun opens the journal read-only and resolves RUN, args[0] (default:
// the latest run).
func openRun(io *ioStreams, args []string) (*loop.Inspector, *loop.RunRecord, error) {
	ref := ""
	if len(args) > 0 {
		ref = args[0]
	}
	_, in, run, err := openRunIn(io, ref, loop.Inspect)
	return in, run, err
}

// openRunRoot is openRun of ref for a command that also needs the
// repository's root (to read the tree, or to make a path repo-relative).
func openRunRoot(io *ioStreams, ref string) (root string, in *loop.Inspector, run *loop.RunRecord, err error) {
	return openRunIn(io, ref, loop.Inspect)
}

// openRunIn finds the repository, opens its journal with open and
// resolves ref in it. A writing command (resume) opens it with
// loop.InspectUpgrading, which upgrades an older schema that the
// read-only opener refuses.
func openRunIn(io *ioStreams, ref string, open func(root string) (*loop.Inspector, error)) (string, *loop.Inspector, *loop.RunRecord, error) {
	root, err := repoRoot(io.workingDir)
	if err != nil {
		return "", nil, nil, err
	}
	in, err := open(root)
	if err != nil {
		return "", nil, nil, loopError(err)
	}
	run, err := in.ResolveRun(ref)
	if err != nil {
		in.Close()
		return "", nil, nil, loopError(err)
	}
	return root, in, run, nil
}

// loopError adds hints to the loop's errors.
func loopError(err error) error {
	var locked *loop.LockedError
	var orphan *loop.ChildRunningError
	var planErr *loop.PlanError
	var rangeErr *loop.RangeError
	var emptyRange *extractor.EmptyRangeError
	var readErr *loop.PlanReadError
	var checkErr *agent.CheckError
	var settingErr *loop.SettingError
	var unknownAgent *loop.UnknownAgentError
	var noSandbox *sandbox.UnavailableError
	switch {
	case errors.As(err, &noSandbox):
		return errorf(noSandbox.Hint, "--sandbox: %s", noSandbox.Msg)
	case errors.Is(err, sandbox.ErrReftable):
		return errorf("run without --sandbox in this repository", "--sandbox: %s", err)
	case errors.As(err, &settingErr):
		return usagef(settingErr.Hint, "%s", settingErr)
	case errors.As(err, &unknownAgent):
		return usagef("any other command works as an agent: --agent-cmd 'your command'", "--agent: %s", err)
	case errors.Is(err, loop.ErrNoAgent):
		return usagef("pick an agent: --agent claude|codex|gemini|opencode|builtin, or --agent-cmd 'your command' (or agent: in the plan's front matter)", "no agent given")
	case errors.As(err, &locked):
		return errorf("wait for it to finish, or stop it (Ctrl-C) first", "%s", err)
	case errors.As(err, &orphan):
		hint := "its implloop is gone; once it exits, resume again"
		if orphan.PID > 0 {
			hint = fmt.Sprintf("its implloop is gone; wait for it to exit, or stop it (kill %d), then resume again", orphan.PID)
		}
		return errorf(hint, "%s", err)
	case errors.Is(err, loop.ErrStoppedFile):
		return errorf("read BLOCKED.md (a budget cap or a usage limit stopped the run; no task failed), remove it, then resume as it says",
			"%s: it is waiting to be resumed", loop.ErrBlockedFile)
	case errors.Is(err, loop.ErrBlockedFile):
		return errorf("read BLOCKED.md, fix the cause, then remove it: rm BLOCKED.md", "%s: a blocked run is waiting for a repair", err)
	case errors.As(err, &planErr):
		return errorf("run 'implloop lint "+planErr.Path+"' and fix the errors", "%s", err)
	case errors.As(err, &rangeErr):
		return usagef("accepted forms: 10:13, 10:, :5, 7, T010:T013", "--task-range: %s", rangeErr.Err)
	case errors.As(err, &emptyRange):
		return usagef("run 'implloop plan PLAN' to list its tasks and their ids", "--task-range: %s", err)
	case errors.As(err, &readErr):
		return errorf("check the plan's path (relative to the current directory)", "%s", err)
	case errors.As(err, &checkErr):
		// The hint in its own line, not in the message's parentheses.
		return errorf(checkErr.Hint, "agent %s: %s", checkErr.Agent, checkErr.Msg)
	case errors.Is(err, loop.ErrNotRepository):
		return errorf("run implloop inside a git repository (git init, then commit your starting point)", "%s", err)
	case errors.Is(err, loop.ErrNoJournal):
		return errorf("start with 'implloop run PLAN'", "no implloop journal in this repository")
	case errors.Is(err, loop.ErrNotFound):
		return errorf("list runs with 'implloop runs'", "%s", err)
	}
	return err
}

// repoRoot is the git worktree around dir.
func repoRoot(dir string) (string, error) {
	if _, err := gitcmd.Path(); err != nil {
		return "", errorf("install git, then try again", "%s", gitcmd.ErrNotInstalled)
	}
	top, err := gitToplevel(dir)
	if err != nil {
		return "", errorf("run implloop inside a git repository (git init, then commit your starting point)", "%s is not inside a git repository", dir)
	}
	return top, nil
}

// journalPlanPath is plan path p (relative to the working directory wd) the
// way runLoop records it: relative to the repo root when inside it, else
// absolute.
func journalPlanPath(root, wd, p string) string {
	// git reports the root with symlinks resolved, while the working
	// directory may be reached through one (/tmp on macOS): resolve the
	// directories, not p itself, which may not exist (a path to restore).
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if !filepath.IsAbs(p) {
		if w, err := filepath.EvalSymlinks(wd); err == nil {
			wd = w
		}
		p = filepath.Join(wd, p)
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(d, filepath.Base(p))
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

// gitToplevel is the root of the git worktree around dir.
func gitToplevel(dir string) (string, error) {
	return gitcmd.Output(context.Background(), dir, "rev-parse", "--show-toplevel")
}

// gitConfigAll is every value of a multi-valued git config key (any
// scope), none when it is not set.
func gitConfigAll(ctx context.Context, root, key string) ([]string, error) {
	out, _, err := gitcmd.Run(ctx, gitcmd.Options{Dir: root}, "config", "-z", "--get-all", key)
	if err != nil {
		if gitcmd.ExitCode(err) == 1 {
			return nil, nil // not set
		}
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), nil
}

// hooksDir is where git runs hooks from for the repository at root:
// core.hooksPath (relative to the worktree root) when set, else the
// common git dir's hooks/ (shared by linked worktrees).
func hooksDir(root string) (string, error) {
	out, err := gitcmd.Output(context.Background(), root, "config", "--get", "core.hooksPath")
	switch {
	case err == nil && strings.TrimSpace(out) != "":
		p := strings.TrimSpace(out)
		if p == "~" || strings.HasPrefix(p, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("core.hooksPath %s: %w", p, err)
			}
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		return filepath.Clean(p), nil
	case err != nil && gitcmd.ExitCode(err) != 1: // 1: not set
		return "", fmt.Errorf("core.hooksPath: %w", err)
	}
	common, err := gitcmd.Output(context.Background(), root, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(root, common)
	}
	return filepath.Join(common, "hooks"), nil
}
