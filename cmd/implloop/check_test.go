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
