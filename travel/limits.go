package travel

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/runid"
)

// Limits bound what a pull reads from a remote, whoever pushed it: each
// object's size is checked from git's header before a byte of it is read,
// so a record that would be too large is refused before it is decoded,
// and a pull stops at its cap instead of filling memory. Zero fields take
// the defaults.
type Limits struct {
	// Record caps one run's records: its commit, its trees and its JSON
	// files (rows), together.
	Record int64
	// Blob caps one blob (a prompt, an agent's output, a result, a gate's
	// output).
	Blob int64
	// Pull caps everything one pull reads: every run's records and blobs.
	Pull int64
}

// DefaultLimits are far above what a real team's runs come to (a run of
// a thousand tasks has records of a few megabytes) and far below what
// would hurt the machine that pulls.
var DefaultLimits = Limits{Record: 64 << 20, Blob: 64 << 20, Pull: 2 << 30}

func (l Limits) withDefaults() Limits {
	if l.Record <= 0 {
		l.Record = DefaultLimits.Record
	}
	if l.Blob <= 0 {
		l.Blob = DefaultLimits.Blob
	}
	if l.Pull <= 0 {
		l.Pull = DefaultLimits.Pull
	}
	return l
}

// LimitError is a pull refused because something it would read is larger
// than its cap. Nothing of the pull is imported.
type LimitError struct {
	Run    string
	Commit string
	What   string // "units.json", "blob 3f…", "the pull"
	Size   int64  // what it came to (at least)
	Limit  int64
	Flag   string // the pull flag that raises the cap
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("the records of run %s (commit %.12s) are refused: %s comes to %s, over the cap of %s (%s)",
		e.Run, e.Commit, e.What, FormatSize(e.Size), FormatSize(e.Limit), e.Flag)
}

// budget counts what a pull reads against its Limits: per run (only the
// reading goroutine counts those) and in all (the blob store's goroutine
// too).
type budget struct {
	l    Limits
	all  atomic.Int64
	runs map[string]int64
}

func newBudget(l Limits) *budget { return &budget{l: l.withDefaults(), runs: map[string]int64{}} }

// record takes size bytes of p's records (what names the part).
func (b *budget) record(p pending, what string, size int64) error {
	b.runs[p.run] += size
	if n := b.runs[p.run]; n > b.l.Record {
		return &LimitError{Run: p.run, Commit: p.commit, What: "its records (with " + what + ")", Size: n, Limit: b.l.Record, Flag: "--max-record-size"}
	}
	return b.pull(p, size)
}

// blob takes one blob of p's, named h.
func (b *budget) blob(p pending, h string, size int64) error {
	if size > b.l.Blob {
		return &LimitError{Run: p.run, Commit: p.commit, What: fmt.Sprintf("blob %.12s", h), Size: size, Limit: b.l.Blob, Flag: "--max-blob-size"}
	}
	return b.pull(p, size)
}

func (b *budget) pull(p pending, size int64) error {
	if n := b.all.Add(size); n > b.l.Pull {
		return &LimitError{Run: p.run, Commit: p.commit, What: "the pull", Size: n, Limit: b.l.Pull, Flag: "--max-pull-size"}
	}
	return nil
}

// clockSkew is how far in the future a pulled run may say it started or
// ended: a teammate's clock may be a little ahead of this one's.
const clockSkew = 10 * time.Minute

// checkDates refuses a run dated in the future (it would sort before
// every run made here), or whose start is not the time its id was made
// for, or that ended before it started.
func checkDates(r *cache.Run, now time.Time) string {
	at, ok := runid.Time(r.ID)
	switch {
	case !ok:
		return "the run id is not one implloop writes"
	case !r.StartedAt.UTC().Truncate(time.Second).Equal(at):
		return fmt.Sprintf("it says it started at %s, but its id says %s", r.StartedAt.UTC().Format(time.RFC3339), at.Format(time.RFC3339))
	case r.StartedAt.After(now.Add(clockSkew)):
		return fmt.Sprintf("it says it started at %s, in the future", r.StartedAt.UTC().Format(time.RFC3339))
	case r.FinishedAt.After(now.Add(clockSkew)):
		return fmt.Sprintf("it says it ended at %s, in the future", r.FinishedAt.UTC().Format(time.RFC3339))
	case r.Finished() && r.FinishedAt.Before(r.StartedAt):
		return "it says it ended before it started"
	}
	return ""
}

// ParseSize reads a size as the pull flags take it: a number of bytes,
// optionally with a unit: K, M, G, T (powers of 1024; KB, KiB, MB, MiB,
// ... are read the same), case-insensitive.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	num := strings.TrimRightFunc(t, func(r rune) bool { return r >= 'A' && r <= 'Z' })
	unit := strings.TrimSpace(t[len(num):])
	num = strings.TrimSpace(num)
	mult := int64(1)
	switch strings.TrimSuffix(strings.TrimSuffix(unit, "IB"), "B") {
	case "":
		if unit == "IB" {
			return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
		}
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	case "T":
		mult = 1 << 40
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (use K, M, G or T)", s, unit)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive whole number, then K, M, G or T", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// FormatSize is a size for people: "64 MiB", "1.4 MiB", "512 B".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + string("KMGT"[exp]) + "iB"
}
