//go:build unix

package gitobj

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReviewBlobFilesFIFO: a path that is a FIFO when BlobFiles opens it
// (boundary lstats kept files first; a process left behind can swap one
// in) must not hang the caller beyond its context: git's hash-object
// blocks too, but its process ends with the context; an open in process
// did not.
func TestReviewBlobFilesFIFO(t *testing.T) {
	_, rp := repo(t)
	w := Open(rp)
	mustInProcess(t, w)
	fifo := filepath.Join(rp.Dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	c, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := w.BlobFiles(c, []string{fifo})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO stored as a blob")
		}
	case <-time.After(time.Minute): // a hang, not a speed: it ends at once
		t.Fatal("BlobFiles still blocked on a FIFO after its context ended")
	}
}
