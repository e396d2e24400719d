package runid

import (
	"regexp"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 5, 40, 12, 0, time.FixedZone("x", 3600))
	if got := Format(at, [2]byte{0x3f, 0x9a}); got != "r-20261130-044012-3f9a" {
		t.Errorf("Format = %s, want the UTC time and the bytes in hex", got)
	}
	re := regexp.MustCompile(`^` + Pattern + `$`)
	a, b := New(at), New(at.Add(time.Second))
	if !re.MatchString(a) || !re.MatchString(b) || !(b > a) {
		t.Errorf("New: %s, %s: want ids of the pattern that sort by start time", a, b)
	}
}
