// Command gen writes the list of front-matter keys in
// docs/plan-format.md from plan.FrontMatterKeys (the plan's own keys and
// package settings' table). Run it through `go generate ./plan`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/implloop/implloop/plan"
)

func main() {
	path := flag.String("o", "../docs/plan-format.md", "file to update")
	flag.Parse()
	doc, err := os.ReadFile(*path)
	if err == nil {
		doc, err = plan.FrontMatterDoc(doc)
	}
	if err == nil {
		err = os.WriteFile(*path, doc, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
