package plan

import (
	gast "github.com/yuin/goldmark/ast"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// checkBoxParser is goldmark's GFM task checkbox parser
// (extension.NewTaskCheckBoxParser), the one thing the plan parser takes
// from goldmark's extension package: that package's init (its linkify
// and typographer tables, about 0.6 ms) ran in every implloop process.
// Same rule: "[ ]", "[x]" or "[X]" (the blank any of Go regexp's \s) and
// the white space after it, first in a list item's first line.
type checkBoxParser struct{}

func (checkBoxParser) Trigger() []byte { return []byte{'['} }

func (checkBoxParser) Parse(parent gast.Node, block text.Reader, pc parser.Context) gast.Node {
	// - List
	//   - ListItem    : parent.Parent
	//     - TextBlock : parent (current line)
	if parent.Parent() == nil || parent.Parent().FirstChild() != parent || parent.HasChildren() {
		return nil
	}
	if _, ok := parent.Parent().(*gast.ListItem); !ok {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[0] != '[' || line[2] != ']' || !(isRegexpSpace(line[1]) || line[1] == 'x' || line[1] == 'X') {
		return nil
	}
	n := 3
	for n < len(line) && isRegexpSpace(line[n]) {
		n++
	}
	block.Advance(n)
	return extast.NewTaskCheckBox(line[1] == 'x' || line[1] == 'X')
}

func (checkBoxParser) CloseBlock(parent gast.Node, pc parser.Context) {}

// isRegexpSpace is Go regexp's \s: [\t\n\f\r ].
func isRegexpSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}
