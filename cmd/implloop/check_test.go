package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// FuzzParseNameStatus: whatever git prints, the parser does not panic, and
// entries written the way git writes them come back unchanged.
func FuzzParseNameStatus(f *testing.F) {
	f.Add([]byte("A\x00BLOCKED.md\x00M\x00plan.md\x00"), "M", "dir/a b.md")
	f.Add([]byte(""), "D", ".implloop/state.db")
	f.Add([]byte("A\x00"), "T", "x")
	f.Fuzz(func(t *testing.T, raw []byte, status, path string) {
		_ = parseNameStatus(raw)
		if status == "" || path == "" || strings.ContainsRune(status+path, 0) {
			return
		}
		var b bytes.Buffer
		for range 3 {
			b.WriteString(status + "\x00" + path + "\x00")
		}
		got := parseNameStatus(b.Bytes())
		if len(got) != 3 {
			t.Fatalf("%d entries, want 3", len(got))
		}
		for _, e := range got {
			if e.status != status || e.path != path {
				t.Fatalf("got %+v, want %q %q", e, status, path)
			}
		}
	})
}

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
