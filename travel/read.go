package travel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

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
}

// readRecords reads and checks the records of run at commit: the layout,
// the format, that every row is the run's, that each unit's identity is
// the digest of its preimage, and that every blob the rows name is in the
// tree (its content's hash is checked when it is stored).
func readRecords(ctx context.Context, dir, run, commit string) (*incoming, error) {
	refuse := func(format string, args ...any) error {
		return &RefusedError{Run: run, Commit: commit, Reason: fmt.Sprintf(format, args...)}
	}
	out, err := git(ctx, dir, nil, nil, "ls-tree", "-r", "-z", "--full-tree", commit)
	if err != nil {
		return nil, refuse("its tree cannot be read: %v", err)
	}
	jsonIDs := map[string]string{}
	in := &incoming{commit: commit, blobs: map[string]string{}}
	for _, e := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		if e == "" {
			continue
		}
		meta, path, ok := strings.Cut(e, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[0] != "100644" || f[1] != "blob" {
			return nil, refuse("unexpected entry %q", e)
		}
		switch {
		case strings.HasPrefix(path, blobDir+"/"):
			h := strings.TrimPrefix(path, blobDir+"/")
			if !validSHA256(h) {
				return nil, refuse("unexpected file %s", path)
			}
			in.blobs[h] = f[2]
		case path == fileRecords || path == fileRun || path == fileTasks || path == fileUnits ||
			path == fileGates || path == fileBoundaries || path == fileEvents:
			jsonIDs[path] = f[2]
		default:
			return nil, refuse("unexpected file %s", path)
		}
	}
	var names, ids []string
	for _, n := range []string{fileRecords, fileRun, fileTasks, fileUnits, fileGates, fileBoundaries, fileEvents} {
		id, ok := jsonIDs[n]
		if !ok {
			return nil, refuse("%s is missing", n)
		}
		names, ids = append(names, n), append(ids, id)
	}
	content := map[string][]byte{}
	err = catBatch(ctx, dir, ids, func(i int, r io.Reader) error {
		b, err := io.ReadAll(r)
		content[names[i]] = b
		return err
	})
	if err != nil {
		return nil, refuse("%v", err)
	}
	var marker formatMarker
	if err := strict(content[fileRecords], &marker); err != nil {
		return nil, refuse("%s: %v", fileRecords, err)
	}
	if marker.Format > Format {
		return nil, fmt.Errorf("run %s: format %d > %d: %w", run, marker.Format, Format, ErrNewerFormat)
	}
	if marker.Format != Format {
		return nil, refuse("format %d is not %d", marker.Format, Format)
	}
	rec := &cache.Records{}
	var units []unitRecord
	for name, v := range map[string]any{fileRun: &rec.Run, fileTasks: &rec.Tasks, fileUnits: &units,
		fileGates: &rec.Gates, fileBoundaries: &rec.Boundaries, fileEvents: &rec.Events} {
		if err := strict(content[name], v); err != nil {
			return nil, refuse("%s: %v", name, err)
		}
	}
	if rec.Run.ID != run {
		return nil, refuse("it holds run %q", rec.Run.ID)
	}
	for _, u := range units {
		u.Unit.Preimage = json.RawMessage(u.Preimage)
		if got := identity.DigestCanonical(u.Unit.Preimage); got != u.Identity {
			return nil, refuse("unit %s: its identity %s is not the digest of its preimage (%s)", u.UnitID, u.Identity, got)
		}
		rec.Units = append(rec.Units, u.Unit)
	}
	for _, h := range rec.Blobs() {
		if _, ok := in.blobs[h]; !ok {
			return nil, refuse("blob %s is named but not in its tree", h)
		}
	}
	in.rec = rec
	return in, nil
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

// catBatch reads the objects ids with one `git cat-file --batch`, handing
// each one's content to fn as a stream.
func catBatch(ctx context.Context, dir string, ids []string, fn func(i int, r io.Reader) error) error {
	if len(ids) == 0 {
		return nil
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, _, err := gitcmd.Run(ctx, gitcmd.Options{Dir: dir, Stdin: strings.NewReader(strings.Join(ids, "\n") + "\n"), Stdout: pw}, "cat-file", "--batch")
		pw.CloseWithError(err)
		done <- err
	}()
	br := bufio.NewReaderSize(pr, 64<<10)
	var ferr error
	for i := range ids {
		header, err := br.ReadString('\n')
		if err != nil {
			ferr = fmt.Errorf("reading object %s: %w", ids[i], err)
			break
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			ferr = fmt.Errorf("object %s: %s", ids[i], strings.TrimSpace(header))
			break
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			ferr = fmt.Errorf("object %s: %s", ids[i], strings.TrimSpace(header))
			break
		}
		lr := io.LimitReader(br, size)
		if err := fn(i, lr); err != nil {
			ferr = err
			break
		}
		if _, err := io.Copy(io.Discard, lr); err != nil {
			ferr = err
			break
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
