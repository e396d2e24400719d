package travel

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/gittest"
)

// pinned is what learnConfig pins, by key (the last value of each).
func pinned(t *testing.T, dir string) map[string]string {
	t.Helper()
	c, err := learnConfig(context.Background(), dir, "Ursula <u@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(c.args); i += 2 {
		if c.args[i] != "-c" {
			t.Fatalf("args %q", c.args)
		}
		k, v, _ := strings.Cut(c.args[i+1], "=")
		m[k] = v
	}
	return m
}

// What git signs and verifies by is pinned as git reads it: unset keys
// as git's defaults (the committer, as the records name it, as the
// OpenPGP key), values from an
// included file, the later of gpg.program and gpg.openpgp.program for
// both; with SSH and no user.signingKey, the default key command, and no
// key.
func TestLearnConfig(t *testing.T) {
	t.Parallel()
	r := gittest.New(t)
	got := pinned(t, r.Dir)
	for k, v := range map[string]string{
		"gpg.format": "openpgp", "user.signingkey": "Ursula <u@example.com>", "gpg.program": "gpg", "gpg.openpgp.program": "gpg",
		"gpg.x509.program": "gpgsm", "gpg.ssh.program": "ssh-keygen", "gpg.ssh.allowedsignersfile": os.DevNull,
		"gpg.ssh.revocationfile": os.DevNull, "gpg.mintrustlevel": "undefined", "push.gpgsign": "false",
	} {
		if got[k] != v {
			t.Errorf("unset: %s pinned %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["gpg.ssh.defaultkeycommand"]; ok {
		t.Errorf("unset: gpg.ssh.defaultKeyCommand pinned")
	}

	inc := filepath.Join(t.TempDir(), "signing")
	if err := os.WriteFile(inc, []byte("[gpg]\n\tformat = ssh\n\tprogram = first\n[gpg \"openpgp\"]\n\tprogram = second\n[gpg \"ssh\"]\n\tprogram = ~/bin/sign\n\tdefaultKeyCommand = ssh-add -L\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Git("config", "include.path", inc)
	r.Git("config", "gpg.minTrustLevel", "fully")
	got = pinned(t, r.Dir)
	for k, v := range map[string]string{
		"gpg.format": "ssh", "gpg.program": "second", "gpg.openpgp.program": "second", "gpg.ssh.program": "~/bin/sign",
		"gpg.ssh.defaultkeycommand": "ssh-add -L", "gpg.mintrustlevel": "fully",
	} {
		if got[k] != v {
			t.Errorf("included: %s pinned %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["user.signingkey"]; ok {
		t.Errorf("ssh without a key: user.signingKey pinned %q", got["user.signingkey"])
	}
	r.Git("config", "gpg.program", "third") // after the include
	r.Git("config", "user.signingKey", "~/.ssh/k.pub")
	got = pinned(t, r.Dir)
	if got["gpg.program"] != "third" || got["gpg.openpgp.program"] != "third" || got["user.signingkey"] != "~/.ssh/k.pub" {
		t.Errorf("later values: %v", got)
	}
	s := Signing{cfg: mustLearn(t, r.Dir)}
	if c, err := s.ConfigChanged(context.Background(), r.Dir); err != nil || len(c) != 0 {
		t.Errorf("ConfigChanged, unchanged: %q, %v", c, err)
	}
	r.Git("config", "--unset", "gpg.minTrustLevel")
	r.Git("config", "user.name", "Mallory")
	if c, err := s.ConfigChanged(context.Background(), r.Dir); err != nil || !slices.Equal(c, []string{"gpg.mintrustlevel", "user.name"}) {
		t.Errorf("ConfigChanged: %q, %v", c, err)
	}
}

func mustLearn(t *testing.T, dir string) *gitConfig {
	t.Helper()
	c, err := learnConfig(context.Background(), dir, "Ursula <u@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
