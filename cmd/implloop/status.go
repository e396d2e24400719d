package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/loop"

	"github.com/implloop/implloop/internal/bytepath"
	"github.com/implloop/implloop/internal/words"
)

type statusOptions struct {
	io   *ioStreams
	dir  string
	json bool
}

func newStatusCmd(io *ioStreams) *cobra.Command {
	return newStatusCmdWith(io, statusRun)
}

// newStatusCmdWith takes the function that does the work, so a test can check
// flag parsing alone.
func newStatusCmdWith(io *ioStreams, runF func(context.Context, *statusOptions) error) *cobra.Command {
	opts := &statusOptions{io: io}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the boundary snapshot of the repository now (read-only)",
		Long: `Show what implloop records at a task boundary, taken now: HEAD, the branch,
the tree the boundary would commit (the whole work tree, as 'git add -A'
records it), and every path that differs from HEAD (staged, unstaged,
untracked and not ignored) with its status, its worktree content hash
(git's blob id, as 'git hash-object' prints it) and its HEAD content hash.
BLOCKED.md is left out (and .implloop/, where older implloops kept their
journal). --json gives the tree id too.

It only reads: nothing is written to the worktree, .git or the journal (the
files that differ from the index are hashed into a temporary index and
object directory, removed after). It costs about one 'git status'.

With --json, "watch" says whether a run holding the work tree's lock keeps
a watch on it now (its boundaries then look only at the paths that
changed): "in_use", or the "reason" why not.

` + exitStatusHelp(longExits...),
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.dir = io.workingDir
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the snapshot as JSON")
	return cmd
}

func statusRun(ctx context.Context, opts *statusOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	snap, err := boundary.Take(ctx, opts.dir)
	switch {
	case errors.Is(err, boundary.ErrNotRepository):
		return errorf("run implloop inside a git working tree ('git init' makes one)", "%w", err)
	case errors.Is(err, boundary.ErrGitNotFound):
		return errorf("install git and make sure it is on PATH", "%w", err)
	case err != nil:
		return errorf("", "status: %w", err)
	}
	if opts.json {
		// Whether a run keeps a watch on the work tree now (its
		// boundaries then look only at what changed).
		watch, err := loop.ReadWatch(opts.dir)
		if err != nil {
			watch = loop.WatchStatus{Reason: err.Error()}
		}
		enc := json.NewEncoder(opts.io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			boundary.Snapshot
			Watch loop.WatchStatus `json:"watch"`
		}{snap, watch})
	}
	return printSnapshot(opts.io.Out, snap)
}

func printSnapshot(w io.Writer, s boundary.Snapshot) error {
	head := "(unborn: no commits yet)"
	if s.Head != "" {
		head = s.Head
	}
	branch := s.Branch
	if s.Detached {
		branch = "(detached HEAD)"
	}
	fmt.Fprintf(w, "HEAD    %s\nbranch  %s\ntree    %s\n", head, branch, s.Tree)
	if len(s.Paths) == 0 {
		fmt.Fprintln(w, "clean: no path differs from HEAD")
		return nil
	}
	noun := "paths"
	if len(s.Paths) == 1 {
		noun = "path"
	}
	fmt.Fprintf(w, "%d dirty %s:\n", len(s.Paths), noun)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STATUS\tXY\tWORKTREE\tHEAD\tPATH")
	for _, e := range s.Paths {
		p := displayPath(e.Path)
		switch {
		case e.OrigPath != "":
			p += " <- " + displayPath(e.OrigPath)
		case e.RenamedTo != "":
			p += " -> " + displayPath(e.RenamedTo)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Status, e.XY, blobCell(e.Worktree), blobCell(e.Head), p)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "note: %s\n", p)
	}
	return nil
}

// blobCell shows a content as "mode:short-id", "-" when absent.
func blobCell(b boundary.Blob) string {
	switch {
	case !b.Present():
		return "-"
	case b.Hash == "":
		return b.Mode.String() + ":?"
	}
	return b.Mode.String() + ":" + words.Short(b.Hash)
}

// displayPath quotes a path that would not read as one line of text.
func displayPath(p string) string { return bytepath.Display(p) }
