package report

import (
	"bytes"
	"os"
	"testing"

	"github.com/implloop/implloop/report/internal/chromagen"
)

// chroma_css.go is written by `go generate ./report` from chroma's
// styles; regenerating it must give the same bytes, so it cannot drift
// from the chroma version go.mod names.
func TestChromaCSSIsGenerated(t *testing.T) {
	want, err := chromagen.CSSFile()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("chroma_css.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("report/chroma_css.go is not what chroma's styles give now: run go generate ./report")
	}
}
