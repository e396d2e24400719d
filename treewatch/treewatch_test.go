package treewatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, root string, o Options) *Watcher {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("inotify only")
	}
	o.CookieDir = filepath.Join(t.TempDir(), "cookies")
	w, err := Start(root, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestSync: the first Sync is incomplete (the watch began in its
// interval); then each Sync lists what changed since the one before:
// files written, removed and chmodded, a directory made with files in it,
// a directory removed; .git is not watched; a nested repository is listed
// on every Sync.
func TestSync(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "a")
	write(t, root, "d/e/b.txt", "b")
	write(t, root, ".git/HEAD", "ref: refs/heads/main\n")
	write(t, root, "sub/.git", "gitdir: ../.git/modules/sub\n")
	w := start(t, root, Options{})
	ctx := context.Background()
	if c := w.Sync(ctx); c.Complete || c.Reason == "" {
		t.Fatalf("first sync %+v, want incomplete", c)
	}
	if c := w.Sync(ctx); !c.Complete || len(c.Paths) != 0 || !reflect.DeepEqual(c.Nested, []string{"sub"}) {
		t.Fatalf("quiet sync %+v", c)
	}
	write(t, root, "a.txt", "a2")
	write(t, root, ".git/index", "x")
	os.Chmod(filepath.Join(root, "d/e/b.txt"), 0o755)
	os.MkdirAll(filepath.Join(root, "n/m"), 0o755)
	write(t, root, "n/m/c.txt", "c")
	c := w.Sync(ctx)
	if !c.Complete {
		t.Fatalf("sync %+v", c)
	}
	want := map[string]bool{"a.txt": true, "d/e/b.txt": true, "n": true}
	for _, p := range c.Paths {
		if p == ".git/index" || p == ".git" {
			t.Errorf("reported %q", p)
		}
		delete(want, p)
	}
	if len(want) > 0 {
		t.Errorf("not reported: %v (got %q)", want, c.Paths)
	}
	// n/m was watched as n was seen: a write there now is seen.
	write(t, root, "n/m/c.txt", "c2")
	if c := w.Sync(ctx); !c.Complete || !contains(c.Paths, "n/m/c.txt") {
		t.Fatalf("sync %+v, want n/m/c.txt", c)
	}
	os.RemoveAll(filepath.Join(root, "d"))
	if c := w.Sync(ctx); !c.Complete || !contains(c.Paths, "d") {
		t.Fatalf("sync %+v, want d", c)
	}
	if st := w.Stats(); st.Dirs != 4 { // root, n, n/m, sub
		t.Errorf("watching %d directories, want 4", st.Dirs)
	}
}

// TestSyncDirectoryMoved: moving a watched directory makes the interval
// incomplete and starts the watch over, after which writes in the moved
// directory are seen under its new name.
func TestSyncDirectoryMoved(t *testing.T) {
	root := t.TempDir()
	write(t, root, "d/e/b.txt", "b")
	w := start(t, root, Options{})
	ctx := context.Background()
	w.Sync(ctx)
	if err := os.Rename(filepath.Join(root, "d"), filepath.Join(root, "x")); err != nil {
		t.Fatal(err)
	}
	if c := w.Sync(ctx); c.Complete {
		t.Fatalf("sync after a move %+v, want incomplete", c)
	}
	write(t, root, "x/e/b.txt", "b2")
	if c := w.Sync(ctx); !c.Complete || !reflect.DeepEqual(c.Paths, []string{"x/e/b.txt"}) {
		t.Fatalf("sync %+v, want x/e/b.txt", c)
	}
}

// TestSyncLimitAndSkip: past MaxDirs every Sync is incomplete; a skipped
// directory is not watched and its paths are not reported.
func TestSyncLimitAndSkip(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		write(t, root, d+"/f", "x")
	}
	w := start(t, root, Options{MaxDirs: 2})
	ctx := context.Background()
	w.Sync(ctx)
	if c := w.Sync(ctx); c.Complete || w.Stats().Broken == "" {
		t.Fatalf("sync %+v, want incomplete past the limit", c)
	}

	w2 := start(t, root, Options{Skip: []string{"b"}})
	w2.Sync(ctx)
	write(t, root, "b/f", "y")
	write(t, root, "a/f", "y")
	if c := w2.Sync(ctx); !c.Complete || !reflect.DeepEqual(c.Paths, []string{"a/f"}) {
		t.Fatalf("sync %+v, want a/f only", c)
	}
	w2.Skip([]string{"a"})
	write(t, root, "a/f", "z")
	if c := w2.Sync(ctx); !c.Complete || len(c.Paths) != 0 {
		t.Fatalf("sync %+v, want nothing", c)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSyncOverflow: when the kernel's event queue overflows (the reader
// held up, more changes than fs.inotify.max_queued_events), the interval
// is incomplete, at once (the Sync's own cookie may be among the events
// dropped), and the next one is whole again.
func TestSyncOverflow(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip("no inotify queue size:", err)
	}
	var queue int
	if _, err := fmt.Sscan(string(b), &queue); err != nil || queue > 100000 {
		t.Skipf("queue of %q events: too many to fill here", b)
	}
	root := t.TempDir()
	write(t, root, "d/a.txt", "a")
	// Time enough to read every event queued, however loaded the machine
	// (a Sync that gives up is incomplete too, for another reason).
	w := start(t, root, Options{SyncTimeout: 2 * time.Minute})
	ctx := context.Background()
	w.Sync(ctx)
	// Hold the reader up: events wait in fsnotify's buffer, then in the
	// kernel's queue, which overflows.
	w.mu.Lock()
	for i := 0; i < queue+4096+2000; i++ {
		if err := os.WriteFile(filepath.Join(root, "d", fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
			w.mu.Unlock()
			t.Fatal(err)
		}
	}
	w.mu.Unlock()
	if c := w.Sync(ctx); c.Complete || !strings.Contains(c.Reason, "overflow") {
		t.Fatalf("sync after an overflow %+v, want incomplete", c)
	}
	// The events still queued when it returned come with the next
	// interval (more paths than changed in it: harmless, each is read).
	write(t, root, "d/a.txt", "a2")
	if c := w.Sync(ctx); !c.Complete || !contains(c.Paths, "d/a.txt") {
		t.Fatalf("sync complete %v (%s), %d paths, want d/a.txt among them", c.Complete, c.Reason, len(c.Paths))
	}
}
