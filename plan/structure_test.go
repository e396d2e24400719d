package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"pgregory.net/rapid"
)

// stockParser is goldmark as shipped, with the GFM task list extension:
// the reference mdParser's shortcuts (no inline parsers but the checkbox,
// raw paragraphs, the link reference quick check) must agree with.
var stockParser = goldmark.New(goldmark.WithExtensions(extension.TaskList)).Parser()

// skeleton renders the block structure of a document: kinds (a paragraph
// is a paragraph whether goldmark or rawParagraph), positions, lines and
// task checkboxes.
func skeleton(doc ast.Node, src []byte) string {
	var b strings.Builder
	var walk func(n ast.Node, depth int)
	walk = func(n ast.Node, depth int) {
		kind := n.Kind().String()
		switch kind {
		case "RawParagraph", "TextBlock":
			// Tight lists turn their items' paragraphs into TextBlocks, a
			// rendering difference; a raw paragraph is not turned.
			kind = "Paragraph"
		}
		fmt.Fprintf(&b, "%s%s pos=%d", strings.Repeat(" ", depth), kind, n.Pos())
		if n.Type() == ast.TypeBlock {
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				fmt.Fprintf(&b, " [%d,%d)", seg.Start, seg.Stop)
			}
		}
		if h, ok := n.(*ast.Heading); ok {
			fmt.Fprintf(&b, " level=%d", h.Level)
		}
		if l, ok := n.(*ast.List); ok {
			fmt.Fprintf(&b, " tight=%v", l.IsTight)
		}
		b.WriteString("\n")
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if c.Type() == ast.TypeInline {
				if cb, ok := c.(*extast.TaskCheckBox); ok {
					fmt.Fprintf(&b, "%s checkbox %v\n", strings.Repeat(" ", depth), cb.IsChecked)
				}
				continue
			}
			walk(c, depth+1)
		}
	}
	walk(doc, 0)
	return b.String()
}

func assertSameStructure(t fataler, src []byte) {
	t.Helper()
	ours := skeleton(mdParser().Parse(text.NewReader(src)), src)
	stock := skeleton(stockParser.Parse(text.NewReader(src)), src)
	if ours != stock {
		t.Fatalf("block structure differs from stock goldmark for %q:\n--- ours\n%s--- stock\n%s", src, ours, stock)
	}
}

func TestStructureMatchesGoldmark(t *testing.T) {
	t.Parallel()
	for _, pattern := range []string{"*.md", "broken/*.md", "../demo/plan.md"} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", "plans", pattern))
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			assertSameStructure(t, src)
		}
	}
	for _, s := range []string{
		"Title\n=====\n", "a\nb\n---\n", "- item\n  para\n  ---\n", "[foo]: /url\n---\n",
		"[x]: /url\n\n- [x]: /url\n", "- [ ] a\n\n  b\n  ===\n", "> q\n> ---\n", "  para  \n",
		"[a\\]]: /u\ntext\n", "1. [x] one\n2. two\n\n   three\n",
	} {
		assertSameStructure(t, []byte(s))
	}
	rapid.Check(t, func(t *rapid.T) {
		assertSameStructure(t, []byte(strings.Join(mdDoc(t), "\n")))
	})
}
