// Package runid makes implloop's run ids: "r-" + the start time in UTC as
// YYYYMMDD-HHMMSS + "-" + four lowercase hex digits of randomness, for
// example r-20261130-054012-3f9a. The one place the format is written:
// the loop names its runs with New, the journal names a run created
// without an id with it, and identity's run-id normalization rule matches
// Pattern (identity.NewRunID).
//
// # Which ids are valid where
//
// Two rules, one inside the other. [Valid]: an id implloop writes, the
// only kind a run pulled from a remote may have (a pulled id is checked
// against its start time too). [RefSafe]: an id that may name a run in a
// ref (refs/implloop/runs/<id>, refs/implloop/records/<id>) and in a
// directory name; every valid id is ref-safe, and the refs of a run in
// the local journal are written under this looser rule (a journal may
// hold ids another tool, a test or an older implloop chose).
package runid

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
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

// Valid reports whether id is a run id implloop writes ([Format]'s form).
func Valid(id string) bool { return idRE.MatchString(id) }

var refSafeRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// RefSafe reports whether id may be one component of a ref name and a
// directory name: letters, digits, "_", "." and "-", not starting with
// "." or "-", with no "..", not ending in "." or ".lock".
func RefSafe(id string) bool {
	return refSafeRE.MatchString(id) && !strings.Contains(id, "..") && !strings.HasSuffix(id, ".lock") && !strings.HasSuffix(id, ".")
}
