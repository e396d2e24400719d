// Command gen writes docs/identity.md from the identity package's tables.
// Run it through `go generate ./identity`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/implloop/implloop/identity"
)

func main() {
	out := flag.String("o", "../docs/identity.md", "file to write")
	flag.Parse()
	if err := os.WriteFile(*out, identity.Markdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
