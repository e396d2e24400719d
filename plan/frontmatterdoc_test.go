package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The list of front-matter keys in docs/plan-format.md is generated from
// FrontMatterKeys; a stale copy fails.
func TestFrontMatterDocIsCurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "docs", "plan-format.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := FrontMatterDoc(doc)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if string(doc) != string(want) {
		t.Fatalf("%s is stale: run make docs and commit the result", path)
	}
	for _, k := range FrontMatterKeys {
		if !strings.Contains(string(doc), "| `"+k.Name+"` |") {
			t.Errorf("%s does not list %s", path, k.Name)
		}
	}
}
