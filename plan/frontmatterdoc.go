package plan

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

//go:generate go run ./gen -o ../docs/plan-format.md

// The markers around the list of front-matter keys in
// docs/plan-format.md, which [FrontMatterDoc] writes.
const (
	frontMatterDocBegin = "<!-- front matter keys: generated from plan.FrontMatterKeys (package settings' table) by `make docs` -->\n"
	frontMatterDocEnd   = "<!-- end of front matter keys -->\n"
)

// FrontMatterDoc returns doc (docs/plan-format.md) with the list of
// front-matter keys between its markers written from [FrontMatterKeys]:
// each key, its value's type, what it is, and the flag that gives the
// same setting.
func FrontMatterDoc(doc []byte) ([]byte, error) {
	begin := bytes.Index(doc, []byte(frontMatterDocBegin))
	end := bytes.Index(doc, []byte(frontMatterDocEnd))
	if begin < 0 || end < begin {
		return nil, errors.New("no front matter keys markers")
	}
	var b strings.Builder
	b.WriteString("| key | value | what it is | flag |\n|---|---|---|---|\n")
	for _, k := range FrontMatterKeys {
		flag := ""
		if k.Flag != "" {
			flag = "`--" + k.Flag + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Name, k.Type, k.Doc, flag)
	}
	var out bytes.Buffer
	out.Write(doc[:begin+len(frontMatterDocBegin)])
	out.WriteString(b.String())
	out.Write(doc[end:])
	return out.Bytes(), nil
}
