package travel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/travel"
)

// A user whose git speaks German (LANGUAGE=de, as many desktops set it):
// a compare-and-swap push that lost its race is still ErrCASFailed (a
// worker takes another task), not a remote it cannot reach. implloop
// reads git's messages, which it gets in English whatever the user's
// language. Where git's German catalogue is not installed this passes
// trivially.
func TestCASLostInAnotherLanguage(t *testing.T) {
	t.Setenv("LANGUAGE", "de")
	t.Setenv("LC_ALL", "")
	t.Setenv("LANG", "C.UTF-8")
	ctx := context.Background()
	remote := gittest.New(t)
	local := gittest.New(t)
	dirs, empty := leaseLab(t, local)
	ref := travel.ClaimRef("plan", "T1")
	var leases []string
	for _, w := range []string{"w1", "w2"} {
		c, err := travel.NewLease(ctx, dirs, empty, "plan", "T1", w, 1, time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, c)
	}
	if err := travel.CASPush(ctx, local.Dir, remote.Dir, travel.RefUpdate{Ref: ref, New: leases[0]}); err != nil {
		t.Fatalf("the first claim: %v", err)
	}
	err := travel.CASPush(ctx, local.Dir, remote.Dir, travel.RefUpdate{Ref: ref, New: leases[1]})
	if !errors.Is(err, travel.ErrCASFailed) {
		t.Fatalf("the claim taken already: %v, want %v", err, travel.ErrCASFailed)
	}
	// The stale-value form: a takeover from a value the claim no longer holds.
	err = travel.CASPush(ctx, local.Dir, remote.Dir, travel.RefUpdate{Ref: ref, New: leases[1], Old: leases[1]})
	if !errors.Is(err, travel.ErrCASFailed) {
		t.Fatalf("a takeover from a stale value: %v, want %v", err, travel.ErrCASFailed)
	}
}
