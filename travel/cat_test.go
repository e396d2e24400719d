package travel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/implloop/implloop/internal/gittest"
)

// catLog is what catBatch handed fn, and what it returned.
func catLog(ctx context.Context, dir string, ids []string, stopAt int) string {
	var b strings.Builder
	err := catBatch(ctx, dir, ids, func(i int, typ string, size int64, r io.Reader) error {
		body, err := io.ReadAll(io.LimitReader(r, 5)) // a part only: the rest is skipped
		fmt.Fprintf(&b, "%d %s %d %q %v\n", i, typ, size, body, err)
		if i == stopAt {
			return errors.New("stop")
		}
		return nil
	})
	var ce *catError
	if errors.As(err, &ce) {
		fmt.Fprintf(&b, "missing at %d: %v\n", ce.Index, err)
	} else {
		fmt.Fprintf(&b, "err %v\n", err)
	}
	return b.String()
}

// Rounds through a pull's sessions are what a process each gives: the
// same objects, types, sizes and contents, the same missing object and
// nothing after it, the same end where fn stops; and a session goes on
// after each (what a round leaves unread is skipped), also when its
// callback asks for more objects (another session, or a process).
func TestCatSessionsAsCatBatch(t *testing.T) {
	r := gittest.New(t)
	r.Write("a.txt", strings.Repeat("a", 100000))
	r.Write("b.txt", "bee\n")
	r.Git("add", "a.txt", "b.txt")
	c := strings.TrimSpace(r.Git("commit", "-q", "-m", "one") + r.Git("rev-parse", "HEAD"))
	tree := strings.TrimSpace(r.Git("rev-parse", c+"^{tree}"))
	a := strings.TrimSpace(r.Git("rev-parse", c+":a.txt"))
	b := strings.TrimSpace(r.Git("rev-parse", c+":b.txt"))
	missing := strings.Repeat("0", 39) + "1"
	rounds := []struct {
		ids  []string
		stop int
	}{
		{[]string{c, tree, a, b}, -1},
		{[]string{b, missing, a}, -1},
		{[]string{a, b, tree}, 1},
		{[]string{a, a, b}, -1},
		{[]string{missing}, -1},
	}
	ctx := context.Background()
	sctx, end := withCatSessions(ctx, r.Dir)
	defer end()
	for k, round := range rounds {
		want := catLog(ctx, r.Dir, round.ids, round.stop)
		if got := catLog(sctx, r.Dir, round.ids, round.stop); got != want {
			t.Errorf("round %d through a session:\n%s\nwant (a process):\n%s", k, got, want)
		}
	}
	// A callback that reads more while its round is under way.
	var inner string
	err := catBatch(sctx, r.Dir, []string{b}, func(int, string, int64, io.Reader) error {
		inner = catLog(sctx, r.Dir, []string{a, b}, -1)
		return nil
	})
	if err != nil || inner != catLog(ctx, r.Dir, []string{a, b}, -1) {
		t.Fatalf("nested round: %v\n%s", err, inner)
	}
	p := sctx.Value(catKey{}).(*catSessions)
	if p.s[0].in == nil || p.s[0].broken != nil {
		t.Fatalf("the first session did not go on: %v", p.s[0].broken)
	}
	end()
	// Ended: a round gets a process of its own.
	if got, want := catLog(sctx, r.Dir, rounds[0].ids, -1), catLog(ctx, r.Dir, rounds[0].ids, -1); got != want {
		t.Fatalf("after the end:\n%s\nwant:\n%s", got, want)
	}
}
