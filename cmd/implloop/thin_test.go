package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Commands are thin (issue 17): a command file parses
// its flags into options, calls a library function through its runF seam
// and prints. The rule, as this test checks it on every non-test file of
// the package:
//
//   - No command file imports cache, cmdutil.go included: commands read
//     the journal through a loop.Inspector (loop/inspect.go), opened by
//     cmdutil.go's helpers, and name its rows by loop's names.
//   - Only cmdutil.go starts git (internal/gitcmd); commands use its
//     helpers.
//   - No command starts a process of its own (os/exec) or decodes the
//     journal's JSON (json.Unmarshal): what the rows mean is the library's.
//   - A command may read the journal's plain listings (a run's tasks, the
//     list of runs) and hand the journal to a library function; every
//     other *cache.Journal method (units, events, boundaries, lineage,
//     writes) is called in loop, report or cache, not here. Methods are
//     matched by name on anything but an imported package.
func TestCommandsAreThin(t *testing.T) {
	t.Parallel()
	journalMethods := methodsOf(t, filepath.Join("..", "..", "cache"), "Journal")
	if len(journalMethods) < 10 {
		t.Fatalf("found only %d methods of cache.Journal: %v", len(journalMethods), journalMethods)
	}
	listings := []string{"Close", "ListRuns", "Tasks", "LatestRun", "ResolveRun"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkgs := map[string]bool{} // names the file imports: filepath.Dir is no journal
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			pkgs[filepath.Base(p)] = true
			if imp.Name != nil {
				pkgs[imp.Name.Name] = true
			}
			switch {
			case p == "github.com/implloop/implloop/cache":
				t.Errorf("%s imports %s: read the journal through a loop.Inspector (cmdutil.go opens one)", name, p)
			case name == "cmdutil.go":
			case p == "os/exec" || strings.HasSuffix(p, "/internal/gitcmd"):
				t.Errorf("%s imports %s: start git and other processes through cmdutil.go or a library", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pos := fset.Position(call.Pos())
			recv := ""
			if id, ok := sel.X.(*ast.Ident); ok {
				recv = id.Name
			}
			m := sel.Sel.Name
			switch {
			case recv == "cache" && strings.HasPrefix(m, "Open"):
				t.Errorf("%s: cache.%s: open the journal with cmdutil.go's helpers", pos, m)
			case recv == "json" && m == "Unmarshal":
				t.Errorf("%s: json.Unmarshal: decoding the journal's JSON is the library's job", pos)
			case !pkgs[recv] && slices.Contains(journalMethods, m) && !slices.Contains(listings, m):
				t.Errorf("%s: %s.%s: a journal query in a command; give the library a function for it", pos, recv, m)
			}
			return true
		})
	}
}

// methodsOf lists the exported methods declared on type typ (or *typ) in
// the package in dir.
func methodsOf(t *testing.T, dir, typ string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			rt := fd.Recv.List[0].Type
			if st, ok := rt.(*ast.StarExpr); ok {
				rt = st.X
			}
			if id, ok := rt.(*ast.Ident); ok && id.Name == typ {
				out = append(out, fd.Name.Name)
			}
		}
	}
	return out
}
