package travel

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/cache"
)

// ReviewTrees compares writeTrees with the records trees main wrote before
// it (oldWriteTree, one git mktree per tree), for run's records in j: the
// records as written (without transcripts, whole), in the other order,
// one at a time, and with a records that names no blob among them. It
// returns what differs ("" when nothing does) and the trees main writes
// (lite, full).
func ReviewTrees(ctx context.Context, j *cache.Journal, run string) (diff string, lite, full string, err error) {
	dir := j.Root()
	rec, err := j.Records(run)
	if err != nil {
		return "", "", "", err
	}
	noBlobs := *rec
	noBlobs.Units, noBlobs.Gates = nil, nil
	variants := map[string]*cache.Records{"lite": withoutTranscripts(rec), "full": rec, "noblobs": &noBlobs}
	tmp, err := os.MkdirTemp("", "implloop-review-")
	if err != nil {
		return "", "", "", err
	}
	defer os.RemoveAll(tmp)
	old := map[string]string{}
	for name, r := range variants {
		if old[name], err = oldWriteTree(ctx, dir, tmp, j, r, "old-"+name); err != nil {
			return "", "", "", err
		}
	}
	var b strings.Builder
	for _, order := range [][]string{{"lite", "full"}, {"full", "lite"}, {"lite"}, {"full"}, {"noblobs"}, {"noblobs", "full"}, {"lite", "noblobs", "full"}} {
		var recs []*cache.Records
		for _, n := range order {
			recs = append(recs, variants[n])
		}
		got, err := writeTrees(ctx, dir, j, recs...)
		if err != nil {
			return "", "", "", fmt.Errorf("%v: %w", order, err)
		}
		for k, n := range order {
			if got[k] != old[n] {
				fmt.Fprintf(&b, "%v: %s tree %s, main wrote %s\n", order, n, got[k], old[n])
			}
		}
	}
	return b.String(), old["lite"], old["full"], nil
}

// oldWriteTree is main's writeTree (before writeTrees), verbatim.
func oldWriteTree(ctx context.Context, dir, tmp string, j *cache.Journal, rec *cache.Records, name string) (string, error) {
	fs, err := files(rec)
	if err != nil {
		return "", err
	}
	stage := filepath.Join(tmp, name)
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return "", err
	}
	var names, paths []string
	for n, b := range fs {
		p := filepath.Join(stage, n)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", err
		}
		names, paths = append(names, n), append(paths, p)
	}
	blobs := rec.Blobs()
	for _, h := range blobs {
		p, err := j.Blobs().Path(h)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(p); err != nil {
			if p, err = stageBlob(j, h, stage); err != nil {
				return "", err
			}
		}
		paths = append(paths, p)
	}
	out, err := git(ctx, dir, []byte(strings.Join(paths, "\n")+"\n"), nil, "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return "", err
	}
	oids := strings.Split(out, "\n")
	if len(oids) != len(paths) {
		return "", fmt.Errorf("git hash-object wrote %d objects for %d files", len(oids), len(paths))
	}
	var root bytes.Buffer
	for i, n := range names {
		fmt.Fprintf(&root, "100644 blob %s\t%s\x00", oids[i], n)
	}
	if len(blobs) > 0 {
		var sub bytes.Buffer
		for i, h := range blobs {
			fmt.Fprintf(&sub, "100644 blob %s\t%s\x00", oids[len(names)+i], h)
		}
		t, err := git(ctx, dir, sub.Bytes(), nil, "mktree", "-z")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&root, "040000 tree %s\t%s\x00", t, blobDir)
	}
	return git(ctx, dir, root.Bytes(), nil, "mktree", "-z")
}
