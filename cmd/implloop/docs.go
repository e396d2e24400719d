package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// The reference pages in docs/cli/ are generated from the command tree;
// TestCLIDocsCurrent fails while they are stale. `make man` writes the man
// pages the same way (gendocs.go).

//go:generate go run -tags gendocs . -md ../../docs/cli

// newDocsRoot is the command tree as the reference pages show it: the
// tree the program runs, with cobra's completion command that Execute
// adds, and no trace of the machine or the build.
func newDocsRoot() *cobra.Command {
	root := newRootCmd(&ioStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	root.InitDefaultCompletionCmd()
	return root
}
