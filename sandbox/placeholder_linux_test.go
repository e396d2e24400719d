package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// Calls that overlap (--jobs) start and end while implloop, gates and
// other calls run git in the repository: a commondir placeholder removed
// between git's check and its read fails that git ("fatal: failed to
// read .git/commondir", seen in a --jobs 2 --sandbox run). HoldCommon
// keeps it from before the first call until ReleaseCommon, whatever the
// calls in between do; without it each call still cleans up after itself.
func TestHoldCommonKeepsThePlaceholderAcrossCalls(t *testing.T) {
	s := newSandbox(t, Options{})
	r := newRepo(t)
	ctx := t.Context()
	commondir := filepath.Join(r.dir, ".git", "commondir")
	exists := func() bool { _, err := os.Lstat(commondir); return err == nil }

	if err := s.HoldCommon(ctx, r.dir); err != nil {
		t.Fatal(err)
	}
	if err := s.HoldCommon(ctx, r.dir); err != nil { // again: nothing more
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("no placeholder while held")
	}
	for range 3 {
		c, err := s.Call(ctx, r.dir)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if !exists() {
			t.Fatal("a call's end removed the placeholder while it was held")
		}
	}
	c, err := s.Call(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.ReleaseCommon()
	if !exists() {
		t.Fatal("the release removed the placeholder while a call used it")
	}
	c.Close()
	if exists() {
		t.Fatal("the placeholder is left after the last call and the release")
	}
	s.ReleaseCommon() // again: nothing
}
