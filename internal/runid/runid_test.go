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

// The two rules, one inside the other: an id implloop writes is valid
// and ref-safe; a ref-safe id is not always one implloop writes.
func TestValidAndRefSafe(t *testing.T) {
	t.Parallel()
	for sec := int64(0); sec < 4e9; sec += 86400*97 + 3607 {
		id := Format(time.Unix(sec, 0), [2]byte{byte(sec), byte(sec >> 8)})
		if !Valid(id) || !RefSafe(id) {
			t.Errorf("%s: valid %v, ref-safe %v", id, Valid(id), RefSafe(id))
		}
	}
	for _, c := range []struct {
		id             string
		valid, refSafe bool
	}{
		{"r-20261130-054012-3f9a", true, true},
		{"r-20261130-054012-3F9A", false, true},
		{"mallory-run", false, true},
		{"r-1", false, true},
		{"", false, false},
		{".hidden", false, false},
		{"-opt", false, false},
		{"a..b", false, false},
		{"run.lock", false, false},
		{"run.", false, false},
		{"a/b", false, false},
		{"a b", false, false},
		{"r-20261130-054012-3f9a\n", false, false},
	} {
		if Valid(c.id) != c.valid || RefSafe(c.id) != c.refSafe {
			t.Errorf("%q: valid %v ref-safe %v, want %v %v", c.id, Valid(c.id), RefSafe(c.id), c.valid, c.refSafe)
		}
	}
}
