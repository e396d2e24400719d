package travel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/internal/gitcmd"
)

// RefusedError is a record that failed its checks: malformed, forged or
// damaged. Nothing of the pull that met it is imported.
type RefusedError struct {
	Run    string
	Commit string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the records of run %s (commit %.12s) are refused: %s", e.Run, e.Commit, e.Reason)
}

// incoming is one run's records read from a commit, checked, with the git
// blob id of each blob they name.
type incoming struct {
	rec    *cache.Records
	commit string
	blobs  map[string]string // sha256 -> git blob id
	signed bool              // the records commit carries a signature
}

// pending is a run's records commit, fetched and not yet read.
type pending struct {
	run, commit string
}

// readRecords reads and checks the records of runs at their commits: the
// layout, the format, that every row is the run's, that each unit's
// identity is the digest of its preimage, and that every blob the rows
// name is in the tree (its content's hash is checked when it is stored).
// The objects of all runs are read in three rounds of one `git cat-file
// --batch` each (commits, root trees, then the JSON files and blob
// trees), so a pull of many runs starts three processes, not two per run.
// each, when not nil, is handed each run as soon as it is decoded and
// checked, in the order of runs, until one fails (from another goroutine).
// Every object is counted against b before a byte of it is read (see
// Limits), and a run's dates are checked against now (checkDates).
func readRecords(ctx context.Context, dir string, runs []pending, b *budget, now time.Time, each func(*incoming)) ([]*incoming, error) {
	roots, signed, err := readCommits(ctx, dir, runs, b)
	if err != nil {
		return nil, err
	}
	files, blobTrees, err := readRootTrees(ctx, dir, runs, roots, b)
	if err != nil {
		return nil, err
	}
	return readFiles(ctx, dir, runs, signed, files, blobTrees, b, now, each)
}

// refuse is the refusal of run p's records, for the reason format says.
func refuse(p pending, format string, args ...any) error {
	return &RefusedError{Run: p.run, Commit: p.commit, Reason: fmt.Sprintf(format, args...)}
}

// catRefused makes a catBatch error that names the object it met (the
// object of run owner(i) at index i) the refusal of that run.
func catRefused(owner func(i int) pending, err error) error {
	var ce *catError
	if errors.As(err, &ce) {
		return refuse(owner(ce.Index), "%v", ce.Err)
	}
	return err
}

// readCommits (round 1) reads the records commits of runs, for their
// trees and whether they are signed.
func readCommits(ctx context.Context, dir string, runs []pending, b *budget) (roots []string, signed []bool, err error) {
	ids := make([]string, len(runs))
	for i, p := range runs {
		ids[i] = p.commit
	}
	roots = make([]string, len(runs))
	signed = make([]bool, len(runs))
	err = catBatch(ctx, dir, ids, func(i int, typ string, size int64, r io.Reader) error {
		if typ != "commit" {
			return refuse(runs[i], "it is not a commit")
		}
		if err := b.record(runs[i], "its commit", size); err != nil {
			return err
		}
		raw, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		var ok bool
		if roots[i], ok = commitTree(raw); !ok {
			return refuse(runs[i], "it is not a commit")
		}
		signed[i] = hasSignature(raw)
		return nil
	})
	if err != nil {
		return nil, nil, catRefused(func(i int) pending { return runs[i] }, err)
	}
	return roots, signed, nil
}

// readRootTrees (round 2) reads the root tree of each run's records: its
// JSON files (files, name -> blob id) and its blobs tree, and nothing
// else.
func readRootTrees(ctx context.Context, dir string, runs []pending, roots []string, b *budget) (files []map[string]string, blobTrees []string, err error) {
	files = make([]map[string]string, len(runs))
	blobTrees = make([]string, len(runs))
	err = catBatch(ctx, dir, roots, func(i int, typ string, size int64, r io.Reader) error {
		if typ != "tree" {
			return refuse(runs[i], "its tree is a %s", typ)
		}
		if err := b.record(runs[i], "its tree", size); err != nil {
			return err
		}
		files[i] = map[string]string{}
		return readTree(r, len(roots[i])/2, func(mode, name, oid string) error {
			switch {
			case mode == "40000" && name == blobDir:
				blobTrees[i] = oid
			case mode == "100644" && slices.Contains(recordFiles, name):
				files[i][name] = oid
			default:
				return refuse(runs[i], "unexpected entry %s %s", mode, name)
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, catRefused(func(i int) pending { return runs[i] }, err)
	}
	return files, blobTrees, nil
}

// recordObject is an object read in round 3: one of run's JSON files, or
// its blobs tree (name "").
type recordObject struct {
	run  int
	name string
}

// recordObjects lists what round 3 reads, run by run: every JSON file of
// the records (each must be there) and the blobs tree where there is
// one, with their object ids.
func recordObjects(runs []pending, files []map[string]string, blobTrees []string) (objs []recordObject, ids []string, err error) {
	for i := range runs {
		for _, n := range recordFiles {
			id, ok := files[i][n]
			if !ok {
				return nil, nil, refuse(runs[i], "%s is missing", n)
			}
			objs, ids = append(objs, recordObject{i, n}), append(ids, id)
		}
		if blobTrees[i] != "" {
			objs, ids = append(objs, recordObject{i, ""}), append(ids, blobTrees[i])
		}
	}
	return objs, ids, nil
}

// readFiles (round 3) reads the JSON files and blobs trees of every run
// and decodes each run (decodeRecords) as soon as its last object is
// read, while git reads the next runs' (decoding costs more than
// reading). Errors are reported as before: a read error first, then the
// first run's.
func readFiles(ctx context.Context, dir string, runs []pending, signed []bool, files []map[string]string, blobTrees []string, b *budget, now time.Time, each func(*incoming)) ([]*incoming, error) {
	objs, ids, err := recordObjects(runs, files, blobTrees)
	if err != nil {
		return nil, err
	}
	ins := make([]*incoming, len(runs))
	content := make([]map[string][]byte, len(runs))
	for i, p := range runs {
		ins[i] = &incoming{commit: p.commit, blobs: map[string]string{}, signed: signed[i]}
		content[i] = map[string][]byte{}
	}
	decode := make(chan int, len(runs))
	decodeErrs := make([]error, len(runs))
	decoded := make(chan struct{})
	go func() {
		defer close(decoded)
		failed := false
		for i := range decode {
			ins[i].rec, decodeErrs[i] = decodeRecords(runs[i], content[i], ins[i].blobs, now)
			failed = failed || decodeErrs[i] != nil
			if !failed && each != nil {
				each(ins[i])
			}
		}
	}()
	err = catBatch(ctx, dir, ids, func(k int, typ string, size int64, r io.Reader) error {
		o := objs[k]
		if k+1 == len(objs) || objs[k+1].run != o.run {
			defer func() { decode <- o.run }()
		}
		if o.name == "" {
			return readBlobsTree(runs[o.run], typ, size, r, len(ids[k])/2, b, ins[o.run].blobs)
		}
		if typ != "blob" {
			return refuse(runs[o.run], "%s is a %s", o.name, typ)
		}
		if err := b.record(runs[o.run], o.name, size); err != nil {
			return err
		}
		buf, err := io.ReadAll(r)
		content[o.run][o.name] = buf
		return err
	})
	close(decode)
	<-decoded
	if err != nil {
		return nil, catRefused(func(k int) pending { return runs[objs[k].run] }, err)
	}
	for _, err := range decodeErrs {
		if err != nil {
			return nil, err
		}
	}
	return ins, nil
}

// readBlobsTree reads the blobs tree of run p's records into blobs
// (sha256 -> git blob id): only files named by a SHA-256.
func readBlobsTree(p pending, typ string, size int64, r io.Reader, oidLen int, b *budget, blobs map[string]string) error {
	if typ != "tree" {
		return refuse(p, "%s is a %s", blobDir, typ)
	}
	if err := b.record(p, "its "+blobDir+" tree", size); err != nil {
		return err
	}
	return readTree(r, oidLen, func(mode, name, oid string) error {
		if mode != "100644" || !validSHA256(name) {
			return refuse(p, "unexpected file %s/%s", blobDir, name)
		}
		blobs[name] = oid
		return nil
	})
}

// commitTree is the tree a raw commit object names on its first line.
func commitTree(raw []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(raw, []byte("tree "))
	if !ok {
		return "", false
	}
	tree, _, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return "", false
	}
	return string(tree), true
}

// recordFiles are the JSON files of a records tree.
var recordFiles = []string{fileRecords, fileRun, fileTasks, fileUnits, fileGates, fileBoundaries, fileEvents}

// readTree calls fn for each entry of a git tree object, whose object ids
// are oidLen bytes.
func readTree(r io.Reader, oidLen int, fn func(mode, name, oid string) error) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp <= 0 || nul <= sp+1 || len(b) < nul+1+oidLen {
			return fmt.Errorf("a damaged tree object")
		}
		mode, name := string(b[:sp]), string(b[sp+1:nul])
		oid := hex.EncodeToString(b[nul+1 : nul+1+oidLen])
		b = b[nul+1+oidLen:]
		if err := fn(mode, name, oid); err != nil {
			return err
		}
	}
	return nil
}

// decodeRecords decodes and checks one run's JSON files.
func decodeRecords(p pending, content map[string][]byte, blobs map[string]string, now time.Time) (*cache.Records, error) {
	var marker formatMarker
	if err := strict(content[fileRecords], &marker); err != nil {
		return nil, refuse(p, "%s: %v", fileRecords, err)
	}
	if marker.Format > Format {
		return nil, fmt.Errorf("run %s: format %d > %d: %w", p.run, marker.Format, Format, ErrNewerFormat)
	}
	if marker.Format != Format {
		return nil, refuse(p, "format %d is not %d", marker.Format, Format)
	}
	rec := &cache.Records{}
	var units []unitRecord
	for name, v := range map[string]any{fileRun: &rec.Run, fileTasks: &rec.Tasks, fileUnits: &units,
		fileGates: &rec.Gates, fileBoundaries: &rec.Boundaries, fileEvents: &rec.Events} {
		if err := strict(content[name], v); err != nil {
			return nil, refuse(p, "%s: %v", name, err)
		}
	}
	if rec.Run.ID != p.run {
		return nil, refuse(p, "it holds run %q", rec.Run.ID)
	}
	if why := checkDates(&rec.Run, now); why != "" {
		return nil, refuse(p, "%s", why)
	}
	for _, u := range units {
		u.Unit.Preimage = json.RawMessage(u.Preimage)
		if got := identity.DigestCanonical(u.Unit.Preimage); got != u.Identity {
			return nil, refuse(p, "unit %s: its identity %s is not the digest of its preimage (%s)", u.UnitID, u.Identity, got)
		}
		rec.Units = append(rec.Units, u.Unit)
	}
	for _, h := range rec.Blobs() {
		if _, ok := blobs[h]; !ok {
			return nil, refuse(p, "blob %s is named but not in its tree", h)
		}
	}
	return rec, nil
}

// strict decodes one JSON value with no unknown fields and nothing after.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

func validSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// parseCatHeader reads a `git cat-file --batch` header, "<oid> <type>
// <size>\n"; a missing object's ("<oid> missing\n") is not one.
func parseCatHeader(h []byte) (typ string, size int64, ok bool) {
	h = bytes.TrimSuffix(h, []byte("\n"))
	_, rest, ok := bytes.Cut(h, []byte(" "))
	if !ok {
		return "", 0, false
	}
	t, n, ok := bytes.Cut(rest, []byte(" "))
	if !ok || len(n) == 0 || len(n) > 18 {
		return "", 0, false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return "", 0, false
		}
		size = size*10 + int64(c-'0')
	}
	switch string(t) { // the common types without an allocation each
	case "blob":
		return "blob", size, true
	case "tree":
		return "tree", size, true
	case "commit":
		return "commit", size, true
	}
	return string(t), size, true
}

// catError is an object catBatch could not read: Index is its place in
// the ids asked for.
type catError struct {
	Index int
	Err   error
}

func (e *catError) Error() string { return e.Err.Error() }
func (e *catError) Unwrap() error { return e.Err }

// catBatch reads the objects ids with one `git cat-file --batch` (one
// of the sessions ctx carries, catSessions, if any), handing
// each one's type, size and content to fn as a stream: fn sees the size
// before it reads a byte. An object git does not
// have is a *catError.
func catBatch(ctx context.Context, dir string, ids []string, fn func(i int, typ string, size int64, r io.Reader) error) error {
	if len(ids) == 0 {
		return nil
	}
	if ok, err := catBatchIn(ctx, dir, ids, fn); ok {
		return err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, _, err := gitcmd.Run(ctx, gitcmd.Options{Dir: dir, Stdin: strings.NewReader(strings.Join(ids, "\n") + "\n"), Stdout: pw}, "cat-file", "--batch", "--buffer")
		pw.CloseWithError(err)
		done <- err
	}()
	br := bufio.NewReaderSize(pr, 64<<10)
	var ferr error
	for i := range ids {
		header, err := br.ReadSlice('\n')
		if err != nil {
			ferr = fmt.Errorf("reading object %s: %w", ids[i], err)
			break
		}
		typ, size, ok := parseCatHeader(header)
		if !ok {
			ferr = &catError{i, fmt.Errorf("object %s: %s", ids[i], bytes.TrimSpace(header))}
			break
		}
		lr := io.LimitedReader{R: br, N: size}
		if err := fn(i, typ, size, &lr); err != nil {
			ferr = err
			break
		}
		if lr.N > 0 {
			if _, err := br.Discard(int(lr.N)); err != nil {
				ferr = err
				break
			}
		}
		if _, err := br.Discard(1); err != nil { // the newline after the content
			ferr = err
			break
		}
	}
	if ferr != nil {
		pr.CloseWithError(ferr)
		<-done
		return ferr
	}
	_, _ = io.Copy(io.Discard, br)
	return <-done
}
