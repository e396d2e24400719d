package main

import (
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
