//go:build gendocs

// Built with -tags gendocs, the program writes implloop's reference pages
// instead of running implloop: `go generate ./cmd/implloop` writes the
// markdown pages into docs/cli/, `make man` the man pages.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/implloop/implloop/cmd/implloop/internal/clidocs"
)

func main() {
	md := flag.String("md", "", "write a markdown page per command into `dir`")
	man := flag.String("man", "", "write a man page per command into `dir`")
	flag.Parse()
	if *md == "" && *man == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run -tags gendocs ./cmd/implloop [-md dir] [-man dir]")
		os.Exit(2)
	}
	if *md != "" {
		if err := clidocs.WriteMarkdown(newDocsRoot(), *md); err != nil {
			fmt.Fprintln(os.Stderr, "gendocs:", err)
			os.Exit(1)
		}
	}
	if *man != "" {
		if err := clidocs.WriteMan(newDocsRoot(), *man, "implloop "+version); err != nil {
			fmt.Fprintln(os.Stderr, "gendocs:", err)
			os.Exit(1)
		}
	}
}
