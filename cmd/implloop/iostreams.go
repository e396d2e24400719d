package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// ioStreams holds where a command reads and writes: data to Out, progress and
// errors to ErrOut. Live status lines are drawn only when ErrOut is a
// terminal.
type ioStreams struct {
	In         io.Reader
	Out        io.Writer
	ErrOut     io.Writer
	errIsTerm  bool
	outIsTerm  bool
	inIsTerm   bool // In is a terminal a person answers questions at
	workingDir string
	// colorMode is --color: auto (the zero value), always or never.
	colorMode colorMode
}

func newIOStreams() *ioStreams {
	wd, _ := os.Getwd()
	return &ioStreams{
		In:         os.Stdin,
		Out:        os.Stdout,
		ErrOut:     os.Stderr,
		errIsTerm:  term.IsTerminal(int(os.Stderr.Fd())),
		outIsTerm:  term.IsTerminal(int(os.Stdout.Fd())),
		inIsTerm:   term.IsTerminal(int(os.Stdin.Fd())),
		workingDir: wd,
	}
}

// color reports whether data on Out may carry terminal colors: --color
// always; with auto, when Out is a terminal and NO_COLOR is not set.
func (io *ioStreams) color() bool {
	return io.escapes(io.outIsTerm, true)
}

// liveErr reports whether status lines on ErrOut may be redrawn in place.
func (io *ioStreams) liveErr() bool { return io.escapes(io.errIsTerm, false) && cursorMoves() }

// liveOut reports whether Out may be cleared and redrawn (watch's preview).
func (io *ioStreams) liveOut() bool { return io.escapes(io.outIsTerm, false) && cursorMoves() }

// cursorMoves reports whether the terminal understands cursor movement:
// not TERM=dumb (Emacs' shell buffers, some CI consoles), where every
// redraw would stay on the screen.
func cursorMoves() bool { return os.Getenv("TERM") != "dumb" }

// escapes decides whether a stream may carry escape codes. never and
// NO_COLOR (https://no-color.org) turn them all off; always turns colors on
// anywhere (a pager that reads them: less -R) and outranks NO_COLOR, as a
// flag outranks the environment; redrawing in place needs a terminal even
// then, since a file or a CI log would keep every frame of the spinner.
func (io *ioStreams) escapes(isTerm, colors bool) bool {
	switch io.colorMode {
	case colorNever:
		return false
	case colorAlways:
		return colors || isTerm
	}
	return isTerm && os.Getenv("NO_COLOR") == ""
}

// colorMode is the value of --color.
type colorMode string

const (
	colorAuto   colorMode = "auto"
	colorAlways colorMode = "always"
	colorNever  colorMode = "never"
)

func (c *colorMode) String() string {
	if *c == "" {
		return string(colorAuto)
	}
	return string(*c)
}

func (c *colorMode) Set(v string) error {
	switch m := colorMode(v); m {
	case colorAuto, colorAlways, colorNever:
		*c = m
		return nil
	}
	return &badValueError{msg: "want auto, always or never", hint: "--color takes auto (the default), always or never"}
}

func (c *colorMode) Type() string { return "when" }

// badValueError is a flag value a pflag.Value refused; hint says what the
// flag takes, and becomes the usage error's hint.
type badValueError struct{ msg, hint string }

func (e *badValueError) Error() string { return e.msg }
