package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// placeholderText is what git assumes when a git directory has no
// commondir file: the directory is its own common directory.
const placeholderText = ".\n"

// holdPlaceholder keeps a commondir file at path while a call runs, for
// the main tree's git directory, which has none.
//
// A git directory's commondir file sends git to another directory for its
// config, hooks, objects and refs. The call must be able to write the git
// directory (index.lock, HEAD.lock), so it could make one there, pointing
// at a directory of its own making whose config git outside the sandbox
// (implloop's boundary, a gate, the user) would then run (core.fsmonitor).
// A name can only be kept from being made by a mount on it, which needs a
// file: this one says what git assumes without it, and is read-only
// inside. It is made when the first call of the git directory starts and
// removed when the last ends (one left by a killed implloop is
// recognised by its text and removed the same way). A commondir that is
// not a placeholder is the user's, and left alone (read-only inside).
func (s *Sandbox) holdPlaceholder(path string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.placeholders[path] == 0 {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.WriteFile(path, []byte(placeholderText), 0o444); err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
		case err != nil:
			return nil, fmt.Errorf("sandbox: %w", err)
		case !bytes.Equal(b, []byte(placeholderText)):
			return func() {}, nil // the user's own
		}
	}
	s.placeholders[path]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.placeholders[path]--; s.placeholders[path] > 0 {
			return
		}
		delete(s.placeholders, path)
		if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, []byte(placeholderText)) {
			os.Remove(path)
		}
	}, nil
}

// HoldCommon keeps the commondir placeholder of dir's common git
// directory from now until ReleaseCommon, across the calls made in
// between: for a run whose calls overlap (--jobs). Each call's own hold
// makes and removes the file when it alone uses it; with calls starting
// and ending while implloop, a gate or another call runs git in the same
// repository, git could find the file and then fail to read it ("fatal:
// failed to read .git/commondir"), removed in between. Made before the
// first overlapping call and removed after the last, it never changes
// while anything else runs git. Holding again does nothing.
func (s *Sandbox) HoldCommon(ctx context.Context, dir string) error {
	s.mu.Lock()
	held := s.held != nil
	s.mu.Unlock()
	if held {
		return nil
	}
	l, err := s.layout(ctx, dir)
	if err != nil {
		return err
	}
	release, err := s.holdPlaceholder(filepath.Join(l.common, "commondir"))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.held = release
	s.mu.Unlock()
	return nil
}

// ReleaseCommon ends HoldCommon's hold, once no call runs: the
// placeholder goes unless a call still holds it.
func (s *Sandbox) ReleaseCommon() {
	s.mu.Lock()
	release := s.held
	s.held = nil
	s.mu.Unlock()
	if release != nil {
		release()
	}
}
