package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/implloop/implloop/internal/procgroup"
)

// Notifications: --notify CMD (or notify: in the plan's front matter) is
// run with sh -c in the repository root, the event as one JSON object
// (and a newline) on its stdin, at the events a person away from the
// terminal wants to hear of: the run's end (run_finished), a blocked task
// (blocked), a wait for a limit beginning (wait), and a run stopped by a
// cap or a limit that outlasts --max-wait (stopped). IMPLLOOP_RUN_ID and
// IMPLLOOP_EVENT are in its environment. It gets notifyTimeout; a
// notification that fails or hangs is a warning, never the run's
// failure. docs/events.md has the shape and one-liners for ntfy, a
// Slack webhook and a desktop notification.

// notifyTimeout bounds one notification (its process group is killed).
const notifyTimeout = 30 * time.Second

// notifies reports whether an event of type typ is notified.
func notifies(typ string) bool {
	switch typ {
	case EvRunFinished, EvBlocked, EvWait, EvStopped:
		return true
	}
	return false
}

// notify runs --notify for ev, if it is an event notified.
func (e *engine) notify(ev Event) {
	if e.s.Notify == "" || e.o.DryRun || !notifies(ev.Type) {
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	root, cmd, runID := e.o.RepoRoot, e.s.Notify, e.runID
	send := func() error {
		err := runNotify(root, cmd, append(b, '\n'), map[string]string{"IMPLLOOP_RUN_ID": runID, "IMPLLOOP_EVENT": ev.Type})
		if err != nil {
			return fmt.Errorf("--notify %q (%s): %w", cmd, ev.Type, err)
		}
		return nil
	}
	if e.o.Notify != nil {
		e.o.Notify(ev, send)
		return
	}
	if err := send(); err != nil {
		w := Event{Type: EvWarning, Message: err.Error()}
		w.Time, w.RunID = e.now().UTC(), e.runID
		if e.j != nil && e.runID != "" {
			_, _ = e.j.AppendEvent(e.runID, w.Type, w)
		}
		e.obs.Event(w)
	}
}

// runNotify runs cmd with sh -c in dir, stdin on its stdin, env added.
func runNotify(dir, cmd string, stdin []byte, env map[string]string) error {
	runtime.LockOSThread() // the parent-death signal is the starting thread's (procgroup)
	defer runtime.UnlockOSThread()
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	c := exec.Command("sh", "-c", cmd)
	c.Dir = dir
	c.Env = os.Environ()
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	c.SysProcAttr = procgroup.Attr()
	c.Stdin = bytes.NewReader(stdin)
	errb := &tailBuffer{max: 2048}
	c.Stderr = errb
	c.WaitDelay = time.Second
	if err := c.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			procgroup.Terminate(c.Process.Pid, done, time.Second)
		case <-done:
		}
	}()
	err := c.Wait()
	close(done)
	procgroup.Kill(c.Process.Pid)
	if ctx.Err() != nil {
		return fmt.Errorf("killed after %s", notifyTimeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg := fmt.Sprintf("exit status %d", ee.ExitCode())
		if s := strings.TrimSpace(lastLine(string(errb.buf))); s != "" {
			msg += ": " + s
		}
		return errors.New(msg)
	}
	return err
}
