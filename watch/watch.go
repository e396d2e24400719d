// Package watch follows one plan file while a person edits it and hands
// each settled version, parsed, to a callback: `implloop watch` turns that
// into a live preview of what a resume would re-run.
//
// # What is watched
//
// The plan's directory, not the file. Editors save in many ways: in place,
// by writing a temporary file and renaming it over the plan, or by moving
// the plan aside and writing a new one. A watch on the file itself would be
// lost at the first rename; a watch on the directory sees every one of
// them as an event naming the plan. So the plan may be deleted and
// re-created, or replaced by a rename, and the watch carries on: a missing
// plan is an [Event] with Exists false, and the next save brings it back.
//
// The directory itself must stay: when it is removed or moved away, [Run]
// returns a *[DirError] naming it, since nothing the user does next can be
// seen from here.
//
// # Debounce
//
// One save is often several events (truncate, write, chmod, rename). Events
// naming the plan restart a quiet timer ([Watcher.Debounce], 150 ms by
// default); the file is read and parsed once the timer runs out. A version
// whose bytes (and existence) equal the last one handed over is dropped, so
// a touch or an editor's backup dance produces no new event.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/implloop/implloop/plan"
)

// DefaultDebounce is how long the plan must be quiet before it is read.
const DefaultDebounce = 150 * time.Millisecond

// Event is one settled version of the plan.
type Event struct {
	// Seq counts the events of one Run, from 1.
	Seq int
	// Path is the plan's name (Watcher.Name); diagnostics name it so.
	Path string
	// Exists is false while the plan is missing (deleted, or between the two
	// halves of a save); the other fields are then empty.
	Exists bool
	// Src is the plan's bytes.
	Src []byte
	// SHA256 is the hex sha256 of Src.
	SHA256 string
	// Plan and Diagnostics are plan.Parse's answer for Src. Plan is nil when
	// the file could not be read.
	Plan        *plan.Plan
	Diagnostics []plan.Diagnostic
	// Err is set when the plan exists but could not be read (a directory,
	// permissions, over plan.MaxSize); Diagnostics then hold it too.
	Err error
}

// HasErrors reports whether the version has lint errors (or could not be
// read).
func (e Event) HasErrors() bool {
	return e.Err != nil || plan.HasErrors(e.Diagnostics)
}

// DirError says the plan's directory was removed or moved away.
type DirError struct {
	Dir string
	Err error // what was seen: the event or the stat error
}

func (e *DirError) Error() string {
	return fmt.Sprintf("watch: the plan's directory %s was moved or removed (%v)", e.Dir, e.Err)
}

func (e *DirError) Unwrap() error { return e.Err }

// Watcher follows one plan file.
type Watcher struct {
	// Debounce is the quiet time before a changed plan is read
	// (0: DefaultDebounce).
	Debounce time.Duration
	// Name is how events and diagnostics name the plan (default: the path
	// given to New).
	Name string

	path string // absolute
	dir  string
	base string
}

// New returns a Watcher of the plan at path. The plan may be missing; its
// directory must exist.
func New(path string) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	w := &Watcher{Name: path, path: abs, dir: filepath.Dir(abs), base: filepath.Base(abs)}
	fi, err := os.Stat(w.dir)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("watch %s: %s is not a directory", path, w.dir)
	}
	return w, nil
}

// Run hands the plan as it is now to onChange, then every settled version
// after it, until ctx is done (Run returns nil), onChange returns an error
// (Run returns it), or the directory goes away (a *DirError). onChange is
// called from Run's goroutine, one event at a time.
func (w *Watcher) Run(ctx context.Context, onChange func(Event) error) error {
	debounce := w.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	dirInfo, err := os.Stat(w.dir)
	if err != nil {
		return &DirError{Dir: w.dir, Err: err}
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.dir, err)
	}
	defer fw.Close()
	if err := fw.Add(w.dir); err != nil {
		return fmt.Errorf("watch %s: %w", w.dir, err)
	}

	e := &emitter{w: w, dirInfo: dirInfo, onChange: onChange}
	if err := e.emit(); err != nil {
		return err
	}

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return fmt.Errorf("watch %s: the watcher closed", w.dir)
			}
			name := filepath.Clean(ev.Name)
			switch {
			case name == w.dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
				return &DirError{Dir: w.dir, Err: fmt.Errorf("%s", ev.Op)}
			case filepath.Base(name) == w.base && filepath.Dir(name) == w.dir:
				timer.Reset(debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return fmt.Errorf("watch %s: the watcher closed", w.dir)
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: read the plan again to be sure.
				timer.Reset(debounce)
				continue
			}
			return fmt.Errorf("watch %s: %w", w.dir, err)
		case <-timer.C:
			if ctx.Err() != nil {
				return nil
			}
			if err := e.emit(); err != nil {
				return err
			}
		}
	}
}

// emitter hands the plan to onChange each time it reads differently,
// numbering the events.
type emitter struct {
	w        *Watcher
	dirInfo  os.FileInfo // the directory watched, as Run found it
	onChange func(Event) error
	seq      int
	last     *Event
}

// emit reads the plan and hands it on, unless it reads as it did last time.
func (e *emitter) emit() error {
	// The directory is checked before every read: a directory moved
	// away and replaced by another of the same name is gone too (the
	// watch follows the old one).
	w := e.w
	fi, err := os.Stat(w.dir)
	if err != nil {
		return &DirError{Dir: w.dir, Err: err}
	}
	if !os.SameFile(fi, e.dirInfo) {
		return &DirError{Dir: w.dir, Err: errors.New("replaced by another directory")}
	}
	ev := w.read()
	if e.last != nil && same(*e.last, ev) {
		return nil
	}
	e.seq++
	ev.Seq = e.seq
	e.last = &ev
	return e.onChange(ev)
}

// read reads and parses the plan now.
func (w *Watcher) read() Event {
	ev := Event{Path: w.Name}
	f, err := os.Open(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return ev
	}
	ev.Exists = true
	if err == nil {
		defer f.Close()
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && fi.IsDir() {
			err = errors.New("is a directory")
		}
		if err == nil {
			ev.Src, err = io.ReadAll(io.LimitReader(f, plan.MaxSize+1))
		}
	}
	if err != nil {
		ev.Err = fmt.Errorf("read %s: %w", w.Name, err)
		ev.Src = nil
		ev.Diagnostics = []plan.Diagnostic{{Path: w.Name, Severity: plan.SeverityError, Message: ev.Err.Error()}}
		return ev
	}
	ev.Plan, ev.Diagnostics = plan.Parse(w.Name, ev.Src)
	ev.SHA256 = ev.Plan.SHA256
	return ev
}

func same(a, b Event) bool {
	if a.Exists != b.Exists || a.SHA256 != b.SHA256 {
		return false
	}
	if (a.Err == nil) != (b.Err == nil) {
		return false
	}
	return a.Err == nil || a.Err.Error() == b.Err.Error()
}
