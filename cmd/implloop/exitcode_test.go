package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/implloop/implloop/report"
)

// The journal records each run's exit code from report.Verdict.ExitCode;
// the process exits with verdictExit. They must never disagree.
func TestVerdictExitCodesAgree(t *testing.T) {
	for v, want := range map[report.Verdict]int{
		report.Done: exitDone, report.Partial: exitPartial, report.Blocked: exitBlocked,
		report.Interrupted: exitInterrupted, report.Incomplete: exitError,
	} {
		if got := v.ExitCode(); got != want {
			t.Errorf("report.%s.ExitCode() = %d, want %d", v, got, want)
		}
		if got := verdictExit(string(v)); got != want {
			t.Errorf("verdictExit(%s) = %d, want %d", v, got, want)
		}
	}
}

// A cancelled context wrapped by a command's message still exits 130, and
// so does whatever failed after a signal; a usage error or a decided exit
// code stays what it is.
func TestInterruptedExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{errorf("", "status: %w", context.Canceled), exitInterrupted},
		{errorf("", "read the staged %s: %w", "plan.md", fmt.Errorf("git cat-file: %w: ", context.Canceled)), exitInterrupted},
		{interrupted(errors.New("git diff: signal: killed")), exitInterrupted},
		{interrupted(usagef("", "bad flag")), exitUsage},
		{interrupted(exitWith(exitPartial)), exitPartial},
		{errorf("", "status: %v", errors.New("plain")), exitError},
	} {
		if got := exitCodeFor(tt.err, io.Discard); got != tt.want {
			t.Errorf("%v: exit %d, want %d", tt.err, got, tt.want)
		}
	}
}
