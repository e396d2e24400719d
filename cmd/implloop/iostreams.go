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
	workingDir string
}

func newIOStreams() *ioStreams {
	wd, _ := os.Getwd()
	return &ioStreams{
		In:         os.Stdin,
		Out:        os.Stdout,
		ErrOut:     os.Stderr,
		errIsTerm:  term.IsTerminal(int(os.Stderr.Fd())),
		outIsTerm:  term.IsTerminal(int(os.Stdout.Fd())),
		workingDir: wd,
	}
}

// color reports whether data on Out may carry terminal colors: Out is a
// terminal and NO_COLOR is not set.
func (io *ioStreams) color() bool {
	return io.outIsTerm && os.Getenv("NO_COLOR") == ""
}
