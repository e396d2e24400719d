// Package runid makes implloop's run ids: "r-" + the start time in UTC as
// YYYYMMDD-HHMMSS + "-" + four lowercase hex digits of randomness, for
// example r-20261130-054012-3f9a. The one place the format is written:
// the loop names its runs with New, the journal names a run created
// without an id with it, and identity's run-id normalization rule matches
// Pattern (identity.NewRunID, IsRunID).
package runid

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"time"
)

// Pattern matches a run id (unanchored).
const Pattern = `r-\d{8}-\d{6}-[0-9a-f]{4}`

// Format is the run id for a run started at t with two bytes of
// randomness (fixed bytes in tests and docs).
func Format(t time.Time, random [2]byte) string {
	return "r-" + t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(random[:])
}

// New is a fresh run id for a run started at t, its randomness from
// crypto/rand.
func New(t time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return Format(t, b)
}

var idRE = regexp.MustCompile(`^` + Pattern + `$`)

// Time is the start time (to the second, UTC) run id id was made for; ok
// false when id is not a run id of this format.
func Time(id string) (t time.Time, ok bool) {
	if !idRE.MatchString(id) {
		return time.Time{}, false
	}
	t, err := time.Parse("20060102-150405", id[2:17])
	return t, err == nil
}
