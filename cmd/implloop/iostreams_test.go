package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/implloop/implloop/loop"
)

// Which streams may carry escape codes, for each --color, NO_COLOR and
// terminal combination.
func TestColorModes(t *testing.T) {
	for _, c := range []struct {
		mode             colorMode
		noColor          string
		term             string
		outTerm, errTerm bool
		color, live      bool
	}{
		{mode: colorAuto, term: "dumb", outTerm: true, errTerm: true, color: true, live: false},
		{mode: colorAlways, term: "dumb", outTerm: true, errTerm: true, color: true, live: false},
		{mode: "", outTerm: true, errTerm: true, color: true, live: true},
		{mode: colorAuto, outTerm: true, errTerm: true, color: true, live: true},
		{mode: colorAuto, color: false, live: false},
		{mode: colorAuto, noColor: "1", outTerm: true, errTerm: true, color: false, live: false},
		{mode: colorNever, outTerm: true, errTerm: true, color: false, live: false},
		{mode: colorAlways, color: true, live: false}, // a pipe gets colors, never a spinner
		{mode: colorAlways, noColor: "1", outTerm: true, errTerm: true, color: true, live: true},
	} {
		t.Setenv("NO_COLOR", c.noColor)
		t.Setenv("TERM", c.term)
		io := &ioStreams{outIsTerm: c.outTerm, errIsTerm: c.errTerm, colorMode: c.mode}
		if got := io.color(); got != c.color {
			t.Errorf("%+v: color() = %v", c, got)
		}
		if got := io.liveErr(); got != c.live {
			t.Errorf("%+v: liveErr() = %v", c, got)
		}
		if got := io.liveOut(); got != c.live {
			t.Errorf("%+v: liveOut() = %v", c, got)
		}
	}
}

// The live status line is the only escape code progress writes: on a
// terminal stderr, and not with --color never or NO_COLOR.
func TestProgressEscapesOnlyWhenLive(t *testing.T) {
	for _, c := range []struct {
		mode    colorMode
		noColor string
		want    bool
	}{
		{colorAuto, "", true},
		{colorAuto, "1", false},
		{colorNever, "", false},
		{colorAlways, "1", true},
	} {
		t.Setenv("NO_COLOR", c.noColor)
		t.Setenv("TERM", "xterm")
		var errOut bytes.Buffer
		io := &ioStreams{Out: &bytes.Buffer{}, ErrOut: &errOut, errIsTerm: true, colorMode: c.mode}
		p := newProgress(io, false)
		p.Event(loop.Event{Type: loop.EvTaskStarted, Task: "1", Title: "one", Index: 1, Count: 1})
		p.Event(loop.Event{Type: loop.EvTaskFinished, Task: "1", Title: "one", Index: 1, Count: 1, Status: "done", Source: "live", Attempt: 1})
		p.Close()
		if got := strings.Contains(errOut.String(), "\x1b"); got != c.want {
			t.Errorf("--color %s, NO_COLOR=%q: escape codes %v, want %v:\n%q", c.mode, c.noColor, got, c.want, errOut.String())
		}
		if !strings.Contains(errOut.String(), "task 1 one: done") {
			t.Errorf("--color %s: no summary line:\n%q", c.mode, errOut.String())
		}
	}
}
