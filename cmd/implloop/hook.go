package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// hookMarker is the line that tells implloop's pre-commit hook from any
// other.
const hookMarker = "# implloop pre-commit hook"

// chainedSuffix names where a pre-commit hook that was there before
// implloop's is kept; implloop's hook runs it after `implloop check`.
const chainedSuffix = ".implloop-chained"

func newHookCmd(io *ioStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Install or remove the pre-commit hook that runs 'implloop check'",
		Long: `Install or remove a git pre-commit hook that runs 'implloop check' on
every commit: it refuses commits that stage BLOCKED.md, anything under
.implloop/ (an older implloop's journal), or a plan with lint errors, and
warns when a plan edit changes tasks of an unfinished run. The hook gets
no flags: plans it should lint besides those of runs and the default
globs (**/plan*.md, **/tasks.md) are named in git config, e.g.
'git config --add implloop.planGlobs "docs/*.md"' (see 'implloop check').

The hook goes where git looks for hooks: core.hooksPath when set (relative
to the worktree root), else the hooks directory of the repository's common
git dir, which linked worktrees share.`,
		Args:              exactArgs(0, "a subcommand: install or uninstall"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newHookInstallCmd(io), newHookUninstallCmd(io))
	return cmd
}

// hookOptions are what `hook install` was asked.
type hookOptions struct {
	io    *ioStreams
	force bool
}

func newHookInstallCmd(io *ioStreams) *cobra.Command {
	return newHookInstallCmdWith(io, func(o *hookOptions) error { return hookInstall(o.io, o.force) })
}

// newHookInstallCmdWith takes the function that does the work, so a test
// can check flag parsing alone.
func newHookInstallCmdWith(io *ioStreams, runF func(*hookOptions) error) *cobra.Command {
	o := &hookOptions{io: io}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the pre-commit hook",
		Long: `Install the pre-commit hook. The hook calls implloop by the absolute path
of the binary running this command, falling back to 'implloop' on PATH if
that file is gone.

An existing pre-commit hook is never overwritten: it is kept beside the new
one as pre-commit` + chainedSuffix + ` and the new hook runs it after
'implloop check' passes, with the same arguments, so whatever it did still
happens. 'implloop hook uninstall' puts it back.

Installing again changes nothing (or only the binary path, if implloop was
moved). If a pre-commit` + chainedSuffix + ` file is already there and the
current hook is not implloop's (something replaced implloop's hook since),
install refuses; --force then keeps the current hook as the chained one,
replacing the older file.

` + exitStatusHelp(plainExits...),
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runF(o)
		},
	}
	cmd.Flags().BoolVar(&o.force, "force", false, "replace a leftover pre-commit"+chainedSuffix+" file")
	return cmd
}

func newHookUninstallCmd(io *ioStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall",
		Short: "Remove the pre-commit hook and restore the one it chained to",
		Long: `Remove implloop's pre-commit hook and put back the hook that was there
before it (kept as pre-commit` + chainedSuffix + `), if any. A pre-commit hook that
is not implloop's is left alone; uninstalling twice is fine.

` + exitStatusHelp(plainExits...),
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return hookUninstall(io)
		},
	}
}

// hookScript is the hook's text: check, then the chained hook if any.
func hookScript(bin string) []byte {
	q := "'" + strings.ReplaceAll(bin, "'", `'\''`) + "'"
	return []byte(`#!/bin/sh
` + hookMarker + `: installed by 'implloop hook install',
# removed by 'implloop hook uninstall'. It runs 'implloop check' on the
# staged changes, then the pre-commit hook that was here before, if any
# (kept beside this file as pre-commit` + chainedSuffix + `).
implloop=` + q + `
[ -x "$implloop" ] || implloop=implloop
"$implloop" check || exit $?
chained="$(dirname "$0")/pre-commit` + chainedSuffix + `"
if [ -x "$chained" ]; then
	exec "$chained" "$@"
fi
`)
}

// implloopBinary is the absolute path of the running implloop, or
// "implloop" (found on PATH when the hook runs).
func implloopBinary() string {
	p, err := os.Executable()
	if err != nil || !filepath.IsAbs(p) {
		return "implloop"
	}
	return p
}

func isOurHook(b []byte) bool { return bytes.Contains(b, []byte(hookMarker)) }

// hookPaths are the pre-commit hook of the repository around the working
// directory (honouring core.hooksPath) and where a chained hook is kept.
func hookPaths(io *ioStreams) (hook, chained string, err error) {
	root, err := repoRoot(io.workingDir)
	if err != nil {
		return "", "", err
	}
	dir, err := hooksDir(root)
	if err != nil {
		return "", "", errorf("", "%w", err)
	}
	hook = filepath.Join(dir, "pre-commit")
	return hook, hook + chainedSuffix, nil
}

func hookInstall(io *ioStreams, force bool) error {
	hook, chained, err := hookPaths(io)
	if err != nil {
		return err
	}
	want := hookScript(implloopBinary())

	// Lstat, not Stat: a dangling symlink is somebody's hook too.
	_, err = os.Lstat(hook)
	existing := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("", "%w", err)
	}
	var cur []byte
	if existing {
		cur, _ = os.ReadFile(hook) // unreadable: not ours, so it is chained
	}
	switch {
	case existing && isOurHook(cur):
		if bytes.Equal(cur, want) {
			fmt.Fprintf(io.ErrOut, "implloop: the pre-commit hook is already installed at %s; nothing changed\n", hook)
			return nil
		}
		if err := writeHook(hook, want); err != nil {
			return err
		}
		fmt.Fprintf(io.ErrOut, "implloop: updated the pre-commit hook at %s\n", hook)
		return nil
	case existing:
		if _, err := os.Lstat(chained); err == nil && !force {
			return errorf("look at both files; --force keeps the current hook as the chained one and drops "+chained,
				"%s is not implloop's, and %s already exists: refusing to chain over it", hook, chained)
		}
		if err := os.Rename(hook, chained); err != nil {
			return errorf("", "keep the existing hook: %w", err)
		}
		if err := writeHook(hook, want); err != nil {
			// Put the user's hook back rather than leave none.
			_ = os.Rename(chained, hook)
			return err
		}
		fmt.Fprintf(io.ErrOut, "implloop: installed the pre-commit hook at %s\n", hook)
		fmt.Fprintf(io.ErrOut, "implloop: the hook that was there is kept as %s and runs after 'implloop check'\n", chained)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		return errorf("", "create the hooks directory: %w", err)
	}
	if err := writeHook(hook, want); err != nil {
		return err
	}
	fmt.Fprintf(io.ErrOut, "implloop: installed the pre-commit hook at %s\n", hook)
	return nil
}

// writeHook writes an executable hook atomically (temp file, rename).
func writeHook(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".pre-commit.implloop-*")
	if err != nil {
		return errorf("", "write the hook: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, 0o755)); err != nil {
		os.Remove(tmp)
		return errorf("", "write the hook %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return errorf("", "write the hook %s: %w", path, err)
	}
	return nil
}

func hookUninstall(io *ioStreams) error {
	hook, chained, err := hookPaths(io)
	if err != nil {
		return err
	}
	_, chainErr := os.Lstat(chained)
	hasChained := chainErr == nil

	cur, err := os.ReadFile(hook)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Lstat(hook); lerr == nil {
			fmt.Fprintf(io.ErrOut, "implloop: the pre-commit hook at %s is not implloop's (a dangling symlink); leaving it alone\n", hook)
			return nil
		}
		if hasChained {
			if err := os.Rename(chained, hook); err != nil {
				return errorf("", "restore %s: %w", chained, err)
			}
			fmt.Fprintf(io.ErrOut, "implloop: no implloop hook at %s; restored the chained hook there\n", hook)
			return nil
		}
		fmt.Fprintf(io.ErrOut, "implloop: no pre-commit hook at %s; nothing to do\n", hook)
		return nil
	case err != nil:
		return errorf("", "read %s: %w", hook, err)
	case !isOurHook(cur):
		fmt.Fprintf(io.ErrOut, "implloop: the pre-commit hook at %s is not implloop's; leaving it alone\n", hook)
		if hasChained {
			fmt.Fprintf(io.ErrOut, "implloop: %s is left alone too\n", chained)
		}
		return nil
	}
	if hasChained {
		if err := os.Rename(chained, hook); err != nil {
			return errorf("", "restore %s: %w", chained, err)
		}
		fmt.Fprintf(io.ErrOut, "implloop: removed implloop's pre-commit hook; restored the previous hook at %s\n", hook)
		return nil
	}
	if err := os.Remove(hook); err != nil {
		return errorf("", "remove %s: %w", hook, err)
	}
	fmt.Fprintf(io.ErrOut, "implloop: removed the pre-commit hook at %s\n", hook)
	return nil
}
