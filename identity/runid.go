package identity

import (
	"regexp"
	"time"

	"github.com/implloop/implloop/internal/runid"
)

// A run id names one implloop run: "r-" + the start time in UTC as
// YYYYMMDD-HHMMSS + "-" + four lowercase hex digits of randomness, for
// example r-20261130-054012-3f9a. Ids sort by start time, read well in a
// terminal and are safe as a directory name. Run ids are volatile: the
// run-id rule of the normalization table numbers them <RUN-1>, <RUN-2>, ...
// so a prompt that mentions its run still has one identity.
const runIDPattern = runid.Pattern

var (
	// RunIDRegexp matches exactly one whole run id.
	RunIDRegexp  = regexp.MustCompile(`^` + runIDPattern + `$`)
	runIDTokenRE = regexp.MustCompile(runIDPattern)
)

// NewRunID returns the run id for a run started at t, with two bytes of
// randomness (crypto/rand in the loop, fixed bytes in tests).
func NewRunID(t time.Time, random [2]byte) string { return runid.Format(t, random) }

// exampleRunTime is the start time of the run id shown in the docs.
var exampleRunTime = time.Date(2026, 11, 30, 5, 40, 12, 0, time.UTC)
