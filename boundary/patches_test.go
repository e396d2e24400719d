package boundary

import (
	"context"
	"strings"
	"testing"
)

func TestPatches(t *testing.T) {
	r := newTestRepo(t)
	r.write("a.txt", "a file of some length, so that a move is a rename\n")
	r.commitAll("init")
	var snaps []Snapshot
	for _, step := range []func(){
		func() {},
		func() { r.write("b.txt", "b\n"); r.git("mv", "a.txt", "moved.txt") },
		func() {}, // a task that changed nothing
		func() { r.write("c.txt", strings.Repeat("a line of c\n", 100)) },
	} {
		step()
		opts := []Option{WithRun("fx")}
		if len(snaps) > 0 {
			opts = append(opts, WithPrev(snaps[len(snaps)-1]))
		}
		snaps = append(snaps, r.take(opts...))
	}
	var pairs [][2]string
	for i := 1; i < len(snaps); i++ {
		pairs = append(pairs, [2]string{snaps[i-1].Commit, snaps[i].Commit})
	}
	got, err := Patches(context.Background(), r.dir, pairs, 400)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !strings.Contains(string(got[0].Text), "+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n") ||
		!strings.Contains(string(got[0].Text), "rename from a.txt\nrename to moved.txt\n") || got[0].Truncated {
		t.Errorf("first patch %+v", got[0])
	}
	if len(got[1].Text) != 0 || got[1].Size != 0 {
		t.Errorf("a pair with no change: %q", got[1].Text)
	}
	// Cut at whole lines under the limit; Size counts it all.
	if p := got[2]; !p.Truncated || len(p.Text) > 400 || !strings.HasSuffix(string(p.Text), "c\n") || p.Size < 1200 {
		t.Errorf("long patch: truncated %v, %d of %d bytes", p.Truncated, len(p.Text), p.Size)
	}
	if _, err := Patches(context.Background(), r.dir, [][2]string{{"", snaps[0].Commit}}, 10); err == nil {
		t.Error("a pair without commits was accepted")
	}
}
