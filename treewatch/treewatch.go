// Package treewatch keeps an fsnotify watch on a git work tree while a run
// holds its lock, so that a boundary can look at the paths that changed
// instead of the whole tree.
//
// # What is watched
//
// Every directory of the work tree, one inotify watch each (fsnotify has
// no recursive watch on Linux), but the .git directory, the directories a
// caller skips (wholly ignored ones, [Watcher.Skip]) and what is under
// them. A directory created later is watched as its Create event is seen,
// then listed, so nothing made in it before the watch was in place goes
// unseen; the boundary reads a changed directory whole anyway.
//
// # What a Sync answers
//
// [Watcher.Sync] returns the paths that changed since the previous Sync,
// and whether that list is complete. To know that every event of a change
// made before the call has arrived, it writes a cookie file into a
// directory of its own, watched by the same inotify instance, and waits
// for the cookie's event: the kernel queues the events of one instance in
// order. The list is not complete (and the caller takes a full scan) when
// the watch was not whole over the interval:
//
//   - the first Sync after Start (the watch began during the interval);
//   - the kernel's queue overflowed (events were dropped): the directories
//     are walked again, so that the next interval is whole;
//   - a watched directory was moved (inotify follows the directory, and
//     fsnotify's names for the directories below it go stale): the watch
//     is started over;
//   - a watch could not be added (the inotify watch limit,
//     fs.inotify.max_user_watches, or Options.MaxDirs): from then on every
//     Sync is incomplete;
//   - the cookie's event did not arrive in time, or fsnotify reported an
//     error.
//
// Paths are relative to the root, slash-separated. A changed path may be a
// file, a directory (read it whole) or a path that no longer exists.
// Nested repositories (a directory holding a .git) are listed on every
// Sync ([Changes.Nested]): the commit checked out in one can move without
// any event in the work tree.
//
// Only Linux's inotify is used: elsewhere Start fails, and every boundary
// looks at the whole tree.
package treewatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options configure a Watcher.
type Options struct {
	// CookieDir is a directory outside the work tree where Sync writes
	// its cookies (made if missing; its cookies are removed). Required.
	CookieDir string
	// MaxDirs caps the directories watched (0: only the kernel's limit).
	// Past it every Sync is incomplete.
	MaxDirs int
	// Skip are directories (relative) not to watch, as Watcher.Skip.
	Skip []string
	// SyncTimeout is how long Sync waits for its cookie (default 5 s).
	SyncTimeout time.Duration
}

// Changes is what changed since the previous Sync.
type Changes struct {
	// Complete: every change since the previous Sync is in Paths. When
	// false, Paths means nothing: take a full scan.
	Complete bool
	// Reason says why the list is not complete.
	Reason string
	// Paths changed (files, directories, or paths now gone), sorted.
	Paths []string
	// Nested are the directories holding a repository, sorted.
	Nested []string
	// Unwatched are the directories skipped (Options.Skip, Watcher.Skip):
	// a change under one is not seen, sorted.
	Unwatched []string
}

// Stats describe the watch.
type Stats struct {
	Dirs    int           // directories watched
	Startup time.Duration // how long Start took to watch them
	Broken  string        // why every Sync is incomplete ("" while whole)
}

// Watcher watches one work tree.
type Watcher struct {
	root    string
	o       Options
	timeout time.Duration

	mu       sync.Mutex
	fs       *fsnotify.Watcher
	dirs     map[string]bool // watched directories (relative; the root is "")
	skip     map[string]bool
	nested   map[string]bool
	changed  map[string]struct{}
	lost     string // why the current interval is not whole
	broken   string // why no interval can be whole
	restart  bool   // a watched directory moved: start the watch over
	rewalk   bool   // events were dropped: walk the directories again
	cookies  map[string]chan struct{}
	cookieN  int
	startup  time.Duration
	closed   bool
	loopDone chan struct{}
}

// Start watches the work tree at root. It fails only when no watch can be
// made at all (no inotify, the root unreadable); a watch that could not
// take every directory starts, broken (its Syncs incomplete).
func Start(root string, o Options) (*Watcher, error) {
	if runtime.GOOS != "linux" {
		// kqueue (macOS, BSD) opens every file of a watched directory,
		// and its events were not proven against full scans here.
		return nil, errors.New("treewatch: only inotify (Linux) is supported")
	}
	if o.CookieDir == "" {
		return nil, errors.New("treewatch: no cookie directory")
	}
	if err := os.MkdirAll(o.CookieDir, 0o755); err != nil {
		return nil, fmt.Errorf("treewatch: %w", err)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("treewatch: %w", err)
	}
	if o.CookieDir, err = filepath.Abs(o.CookieDir); err != nil {
		return nil, fmt.Errorf("treewatch: %w", err)
	}
	w := &Watcher{root: root, o: o, timeout: o.SyncTimeout, skip: map[string]bool{}}
	if w.timeout == 0 {
		w.timeout = 5 * time.Second
	}
	for _, s := range o.Skip {
		w.skip[s] = true
	}
	t0 := time.Now()
	w.mu.Lock()
	err = w.begin("the watch started")
	w.startup = time.Since(t0)
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return w, nil
}

// begin makes a new fsnotify watcher, watches the cookie directory and
// every directory of the tree, and starts reading its events; the interval
// is lost for why. w.mu is held.
func (w *Watcher) begin(why string) error {
	f, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return fmt.Errorf("treewatch: %w", err)
	}
	if err := f.Add(w.o.CookieDir); err != nil {
		f.Close()
		return fmt.Errorf("treewatch: watching %s: %w", w.o.CookieDir, err)
	}
	w.fs = f
	w.dirs = map[string]bool{}
	w.nested = map[string]bool{}
	w.changed = map[string]struct{}{}
	w.lost, w.broken, w.restart, w.rewalk = why, "", false, false
	if w.cookies == nil {
		w.cookies = map[string]chan struct{}{}
	}
	w.addTree("")
	done := make(chan struct{})
	w.loopDone = done
	go w.loop(f, done)
	return nil
}

// addTree watches directory rel and every directory under it (w.mu held).
// The watch is added before the directory is listed: a directory made in
// it meanwhile is either listed or seen as an event.
func (w *Watcher) addTree(rel string) {
	if w.broken != "" || w.skipped(rel) || rel == ".git" || strings.HasSuffix(rel, "/.git") {
		return
	}
	full := w.abs(rel)
	if !w.dirs[rel] {
		if w.o.MaxDirs > 0 && len(w.dirs) >= w.o.MaxDirs {
			w.broken = fmt.Sprintf("more than %d directories: not watched", w.o.MaxDirs)
			return
		}
		if err := w.fs.Add(full); err != nil {
			if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
				return // gone already: its parent's event says so
			}
			w.broken = "a directory could not be watched (" + err.Error() + "; see fs.inotify.max_user_watches)"
			return
		}
		w.dirs[rel] = true
	}
	entries, err := os.ReadDir(full)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			if rel != "" {
				w.nested[rel] = true
			}
			continue
		}
		if e.IsDir() {
			w.addTree(join(rel, e.Name()))
		}
	}
}

func isNotDir(err error) bool { return strings.Contains(err.Error(), "not a directory") }

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func (w *Watcher) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

// rel is name relative to the root ("", false when outside it).
func (w *Watcher) rel(name string) (string, bool) {
	r, err := filepath.Rel(w.root, name)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

// loop reads f's events until it is closed.
func (w *Watcher) loop(f *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	for {
		select {
		case ev, ok := <-f.Events:
			if !ok {
				return
			}
			w.event(f, ev)
		case err, ok := <-f.Errors:
			if !ok {
				return
			}
			w.mu.Lock()
			if w.fs == f {
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					w.lost, w.rewalk = "the kernel's event queue overflowed", true
					// A cookie written meanwhile may be among the events
					// dropped: its Sync is incomplete anyway, and need
					// not wait for it.
					for name, ch := range w.cookies {
						close(ch)
						delete(w.cookies, name)
					}
				} else {
					w.lost = "the watch reported an error: " + err.Error()
				}
			}
			w.mu.Unlock()
		}
	}
}

// event records one event.
func (w *Watcher) event(f *fsnotify.Watcher, ev fsnotify.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fs != f {
		return // an old watch, started over
	}
	if filepath.Dir(ev.Name) == w.o.CookieDir {
		if ch, ok := w.cookies[filepath.Base(ev.Name)]; ok && ev.Has(fsnotify.Create) {
			delete(w.cookies, filepath.Base(ev.Name))
			close(ch)
		}
		return
	}
	rel, ok := w.rel(ev.Name)
	if !ok {
		return
	}
	if rel == "" {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			w.broken = "the work tree's root was moved or removed"
		}
		return
	}
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return
	}
	if base := filepath.Base(rel); base == ".git" {
		// A repository made or removed inside the tree: its directory
		// changes from files to a gitlink, or back.
		parent := parentOf(rel)
		w.changed[parent] = struct{}{}
		if ev.Has(fsnotify.Create) {
			w.nested[parent] = true
		}
		return
	}
	w.changed[rel] = struct{}{}
	switch {
	case ev.Has(fsnotify.Create):
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			w.addTree(rel)
		}
	case ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove):
		// A watched directory moved or removed: its watches below go
		// stale (moved) or away (removed).
		moved := ev.Has(fsnotify.Rename)
		for d := range w.dirs {
			if d == rel || strings.HasPrefix(d, rel+"/") {
				delete(w.dirs, d)
				if moved {
					w.restart = true
					w.lost = "a watched directory was moved (" + rel + ")"
				}
			}
		}
		for d := range w.nested {
			if d == rel || strings.HasPrefix(d, rel+"/") {
				delete(w.nested, d)
			}
		}
	}
}

func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// Skip stops watching dirs (relative to the root) and what is under them:
// wholly ignored directories a boundary lists. A path inside one is not
// reported again.
func (w *Watcher) Skip(dirs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range dirs {
		s = strings.TrimSuffix(s, "/")
		if s == "" {
			continue
		}
		w.skip[s] = true
		for d := range w.dirs {
			if d == s || strings.HasPrefix(d, s+"/") {
				_ = w.fs.Remove(w.abs(d))
				delete(w.dirs, d)
			}
		}
	}
}

// Unskip watches dirs again (skipped before): a file of the snapshot is
// under one. The current interval is not whole (a change made there
// before the watch was added went unseen).
func (w *Watcher) Unskip(dirs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range dirs {
		s = strings.TrimSuffix(s, "/")
		if !w.skip[s] {
			continue
		}
		delete(w.skip, s)
		w.lost = "a skipped directory is watched again (" + s + ")"
		w.addTree(s)
	}
}

// Sync returns what changed since the previous Sync (see the package
// doc), once every event of a change made before the call has arrived.
func (w *Watcher) Sync(ctx context.Context) Changes {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return Changes{Reason: "the watch is closed"}
	}
	w.cookieN++
	name := fmt.Sprintf("cookie-%d-%d", os.Getpid(), w.cookieN)
	ch := make(chan struct{})
	w.cookies[name] = ch
	w.mu.Unlock()

	full := filepath.Join(w.o.CookieDir, name)
	werr := os.WriteFile(full, nil, 0o644)
	arrived := false
	if werr == nil {
		t := time.NewTimer(w.timeout)
		select {
		case <-ch:
			arrived = true
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		os.Remove(full)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.cookies, name)
	out := Changes{Complete: true}
	switch {
	case werr != nil:
		out.Reason = "the cookie could not be written: " + werr.Error()
	case !arrived:
		out.Reason = "the watch did not answer in time"
	case w.broken != "":
		out.Reason = w.broken
	case w.lost != "":
		out.Reason = w.lost
	}
	if out.Reason != "" {
		out.Complete = false
	} else {
		out.Paths = make([]string, 0, len(w.changed))
		for p := range w.changed {
			if !w.skipped(p) {
				out.Paths = append(out.Paths, p)
			}
		}
		sort.Strings(out.Paths)
	}
	for d := range w.nested {
		out.Nested = append(out.Nested, d)
	}
	sort.Strings(out.Nested)
	for d := range w.skip {
		out.Unwatched = append(out.Unwatched, d)
	}
	sort.Strings(out.Unwatched)
	w.changed = map[string]struct{}{}
	w.lost = ""
	switch {
	case w.restart || !arrived:
		// Start over: the next interval begins with a whole watch.
		old, oldDone := w.fs, w.loopDone
		old.Close()
		w.mu.Unlock()
		<-oldDone
		w.mu.Lock()
		if err := w.begin(""); err != nil {
			w.broken = "the watch could not be started again: " + err.Error()
		}
	case w.rewalk:
		w.rewalk = false
		w.addTree("")
	}
	return out
}

// skipped reports whether p is in a skipped directory.
func (w *Watcher) skipped(p string) bool {
	for s := range w.skip {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// Stats describes the watch now.
func (w *Watcher) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Stats{Dirs: len(w.dirs), Startup: w.startup, Broken: w.broken}
}

// Close ends the watch.
func (w *Watcher) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	f, done := w.fs, w.loopDone
	w.mu.Unlock()
	err := f.Close()
	<-done
	return err
}
