// Package travel makes runs travel with the repository: it writes a run's
// journal records as git objects beside its boundary commits, pushes them
// to a remote (signed with git's own signing when the user's git signs),
// and imports the records fetched from one into the local journal,
// checking every one, bounding its size, and verifying its signature with
// git's own verification. TrustOf (trust.go) is the one rule that says
// whose pulled work may stand in for this machine's.
//
// # Where the records live
//
// A run's records are a commit on refs/implloop/records/<run>. Its tree
// holds one canonical JSON file per journal table (run.json, tasks.json,
// units.json, gates.json, boundaries.json, events.json), a format marker
// (records.json) and the blobs the rows name (blobs/<sha256>: prompts,
// agent output, results, gate output). Two commits are written: the first
// leaves the transcripts out (no prompt, stdout, stderr or gate output;
// the rows name none) and has the run's last boundary commit as its
// parent, so the records ref alone reaches every boundary of the run; the
// second has the whole tree and the first as its parent, and the ref
// points at it. `push --no-transcripts` pushes the first. Both are
// deterministic (dates from the run's row, author the user's git
// identity), so writing them again gives the same commits. They are
// written unsigned when the run ends; push signs the runs made here when
// the user's git signs commits (trust.go: signRecords), and pull verifies
// and records who signed (TrustOf).
//
// Environment values are never stored, so they never travel: a unit's
// identity holds the names of passed-through variables only.
package travel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/implloop/implloop/boundary"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gitcmd"
	"github.com/implloop/implloop/internal/gitobj"
	"github.com/implloop/implloop/internal/runid"
)

// RecordsRefPrefix is where runs' records are kept, one ref per run.
const RecordsRefPrefix = "refs/implloop/records/"

// RecordsRef is the ref holding run's records.
func RecordsRef(run string) string { return RecordsRefPrefix + run }

// Format is the records layout this implloop writes and reads.
const Format = 1

// ErrNewerFormat: the records were written by a newer implloop.
var ErrNewerFormat = errors.New("records written by a newer implloop")

// The files of a records tree, in tree order.
const (
	fileBoundaries = "boundaries.json"
	fileEvents     = "events.json"
	fileGates      = "gates.json"
	fileRecords    = "records.json"
	fileRun        = "run.json"
	fileTasks      = "tasks.json"
	fileUnits      = "units.json"
	blobDir        = "blobs"
)

type formatMarker struct {
	Format int `json:"format"`
}

// unitRecord is a unit as it travels: the preimage as a JSON string, so
// its bytes (what the identity digests) come back exactly as hashed.
type unitRecord struct {
	cache.Unit
	Preimage string `json:"preimage"`
}

// files are a records tree's JSON files by name.
func files(rec *cache.Records) (map[string][]byte, error) {
	units := make([]unitRecord, len(rec.Units))
	for i, u := range rec.Units {
		units[i] = unitRecord{Unit: u, Preimage: string(u.Preimage)}
	}
	out := map[string][]byte{}
	for name, v := range map[string]any{
		fileRecords:    formatMarker{Format},
		fileRun:        rec.Run,
		fileTasks:      nonNil(rec.Tasks),
		fileUnits:      units,
		fileGates:      nonNil(rec.Gates),
		fileBoundaries: nonNil(rec.Boundaries),
		fileEvents:     nonNil(rec.Events),
	} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("records of %s: %s: %w", rec.Run.ID, name, err)
		}
		out[name] = b.Bytes()
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// withoutTranscripts is rec with the transcripts left out: the rows name
// no prompt, stdout, stderr or gate output. Results stay: a unit replays
// only with its result.
func withoutTranscripts(rec *cache.Records) *cache.Records {
	lite := *rec
	lite.Units = make([]cache.Unit, len(rec.Units))
	for i, u := range rec.Units {
		u.Prompt, u.Stdout, u.Stderr = "", "", ""
		lite.Units[i] = u
	}
	lite.Gates = make([]cache.Gate, len(rec.Gates))
	for i, g := range rec.Gates {
		g.Output = ""
		lite.Gates[i] = g
	}
	return &lite
}

func git(ctx context.Context, dir string, stdin []byte, env []string, args ...string) (string, error) {
	o := gitcmd.Options{Dir: dir, Env: env}
	if stdin != nil {
		o.Stdin = bytes.NewReader(stdin)
	}
	out, _, err := gitcmd.Run(ctx, o, args...)
	return strings.TrimRight(string(out), "\n"), err
}

// refValue is the commit ref points at, "" when it does not exist.
func refValue(ctx context.Context, dir, ref string) (string, error) {
	out, err := git(ctx, dir, nil, nil, "rev-parse", "-q", "--verify", ref+"^{commit}")
	if err != nil {
		if gitcmd.ExitCode(err) == 1 {
			return "", nil
		}
		return "", err
	}
	return out, nil
}

// Write writes run's records as git objects and points
// refs/implloop/records/<run> at them, unless it exists already (records
// are written once, when the run ends). It returns the records commit.
func Write(ctx context.Context, j *cache.Journal, runID string) (string, error) {
	c, _, err := write(ctx, j, runID, false, nil)
	return c, err
}

// write is Write, the records commits signed when sign is set (a push
// that signs the records of a run whose records were not written when it
// ended: a worker's, loop.Options.DeferRecords), so that they are written
// once, not written and then signed again. signed: it wrote them now,
// signed. k is what the caller read already (nil: nothing).
func write(ctx context.Context, j *cache.Journal, runID string, sign bool, k *known) (c string, signed bool, err error) {
	dir := j.Root()
	if !runid.RefSafe(runID) {
		return "", false, fmt.Errorf("records of %s: the run id cannot be a ref name", runID)
	}
	ref := RecordsRef(runID)
	if k != nil && k.haveRecords {
		if k.records != "" {
			return k.records, false, nil
		}
	} else if c, err := refValue(ctx, dir, ref); err != nil || c != "" {
		return c, false, err
	}
	rec, err := j.Records(runID)
	if err != nil {
		return "", false, err
	}
	trees, err := writeTrees(ctx, dir, j, withoutTranscripts(rec), rec)
	if err != nil {
		return "", false, fmt.Errorf("records of %s: %w", runID, err)
	}
	lite, full := trees[0], trees[1]
	at := rec.Run.FinishedAt
	if at.IsZero() {
		at = rec.Run.StartedAt
	}
	name, email := k.name(ctx, dir)
	var parents []string
	if n := len(rec.Boundaries); n > 0 && rec.Boundaries[n-1].Commit != "" {
		parents = []string{rec.Boundaries[n-1].Commit}
	}
	commit := func(tree, msg string, parents []string) (string, error) {
		// Written in process where git would write it so (signed:
		// signedCommit).
		who := gitobj.Ident{Name: name, Email: email, When: time.Unix(at.Unix(), 0).UTC()}
		c := gitobj.Commit{Tree: tree, Parents: parents, Author: who, Committer: who, Message: msg}
		if !sign {
			id, err := objects(j.Dirs()).Commit(ctx, c)
			if err != nil {
				return "", fmt.Errorf("records of %s: %w", runID, err)
			}
			return id, nil
		}
		id, err := signedCommit(ctx, j.Dirs(), k.pin(), c)
		if err != nil {
			return "", &SignError{Run: runID, Err: err}
		}
		return id, nil
	}
	liteCommit, err := commit(lite, fmt.Sprintf("implloop records of run %s, without transcripts\n\nImplloop-Run: %s\nImplloop-Records: %d\n%s\n", runID, runID, Format, liteTrailer), parents)
	if err != nil {
		return "", false, err
	}
	fullCommit, err := commit(full, fmt.Sprintf("implloop records of run %s\n\nImplloop-Run: %s\nImplloop-Records: %d\n", runID, runID, Format), []string{liteCommit})
	if err != nil {
		return "", false, err
	}
	if _, err := git(ctx, dir, nil, nil, "update-ref", "-m", "implloop: records of "+runID, ref, fullCommit, ""); err != nil {
		return "", false, fmt.Errorf("records of %s: %w", runID, err)
	}
	return fullCommit, sign, nil
}

// recordsIdent is who the records commits say made them: the user as
// their git names them (`git var GIT_AUTHOR_IDENT`: user.name and
// user.email, or GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL), else implloop. A
// pull shows it as who pushed an unsigned run; only a signature vouches
// for it.
func recordsIdent(ctx context.Context, dir string) (name, email string) {
	ident, err := git(ctx, dir, nil, nil, "var", "GIT_AUTHOR_IDENT")
	if err == nil {
		if n, rest, ok := strings.Cut(ident, " <"); ok {
			if e, _, ok := strings.Cut(rest, ">"); ok && n != "" && e != "" {
				return n, e
			}
		}
	}
	return "implloop", "implloop@localhost"
}

// writeTrees writes the files and blobs of each of recs as git objects
// and returns their trees: in process (gitobj), or in three git
// processes whatever their number where git writes: one hash-object, one
// mktree of the blob directories, one of the roots.
// Where git writes, files are staged in a temporary directory (in
// process, the JSON files are written from memory: no file is made).
func writeTrees(ctx context.Context, dir string, j *cache.Journal, recs ...*cache.Records) ([]string, error) {
	type staged struct {
		names []string // the files, then blobs (their hashes)
		blobs []string
	}
	w := objects(j.Dirs())
	var items []blobItem
	st := make([]staged, len(recs))
	for i, rec := range recs {
		fs, err := files(rec)
		if err != nil {
			return nil, err
		}
		for n, b := range fs {
			st[i].names, items = append(st[i].names, n), append(items, blobItem{stage: i, name: n, data: b})
		}
		st[i].blobs = rec.Blobs()
		for _, h := range st[i].blobs {
			p, err := j.Blobs().Path(h)
			if err != nil {
				return nil, err
			}
			if _, err := os.Stat(p); err != nil {
				// Not a file of its own (it came with a pull, in a pack):
				// written like the JSON files.
				items = append(items, blobItem{stage: i, hash: h})
				continue
			}
			items = append(items, blobItem{path: p})
		}
	}
	oids, err := writeBlobs(ctx, w, j, items)
	if err != nil {
		return nil, err
	}
	// The blob directories (of the records that name blobs), then the
	// roots, each batch written at once (one git mktree --batch where
	// git writes).
	var subs [][]gitobj.Entry
	var withBlobs []int
	roots := make([][]gitobj.Entry, len(recs))
	k := 0
	for i := range st {
		for _, n := range st[i].names {
			roots[i] = append(roots[i], gitobj.Entry{Mode: gitobj.ModeFile, Name: n, ID: oids[k]})
			k++
		}
		if len(st[i].blobs) == 0 {
			continue
		}
		var sub []gitobj.Entry
		for _, h := range st[i].blobs {
			sub = append(sub, gitobj.Entry{Mode: gitobj.ModeFile, Name: h, ID: oids[k]})
			k++
		}
		subs = append(subs, sub)
		withBlobs = append(withBlobs, i)
	}
	if len(withBlobs) > 0 {
		t, err := w.Trees(ctx, subs)
		if err != nil {
			return nil, err
		}
		for n, i := range withBlobs {
			roots[i] = append(roots[i], gitobj.Entry{Mode: gitobj.ModeDir, Name: blobDir, ID: t[n]})
		}
	}
	return w.Trees(ctx, roots)
}

// blobItem is a blob writeTrees writes: data (a JSON file, name), the
// blob store's blob hash (one that is no file of its own), or the file
// at path.
type blobItem struct {
	stage      int
	name, hash string
	data       []byte
	path       string
}

// writeBlobs writes items as blobs and returns their ids in order: in
// process, from memory (the files at path in one batch); where git
// writes, in one git hash-object, the JSON files and the blobs that are
// no file of their own staged in a temporary directory (tmp/<stage>)
// first, made then and removed after.
func writeBlobs(ctx context.Context, w *gitobj.Writer, j *cache.Journal, items []blobItem) ([]string, error) {
	ids := make([]string, len(items))
	var paths []string
	var at []int
	tmp := ""
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()
	for i, it := range items {
		switch {
		case it.path != "":
			paths, at = append(paths, it.path), append(at, i)
			continue
		case !w.InProcess():
			if tmp == "" {
				var err error
				if tmp, err = os.MkdirTemp("", "implloop-records-"); err != nil {
					return nil, err
				}
			}
			stage := filepath.Join(tmp, strconv.Itoa(it.stage))
			if err := os.MkdirAll(stage, 0o755); err != nil {
				return nil, err
			}
			p := filepath.Join(stage, it.name)
			var err error
			if it.hash != "" {
				p, err = stageBlob(j, it.hash, stage)
			} else {
				err = os.WriteFile(p, it.data, 0o644)
			}
			if err != nil {
				return nil, err
			}
			paths, at = append(paths, p), append(at, i)
			continue
		}
		data := it.data
		if it.hash != "" {
			b, err := readBlob(j, it.hash)
			if err != nil {
				return nil, err
			}
			data = b
		}
		id, err := w.Blob(ctx, data)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	if len(paths) > 0 {
		got, err := w.BlobFiles(ctx, paths)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			ids[i] = got[k]
		}
	}
	return ids, nil
}

// readBlob is blob h of the blob store.
func readBlob(j *cache.Journal, h string) ([]byte, error) {
	r, err := j.Blobs().Open(h)
	if err != nil {
		return nil, fmt.Errorf("blob %s is not in the blob store: %w", h, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// stageBlob copies blob h to a file in stage.
func stageBlob(j *cache.Journal, h, stage string) (string, error) {
	r, err := j.Blobs().Open(h)
	if err != nil {
		return "", fmt.Errorf("blob %s is not in the blob store: %w", h, err)
	}
	defer r.Close()
	p := filepath.Join(stage, "blob-"+h)
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return p, err
}

// liteTrailer marks the records commit without transcripts.
const liteTrailer = "Implloop-Transcripts: none"

// liteOf is the records commit without transcripts of records commit c:
// c itself when it is one (records pulled without transcripts), else its
// first parent.
func liteOf(ctx context.Context, dir, c string) (string, error) {
	raw, err := git(ctx, dir, nil, nil, "cat-file", "commit", c)
	if err != nil {
		return "", err
	}
	if strings.Contains(raw+"\n", "\n"+liteTrailer+"\n") {
		return c, nil
	}
	return refValue(ctx, dir, c+"^1")
}

// runRefs are the refs of run that travel: its records, and its boundary
// commits' ref when it exists.
func runRefs(ctx context.Context, dir, run string) (records, boundaries string, err error) {
	if records, err = refValue(ctx, dir, RecordsRef(run)); err != nil {
		return "", "", err
	}
	boundaries, err = refValue(ctx, dir, boundary.RunRef(run))
	return records, boundaries, err
}
