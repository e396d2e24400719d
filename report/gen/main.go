// Command gen writes report/chroma_css.go from chroma's styles (see
// report/internal/chromagen). Run it through `go generate ./report`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/implloop/implloop/report/internal/chromagen"
)

func main() {
	path := flag.String("o", "chroma_css.go", "file to write")
	flag.Parse()
	src, err := chromagen.CSSFile()
	if err == nil {
		err = os.WriteFile(*path, src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
