package plan

import (
	"fmt"
	"strings"
	"testing"

	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"pgregory.net/rapid"
)

// checkBoxParser parses what goldmark's own task checkbox parser does:
// over list-like lines drawn from checkbox bytes, both parsers give the
// same tree (kinds, checked state, text segments).
func TestCheckBoxParserIsGoldmarks(t *testing.T) {
	with := func(p parser.InlineParser) parser.Parser {
		return parser.NewParser(
			parser.WithBlockParsers(parser.DefaultBlockParsers()...),
			parser.WithInlineParsers(util.Prioritized(p, 0)))
	}
	ours, theirs := with(checkBoxParser{}), with(extension.NewTaskCheckBoxParser())
	piece := rapid.SampledFrom([]string{"- ", "* ", "1. ", "  ", "[", "]", " ", "x", "X", "\t", "\n", "\r", "\f", "\v", "a", "[ ]", "[x]", "[X]", "> "})
	rapid.Check(t, func(t *rapid.T) {
		src := []byte(strings.Join(rapid.SliceOfN(piece, 1, 20).Draw(t, "pieces"), ""))
		o := shape(ours.Parse(text.NewReader(src)), src)
		g := shape(theirs.Parse(text.NewReader(src)), src)
		if o != g {
			t.Fatalf("%q:\nours:     %s\ngoldmark: %s", src, o, g)
		}
	})
}

// shape writes a tree's kinds, checkboxes and text segments.
func shape(n gast.Node, src []byte) string {
	var b strings.Builder
	_ = gast.Walk(n, func(n gast.Node, entering bool) (gast.WalkStatus, error) {
		if !entering {
			b.WriteString(")")
			return gast.WalkContinue, nil
		}
		b.WriteString("(" + n.Kind().String())
		switch n := n.(type) {
		case *extast.TaskCheckBox:
			fmt.Fprintf(&b, " %v", n.IsChecked)
		case *gast.Text:
			fmt.Fprintf(&b, " %q", n.Segment.Value(src))
		}
		return gast.WalkContinue, nil
	})
	return b.String()
}
