package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/internal/files"
	"github.com/implloop/implloop/internal/gitcmd"
)

// layout is where a work tree's git keeps what the rules name, with
// symlinks resolved.
type layout struct {
	tree   string // the work tree's top
	gitDir string // $(git rev-parse --git-dir): its index, HEAD
	common string // $(git rev-parse --git-common-dir): objects, refs, config
}

// linked reports whether the tree is a linked worktree (its git directory
// is not the common one).
func (l *layout) linked() bool { return l.gitDir != l.common }

// layout reads dir's git layout, once per dir.
func (s *Sandbox) layout(ctx context.Context, dir string) (*layout, error) {
	s.mu.Lock()
	l := s.layouts[dir]
	s.mu.Unlock()
	if l != nil {
		return l, nil
	}
	l, err := readLayout(ctx, dir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.layouts[dir] = l
	s.mu.Unlock()
	return l, nil
}

func readLayout(ctx context.Context, dir string) (*layout, error) {
	tree, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	out, err := gitcmd.Output(ctx, tree, "rev-parse", "--git-dir", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s: %w", tree, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("sandbox: git rev-parse --git-dir --git-common-dir in %s said %q", tree, out)
	}
	abs := func(p string) (string, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(tree, p)
		}
		return filepath.EvalSymlinks(p)
	}
	l := &layout{tree: tree}
	if l.gitDir, err = abs(lines[0]); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if l.common, err = abs(lines[1]); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if files.Exists(filepath.Join(l.common, "reftable")) {
		return nil, fmt.Errorf("%s: %w", tree, ErrReftable)
	}
	return l, nil
}

// prepare makes what the rules bind and the call must not make itself:
// the directories of implloop's refs, hooks/ and info/ (read-only inside,
// so the call cannot make them either), and implloop's refs that only
// packed-refs holds written out as loose files (see the package doc).
func (l *layout) prepare(refs []string) error {
	for _, ns := range refs {
		if err := os.MkdirAll(filepath.Join(l.common, filepath.FromSlash(ns)), 0o755); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	for _, d := range []string{"hooks", "info"} {
		if err := os.MkdirAll(filepath.Join(l.common, d), 0o755); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return pinLooseRefs(l.common, refs)
}

// pinLooseRefs writes every ref under the namespaces refs that
// packed-refs holds and no loose file does as a loose file of the same
// value, under git's lock protocol: the ref's .lock file, made
// exclusively, renamed into place. A ref someone else holds the lock of
// is being written by them (and will be loose): it is left alone.
func pinLooseRefs(common string, refs []string) error {
	b, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	for _, r := range packedRefs(b, refs) {
		if err := pinLooseRef(common, r.name, r.oid); err != nil {
			return err
		}
	}
	return nil
}

// packedRef is one line of packed-refs.
type packedRef struct{ oid, name string }

// packedRefs reads the refs under the namespaces refs from packed-refs
// content b (written by the previous call, so hostile: only well-formed
// lines with names inside refs/ count).
func packedRefs(b []byte, refs []string) []packedRef {
	var out []packedRef
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		oid, name, ok := strings.Cut(line, " ")
		if !ok || !validOID(oid) || !underAny(name, refs) || !validRefName(name) {
			continue
		}
		out = append(out, packedRef{oid, name})
	}
	return out
}

func pinLooseRef(common, name, oid string) error {
	path := filepath.Join(common, filepath.FromSlash(name))
	if _, err := os.Lstat(path); err == nil {
		return nil // loose already (or a directory git would refuse)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("sandbox: keeping %s loose: %w", name, err)
	}
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox: keeping %s loose: %w", name, err)
	}
	_, err = f.WriteString(oid + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	// Written by someone else between the Lstat and the lock: theirs stands.
	if _, serr := os.Lstat(path); err == nil && serr == nil {
		os.Remove(lock)
		return nil
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		os.Remove(lock)
		return fmt.Errorf("sandbox: keeping %s loose: %w", name, err)
	}
	return nil
}

func underAny(name string, namespaces []string) bool {
	for _, ns := range namespaces {
		if strings.HasPrefix(name, strings.TrimSuffix(ns, "/")+"/") {
			return true
		}
	}
	return false
}

// validOID is a hex object id of SHA-1 or SHA-256 length.
func validOID(s string) bool { return gitcmd.IsObjectID(s) }

// validRefName refuses names that would write outside refs/ (packed-refs
// is writable by the call before this one).
func validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".lock") {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." || strings.ContainsAny(part, "\\\x00") {
			return false
		}
	}
	return true
}
