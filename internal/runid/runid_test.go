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

func TestTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 5, 40, 12, 0, time.UTC)
	if got, ok := Time(Format(at, [2]byte{1, 2})); !ok || !got.Equal(at) {
		t.Errorf("Time(Format(%v)) = %v, %v", at, got, ok)
	}
	for _, bad := range []string{"", "r1", "r-20261130-054012", "r-20261330-054012-3f9a", "r-20261130-054012-3F9A", "xr-20261130-054012-3f9a"} {
		if _, ok := Time(bad); ok {
			t.Errorf("Time(%q) is ok", bad)
		}
	}
}
