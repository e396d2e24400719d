package boundary

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// State is what implloop keeps in git for a work tree, as Inspect found
// it: its refs and whether their objects are there, and the private
// boundary index. Inspect only reads.
type State struct {
	// Refs are implloop's refs (refs/implloop/...), sorted by name.
	Refs []StateRef
	// Missing are the object ids a caller asked about (Inspect's ids)
	// that the repository lacks.
	Missing map[string]bool
	// Index is the private boundary index: whether it exists, how many
	// entries it has and how many of them name an object git no longer
	// has (after a gc of a forgotten run's objects).
	Index IndexState
}

// StateRef is one of implloop's refs.
type StateRef struct {
	Name    string // refs/implloop/runs/r-...
	Target  string // the object it points at
	Missing bool   // the object is not in the repository
}

// IndexState describes the private boundary index.
type IndexState struct {
	Path    string
	Exists  bool
	Entries int
	Missing int // entries whose blob or gitlink commit is gone
}

// Inspect reads implloop's git state of the work tree at repoDir: every
// ref under refs/implloop/, whether each ref's object and each of ids
// (boundary commits the journal names) is in the repository, and the
// private boundary index's entries against the object store. It writes
// nothing (replace refs are off for every git call, so a replaced object
// does not hide a missing one).
func Inspect(ctx context.Context, repoDir string, ids []string) (State, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return State{}, err
	}
	out, _, err := g.run(nil, nil, "for-each-ref", "--format=%(objectname) %(refname)", "refs/implloop/")
	if err != nil {
		return State{}, fmt.Errorf("inspect: %w", err)
	}
	var st State
	want := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		oid, name, ok := strings.Cut(line, " ")
		if !ok || !isHexID(oid) {
			continue
		}
		st.Refs = append(st.Refs, StateRef{Name: name, Target: oid})
		want[oid] = true
	}
	for _, id := range ids {
		if isHexID(id) {
			want[id] = true
		}
	}
	st.Index.Path = filepath.Join(stateDir(g.gitDir), "boundary-index")
	var indexed []string
	if _, err := os.Stat(st.Index.Path); err == nil {
		st.Index.Exists = true
		out, err := g.listIndex(st.Index.Path)
		if err != nil {
			return State{}, fmt.Errorf("inspect the boundary index: %w", err)
		}
		for _, rec := range bytes.Split(out, []byte{0}) {
			f := strings.Fields(string(bytes.SplitN(rec, []byte{'\t'}, 2)[0]))
			if len(f) >= 2 && isHexID(f[1]) {
				indexed = append(indexed, f[1])
				want[f[1]] = true
			}
		}
		st.Index.Entries = len(indexed)
	}
	// The entries boundaries from a watcher's paths left for the index to
	// catch up on (catchUp) name objects too.
	if lag, err := os.ReadFile(st.Index.Path + ".lag"); err == nil {
		for _, rec := range bytes.Split(lag, []byte{0}) {
			f := strings.Fields(string(bytes.SplitN(rec, []byte{'\t'}, 2)[0]))
			if len(f) == 2 && f[0] != "0" && isHexID(f[1]) {
				indexed = append(indexed, f[1])
				want[f[1]] = true
			}
		}
	}
	missing, err := g.missingObjects(want)
	if err != nil {
		return State{}, err
	}
	st.Missing = map[string]bool{}
	for _, id := range ids {
		if missing[id] {
			st.Missing[id] = true
		}
	}
	for i := range st.Refs {
		st.Refs[i].Missing = missing[st.Refs[i].Target]
	}
	for _, id := range indexed {
		if missing[id] {
			st.Index.Missing++
		}
	}
	return st, nil
}

// missingObjects asks git, in one cat-file process, which of ids it lacks.
func (g *gitRepo) missingObjects(ids map[string]bool) (map[string]bool, error) {
	missing := map[string]bool{}
	if len(ids) == 0 {
		return missing, nil
	}
	var in bytes.Buffer
	for id := range ids {
		in.WriteString(id + "\n")
	}
	out, _, err := g.run(nil, in.Bytes(), "cat-file", "--batch-check=%(objectname)")
	if err != nil {
		return nil, fmt.Errorf("inspect: cat-file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// A missing object's line is "<id> missing".
		if id, rest, ok := strings.Cut(sc.Text(), " "); ok && rest == "missing" {
			missing[id] = true
		}
	}
	return missing, sc.Err()
}

// listIndex is `git ls-files --stage -z` of the index at path ("MODE OID
// STAGE\tPATH" records), read from copies: git touches the shared part of
// a split index whenever it reads one (so that it does not expire), and
// Inspect writes nothing, not even a timestamp. The copy of the index and
// of every shared part beside the git directory go to a scratch git
// directory of their own, which ls-files reads (it needs no objects).
func (g *gitRepo) listIndex(path string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "implloop-inspect-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		return nil, err
	}
	for _, d := range []string{"objects", "refs"} {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o755); err != nil {
			return nil, err
		}
	}
	shared, _ := filepath.Glob(filepath.Join(g.gitDir, "sharedindex.*"))
	for _, src := range append(shared, path) {
		dst := filepath.Join(tmp, filepath.Base(src))
		if src == path {
			dst = filepath.Join(tmp, "index")
		}
		if err := copyIndex(src, dst); err != nil {
			return nil, err
		}
	}
	out, _, err := g.run([]string{"GIT_DIR=" + tmp, "GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}, nil, "ls-files", "--stage", "-z")
	return out, err
}
