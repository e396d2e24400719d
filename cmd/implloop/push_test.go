package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/loop"
)

// Push without a remote says what it would send and asks, on a terminal:
// anything but y or yes sends nothing; yes sends. With no terminal to ask
// at it is a usage error, unless --yes.
func TestPushAsksWithoutARemote(t *testing.T) {
	r := gittest.New(t)
	r.Write("plan.md", "# Plan\n\n- [ ] 1. One\n")
	r.Git("add", "plan.md")
	r.Git("commit", "-q", "-m", "start")
	bare := t.TempDir()
	gittest.At(t, bare).Git("init", "-q", "--bare")
	r.Git("remote", "add", "origin", bare)
	s := loop.DefaultSettings()
	agentPath := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agentPath, []byte("#!/bin/sh\ncat >/dev/null\necho one > out.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.Plan, s.AgentCmd = "plan.md", agentPath
	if out, err := loop.Run(context.Background(), loop.Options{Settings: s, RepoRoot: r.Dir}); err != nil || out.Verdict != "DONE" {
		t.Fatalf("run: %v %v", out, err)
	}
	remoteRefs := func() string { return gittest.At(t, bare).Git("for-each-ref", "refs/implloop/") }
	push := func(answer string, term bool, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		io := &ioStreams{In: strings.NewReader(answer), Out: &out, ErrOut: &errb, inIsTerm: term, workingDir: r.Dir}
		code := run(append([]string{"push"}, args...), io)
		return code, out.String(), errb.String()
	}
	if code, _, errs := push("", false); code != 2 || !strings.Contains(errs, "no terminal to ask at") {
		t.Fatalf("push with no terminal: exit %d, %q", code, errs)
	}
	code, out, errs := push("n\n", true)
	if code != 0 || !strings.Contains(out, "push to origin ("+bare+"): 1 run(s)") || !strings.Contains(errs, "Push to origin? [y/N]") || !strings.Contains(errs, "nothing pushed") {
		t.Fatalf("push answered no: exit %d\n%s\n%s", code, out, errs)
	}
	if refs := remoteRefs(); refs != "" {
		t.Fatalf("refs pushed after a no:\n%s", refs)
	}
	if code, out, errs := push("yes\n", true); code != 0 || !strings.Contains(out, "pushed 1 run(s) to origin") {
		t.Fatalf("push answered yes: exit %d\n%s\n%s", code, out, errs)
	}
	if refs := remoteRefs(); !strings.Contains(refs, "refs/implloop/records/") {
		t.Fatalf("nothing pushed after a yes")
	}
}
