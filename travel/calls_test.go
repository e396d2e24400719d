package travel_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/travel"
)

// A pull lists its refs once and sets them once: one for-each-ref (what
// the fetch staged, the seals, the records and boundary refs there are)
// and one update-ref (the runs' refs set, the staging refs and seals
// deleted), where it ran four and two, each a git process, and a worker
// pulls once a task. Counted by a git on PATH that notes each command
// implloop runs (git's own children run git from its exec path).
//
// Not parallel: it sets PATH.
func TestPullGitCalls(t *testing.T) {
	ctx := context.Background()
	a, _ := ranRepo(t)
	runPlan(t, a, nil)
	bare := t.TempDir()
	gittest.At(t, bare).Git("init", "-q", "--bare")
	ja, err := cache.Open(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = travel.Push(ctx, ja, travel.PushOptions{Remote: bare})
	ja.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := gittest.New(t)

	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	wrapper := "#!/bin/sh\nfor a; do case $skip in 1) skip=;; *) case $a in -c|-C) skip=1;; -*) ;; *) echo \"$a\" >> '" + log + "'; break;; esac;; esac; done\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	res, err := travel.Pull(ctx, b.Dir, bare, func() (*cache.Journal, error) { return cache.Open(b.Dir) })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Imported) != 2 {
		t.Fatalf("imported %v, want two runs", res.Imported)
	}
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, c := range strings.Fields(string(raw)) {
		n[c]++
	}
	if n["for-each-ref"] != 1 || n["update-ref"] != 1 {
		t.Fatalf("git commands run by the pull: %v; want one for-each-ref and one update-ref", n)
	}
	if refs := b.Git("for-each-ref", "--format=%(refname)", "refs/implloop-pull/", "refs/implloop-seals/"); refs != "" {
		t.Fatalf("staging refs left:\n%s", refs)
	}
}
