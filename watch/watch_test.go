package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	planA = "# Plan\n\n### Task 1: One\n\nDo one.\n\n### Task 2: Two\n\nDo two.\n"
	planB = "# Plan\n\n### Task 1: One\n\nDo one, better.\n\n### Task 2: Two\n\nDo two.\n"
	// planBroken has no task: a lint error.
	planBroken = "# Plan\n\nJust prose.\n"
)

// run starts a Watcher of dir/plan.md and returns its events and its
// result. The watcher stops with the test.
func run(t *testing.T, dir string) (<-chan Event, <-chan error, context.CancelFunc) {
	t.Helper()
	return runWith(t, dir, 40*time.Millisecond)
}

// runWith is run with the given quiet time.
func runWith(t *testing.T, dir string, debounce time.Duration) (<-chan Event, <-chan error, context.CancelFunc) {
	t.Helper()
	w, err := New(filepath.Join(dir, "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	w.Debounce = debounce
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan Event, 64)
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- w.Run(ctx, func(e Event) error { events <- e; return nil })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(5 * time.Second):
			t.Error("watcher did not stop")
		}
	})
	return events, done, cancel
}

func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return Event{}
}

func none(t *testing.T, ch <-chan Event) {
	t.Helper()
	noneFor(t, ch, 300*time.Millisecond)
}

// noneFor is none, waiting d.
func noneFor(t *testing.T, ch <-chan Event, d time.Duration) {
	t.Helper()
	select {
	case e := <-ch:
		t.Fatalf("unexpected event %d: exists=%v %q", e.Seq, e.Exists, e.Src)
	case <-time.After(d):
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEditsRenamesDeletes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "plan.md")
	write(t, p, planA)
	events, _, _ := run(t, dir)

	e := next(t, events)
	if e.Seq != 1 || !e.Exists || string(e.Src) != planA || e.Plan == nil || len(e.Plan.Tasks) != 2 || e.HasErrors() {
		t.Fatalf("initial event: %+v", e)
	}

	// In place.
	write(t, p, planB)
	if e = next(t, events); e.Seq != 2 || string(e.Src) != planB {
		t.Fatalf("after an in-place write: seq %d %q", e.Seq, e.Src)
	}

	// A temp file renamed over the plan (most editors' atomic save).
	tmp := filepath.Join(dir, ".plan.md.swp")
	write(t, tmp, planA)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if e = next(t, events); string(e.Src) != planA {
		t.Fatalf("after a rename over: %q", e.Src)
	}

	// Deleted: a missing plan is an event, and the watch goes on.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if e = next(t, events); e.Exists || e.Src != nil || e.Plan != nil {
		t.Fatalf("after delete: %+v", e)
	}
	write(t, p, planBroken)
	e = next(t, events)
	if !e.Exists || !e.HasErrors() {
		t.Fatalf("after re-create with a broken plan: exists=%v errors=%v", e.Exists, e.HasErrors())
	}
	if !strings.Contains(e.Diagnostics[0].String(), "plan.md") {
		t.Errorf("diagnostic does not name the plan: %s", e.Diagnostics[0])
	}

	// Moved away and back (vim's backup dance) with the same bytes: nothing
	// new to show.
	if err := os.Rename(p, p+"~"); err != nil {
		t.Fatal(err)
	}
	write(t, p, planBroken)
	none(t, events)
}

func TestDebounceCoalescesAndIgnoresOtherFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "plan.md")
	// The quiet time is far longer than the burst takes (ten writes 1 ms
	// apart), so a busy machine that stalls the writer for a while still
	// writes them within one quiet time: the test is about coalescing, not
	// about how quick a machine is.
	events, _, _ := runWith(t, dir, time.Second)
	if e := next(t, events); e.Exists {
		t.Fatalf("a missing plan at start: %+v", e)
	}
	for i := range 10 {
		write(t, p, planA+strings.Repeat("\n", i))
		time.Sleep(time.Millisecond)
	}
	e := next(t, events)
	if e.Seq != 2 || string(e.Src) != planA+strings.Repeat("\n", 9) {
		t.Fatalf("ten quick writes: seq %d, %d bytes", e.Seq, len(e.Src))
	}
	noneFor(t, events, 1500*time.Millisecond)

	// Other files in the directory, and rewriting the same bytes, are no
	// news.
	write(t, filepath.Join(dir, "notes.md"), "x")
	write(t, filepath.Join(dir, "plan.md.bak"), planB)
	write(t, p, planA+strings.Repeat("\n", 9))
	noneFor(t, events, 1500*time.Millisecond) // past the quiet time
}

func TestDirectoryRemovedOrMoved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		do   func(dir string) error
	}{
		{"removed", os.RemoveAll},
		{"moved", func(dir string) error { return os.Rename(dir, dir+".moved") }},
		{"replaced", func(dir string) error {
			if err := os.Rename(dir, dir+".old"); err != nil {
				return err
			}
			return os.Mkdir(dir, 0o755)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "plans")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "plan.md"), planA)
			events, done, _ := run(t, dir)
			next(t, events)
			if err := tc.do(dir); err != nil {
				t.Fatal(err)
			}
			// "replaced" only shows at the next read: touch the new plan.
			if tc.name == "replaced" {
				write(t, filepath.Join(dir, "plan.md"), planB)
			}
			select {
			case err := <-done:
				var de *DirError
				if !errors.As(err, &de) || de.Dir != dir {
					t.Fatalf("Run = %v, want a *DirError for %s", err, dir)
				}
				if !strings.Contains(err.Error(), "moved or removed") {
					t.Errorf("message: %v", err)
				}
			case e := <-events:
				t.Fatalf("event instead of an error: %+v", e)
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
		})
	}
}

func TestStopAndCallbackError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "plan.md"), planA)
	w, err := New(filepath.Join(dir, "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("enough")
	if err := w.Run(context.Background(), func(Event) error { return stop }); err != stop {
		t.Fatalf("Run = %v, want the callback's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx, func(Event) error { return nil }); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if _, err := New(filepath.Join(dir, "missing", "plan.md")); err == nil {
		t.Fatal("New in a missing directory: no error")
	}
}

func TestUnreadablePlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "plan.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	events, _, _ := run(t, dir)
	e := next(t, events)
	if !e.Exists || e.Err == nil || !e.HasErrors() || len(e.Diagnostics) != 1 {
		t.Fatalf("a directory named plan.md: %+v", e)
	}
}
