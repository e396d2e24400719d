package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/implloop/implloop/report"
)

// Exit codes, decided here and nowhere else (every command's help renders
// exitCodeTable under EXIT STATUS). A
// verdict's code is report.Verdict.ExitCode, the one the journal records
// with the run; the others are the process's own.
var (
	exitDone        = report.Done.ExitCode()        // 0: every task in range done, or a command succeeded
	exitPartial     = report.Partial.ExitCode()     // 3: some tasks done, at least one not
	exitBlocked     = report.Blocked.ExitCode()     // 4: no task done
	exitInterrupted = report.Interrupted.ExitCode() // 130: SIGINT/SIGTERM
)

const (
	exitError = 1 // bad input, infrastructure failure, lint errors
	exitUsage = 2 // bad flags or arguments
)

// exitCodeTable is rendered into help texts so that the table users read is
// the one the program uses.
var exitCodeTable = []struct {
	code    int
	meaning string
}{
	{exitDone, "DONE: every task in range is done (or the command succeeded)"},
	{exitError, "error: bad input or an infrastructure failure"},
	{exitUsage, "usage: bad flags or arguments"},
	{exitPartial, "PARTIAL: some tasks done, at least one blocked or pending"},
	{exitBlocked, "BLOCKED: no task done"},
	{exitInterrupted, "interrupted (SIGINT or SIGTERM)"},
}

// verdictExit maps a run's verdict to the process exit code.
func verdictExit(v string) int { return report.Verdict(v).ExitCode() }

// The exit codes a command can return, for its help: a run's verdicts, or
// the plain codes of a command that runs no tasks (with 130 when it does
// work a signal can cut short: git, the network, a long read).
var (
	runExits   = []int{exitDone, exitError, exitUsage, exitPartial, exitBlocked, exitInterrupted}
	plainExits = []int{exitDone, exitError, exitUsage}
	longExits  = []int{exitDone, exitError, exitUsage, exitInterrupted}
)

// exitStatusHelp is the EXIT STATUS section of a command's help: the codes
// it can return (none given: every code, as the root command's help lists).
// Where a command reaches no verdict, 0 reads "success".
func exitStatusHelp(codes ...int) string {
	if len(codes) == 0 {
		codes = runExits
	}
	verdicts := slices.Contains(codes, exitPartial)
	var b strings.Builder
	b.WriteString("EXIT STATUS\n")
	for _, e := range exitCodeTable {
		if !slices.Contains(codes, e.code) {
			continue
		}
		meaning := e.meaning
		if e.code == exitDone && !verdicts {
			meaning = "success"
		}
		fmt.Fprintf(&b, "  %-4d %s\n", e.code, meaning)
	}
	return b.String()
}

// userError is an error a person can act on: a message and a hint.
type userError struct {
	msg  string
	hint string
	err  error
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.err }

// errorf builds a userError with a hint ("" for none).
func errorf(hint, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &userError{msg: err.Error(), hint: hint, err: errors.Unwrap(err)}
}

// usageError marks bad flags or arguments (exit 2).
type usageError struct {
	msg  string
	hint string
}

func (e *usageError) Error() string { return e.msg }

func usagef(hint, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// exitCodeError carries an exit code decided by a command's outcome (a verdict,
// lint failures) after the command has already printed what it had to say.
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitWith returns an error that makes run exit with code without printing.
func exitWith(code int) error {
	if code == exitDone {
		return nil
	}
	return &exitCodeError{code: code}
}

// interruptedError is an error that came after SIGINT or SIGTERM: the
// command failed because it was stopped.
type interruptedError struct{ err error }

func (e *interruptedError) Error() string        { return e.err.Error() }
func (e *interruptedError) Unwrap() error        { return e.err }
func (e *interruptedError) Is(target error) bool { return target == context.Canceled }

// interrupted marks err as the outcome of a signal (exit 130), unless it
// already carries its own exit code or is a usage error.
func interrupted(err error) error {
	var ec *exitCodeError
	var ue *usageError
	if errors.As(err, &ec) || errors.As(err, &ue) {
		return err
	}
	return &interruptedError{err: err}
}

// exitCodeFor decides the exit code of an error and prints it to stderr in
// the `implloop: error: ...` / `implloop: hint: ...` form.
func exitCodeFor(err error, stderr io.Writer) int {
	if err == nil {
		return exitDone
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		return ec.code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "implloop: error: %s\n", ue.msg)
		if ue.hint != "" {
			fmt.Fprintf(stderr, "implloop: hint: %s\n", ue.hint)
		}
		return exitUsage
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "implloop: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "implloop: error: %s\n", err)
	var he *userError
	if errors.As(err, &he) && he.hint != "" {
		fmt.Fprintf(stderr, "implloop: hint: %s\n", he.hint)
	}
	return exitError
}
