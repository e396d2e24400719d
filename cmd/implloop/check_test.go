package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The hook names implloop by a path that may hold anything a path can:
// the shell must read back exactly that path.
func TestHookScriptQuotesTheBinary(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{
		"/usr/local/bin/implloop",
		"/home/o'brien/go/bin/implloop",
		"/tmp/a b/$HOME/`id`/\"x\"/implloop",
		"/tmp/back\\slash/*/implloop",
	} {
		script := string(hookScript(bin))
		line := ""
		for _, l := range strings.Split(script, "\n") {
			if strings.HasPrefix(l, "implloop=") {
				line = l
			}
		}
		out, err := exec.Command("sh", "-c", line+"\nprintf %s \"$implloop\"").Output()
		if err != nil {
			t.Fatalf("%q: %v", bin, err)
		}
		if string(out) != bin {
			t.Errorf("the hook reads %q back as %q", bin, out)
		}
		if !strings.HasPrefix(script, "#!/bin/sh\n") || !isOurHook([]byte(script)) {
			t.Errorf("not a recognisable implloop hook:\n%s", script)
		}
	}
}

// check's globs: path.Match per segment, ** for any number of directories.
func TestGlobMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		glob, path string
		want       bool
	}{
		{"**/plan*.md", "plan.md", true},
		{"**/plan*.md", "docs/plans/plan-auth.md", true},
		{"**/plan*.md", "docs/planning/notes.md", false},
		{"**/tasks.md", "specs/001-auth/tasks.md", true},
		{"**/tasks.md", "tasks.md.bak", false},
		{"docs/*.md", "docs/a.md", true},
		{"docs/*.md", "docs/sub/a.md", false},
		{"docs/**", "docs/sub/a.md", true},
		{"a/**/b.md", "a/b.md", true},
		{"a/**/b.md", "a/x/y/b.md", true},
	} {
		if got := globMatch(c.glob, c.path); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.glob, c.path, got, c.want)
		}
	}
}

// FuzzGlobMatch: any --plans glob and path: no panic, a glob checkGlob
// accepts matches itself when it has no pattern characters, and "**"
// matches every path.
func FuzzGlobMatch(f *testing.F) {
	for _, s := range [][2]string{{"**/plan*.md", "docs/plan.md"}, {"a/**/b", "a/b"}, {"[x", "x"}, {"**", ""}, {"*/*", "a//b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, glob, p string) {
		_ = globMatch(glob, p)
		if checkGlob(glob) == nil && !strings.ContainsAny(glob, `*?[\`) && !globMatch(glob, glob) {
			t.Errorf("%q does not match itself", glob)
		}
		if !globMatch("**", p) {
			t.Errorf("** does not match %q", p)
		}
	})
}
