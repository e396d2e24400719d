package travel_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/travel"
)

// recorder is a program that touches a file (returned) and runs
// ssh-keygen: a gpg.ssh.program that says whether it ran.
func recorder(t *testing.T) (prog, ran string) {
	t.Helper()
	d := t.TempDir()
	prog, ran = filepath.Join(d, "prog"), filepath.Join(d, "ran")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+ran+"\nexec ssh-keygen \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, ran
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// A pull with VerifyAs verifies as the Signing was learned, whatever
// git's configuration says since: an allowed signers file that allows
// Mallory's key and a verifying program named since change neither
// whom it trusts nor what it runs; an allowed signers file that was not
// set allows no key, even once one is set. An ordinary pull verifies
// with git's configuration as it is: it trusts Mallory's run now, with
// the program named since.
func TestPullVerifiesAsLearned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice, mallory := sshKey(t, "alice"), sshKey(t, "mallory")
	_, run, bare := signingRepo(t, mallory)
	forged := allowedSigners(t, map[string]string{"mallory@example.com": mallory})
	for _, c := range []struct {
		name    string
		allowed string // at learning ("": not set)
	}{
		{"allowed signers set", allowedSigners(t, map[string]string{"alice@example.com": alice})},
		{"allowed signers not set", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := gittest.New(t)
			if c.allowed != "" {
				r.Git("config", "gpg.ssh.allowedSignersFile", c.allowed)
			}
			s, err := travel.LearnSigning(ctx, r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			prog, ran := recorder(t)
			r.Git("config", "gpg.ssh.allowedSignersFile", forged)
			r.Git("config", "gpg.ssh.program", prog)
			open := func() (*cache.Journal, error) { return cache.Open(r.Dir) }
			res, err := travel.Pull(ctx, r.Dir, bare, open, travel.VerifyAs(s))
			if err != nil {
				t.Fatal(err)
			}
			if tr := res.Trust[run]; tr.Trusted || !strings.Contains(tr.Why, "not an allowed signer") {
				t.Errorf("Mallory's run: %+v", tr)
			}
			if exists(ran) {
				t.Error("the pull ran the program named since the Signing was learned")
			}
			changed, err := s.ConfigChanged(ctx, r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"gpg.ssh.allowedsignersfile", "gpg.ssh.program"}
			if !slices.Equal(changed, want) {
				t.Errorf("ConfigChanged %q, want %q", changed, want)
			}
			// An ordinary pull: git's configuration as it is now.
			res, err = travel.Pull(ctx, r.Dir, bare, open)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Retrusted, []string{run}) || !exists(ran) {
				t.Errorf("an ordinary pull: retrusted %v (want %s), the program named ran: %v", res.Retrusted, run, exists(ran))
			}
		})
	}
}

// A push, a compare-and-swap push and the self-trust probe with a
// learned Signing sign as it was learned: another key, another signing
// program and push.gpgSign set since change neither the key nor what
// runs, and the push goes unsigned as before (the remote takes no signed
// pushes). Without it, a compare-and-swap push signs as git says now,
// and the remote refuses it.
func TestPushSignsAsLearned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice, mallory := sshKey(t, "alice"), sshKey(t, "mallory")
	r, run := ranRepo(t)
	signWith(r, alice)
	r.Git("config", "gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": alice}))
	s, err := travel.LearnSigning(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	prog, ran := recorder(t)
	r.Git("config", "user.signingKey", mallory+".pub")
	r.Git("config", "gpg.ssh.program", prog)
	r.Git("config", "push.gpgSign", "true")
	if err := travel.CheckSelfTrust(ctx, cache.Dirs{Root: r.Dir}, &s); err != nil {
		t.Fatalf("self-trust as learned: %v", err)
	}
	bare, j := bareAndJournal(t, r)
	res, err := travel.Push(ctx, j, travel.PushOptions{Remote: bare, Signing: &s})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Signed, []string{run}) {
		t.Fatalf("signed %v", res.Signed)
	}
	head := strings.TrimSpace(r.Git("rev-parse", "HEAD"))
	if err := travel.CASPushAs(ctx, &s, r.Dir, bare, travel.RefUpdate{Ref: "refs/implloop/claims/p/T1", New: head}); err != nil {
		t.Fatalf("a compare-and-swap push as learned: %v", err)
	}
	// The run's signature is Alice's: a pull that allows her key trusts it.
	_, pres, err := pullInto(t, bare, nil, "gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": alice}))
	if err != nil {
		t.Fatal(err)
	}
	if !pres.Trust[run].Trusted {
		t.Errorf("the run pushed: %+v", pres.Trust[run])
	}
	if exists(ran) {
		t.Error("a push as learned ran the signing program named since")
	}
	// As git says now.
	if err := travel.CheckSelfTrust(ctx, cache.Dirs{Root: r.Dir}, nil); err == nil || !exists(ran) {
		t.Errorf("self-trust as git says now (Mallory's key, not allowed): %v, the program named ran: %v", err, exists(ran))
	}
	if err := travel.CASPush(ctx, r.Dir, bare, travel.RefUpdate{Ref: "refs/implloop/claims/p/T2", New: head}); err == nil || !strings.Contains(err.Error(), "signed push") {
		t.Errorf("a compare-and-swap push as git says now (push.gpgSign): %v", err)
	}
}
