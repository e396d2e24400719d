package travel_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A pull lists its refs once: one for-each-ref (what the fetch staged,
// the seals, the records and boundary refs there are), where it ran
// four, each a git process, and a worker pulls once a task; its two
// update-ref (the run's refs set with the staging refs deleted; the
// seals deleted) stay apart, as another pull of the clone may hold a
// seal. The run pulled is signed and sealed, and trusted
// through its seal. Counted by a git on PATH that notes each command
// implloop runs (git's own children run git from its exec path).
//
// Not parallel: it sets PATH.
func TestPullGitCalls(t *testing.T) {
	alice := sshKey(t, "alice")
	_, run, bare := signingRepo(t, alice)
	allowed := allowedSigners(t, map[string]string{"alice@example.com": alice})

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

	c, res, err := pullInto(t, bare, nil, "gpg.ssh.allowedSignersFile", allowed)
	if err != nil {
		t.Fatal(err)
	}
	if tr := res.Trust[run]; len(res.Imported) != 1 || !tr.Trusted {
		t.Fatalf("imported %v, trust %+v: want %s, trusted", res.Imported, tr, run)
	}
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, cmd := range strings.Fields(string(raw)) {
		n[cmd]++
	}
	// (init and config: the clone pullInto makes.)
	if n["for-each-ref"] != 1 || n["update-ref"] != 2 {
		t.Fatalf("git commands run by the pull: %v; want one for-each-ref and two update-ref", n)
	}
	if refs := c.Git("for-each-ref", "--format=%(refname)", "refs/implloop-pull/", "refs/implloop-seals/"); refs != "" {
		t.Fatalf("staging refs left:\n%s", refs)
	}
}
