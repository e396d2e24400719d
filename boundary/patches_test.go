package boundary

import (
	"context"
	"strings"
	"testing"
)

func TestPatches(t *testing.T) {
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("init")
	s1 := r.take(WithRun("fx"))
	r.write("b.txt", "b\n")
	s2 := r.take(WithRun("fx"), WithPrev(s1))
	s3 := r.take(WithRun("fx"), WithPrev(s2))
	r.write("c.txt", strings.Repeat("a line of c\n", 100))
	s4 := r.take(WithRun("fx"), WithPrev(s3))
	pairs := [][2]string{{s1.Commit, s2.Commit}, {s2.Commit, s3.Commit}, {s3.Commit, s4.Commit}}
	got, err := Patches(context.Background(), r.dir, pairs, 400)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !strings.Contains(string(got[0].Text), "+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n") || got[0].Truncated {
		t.Errorf("first patch %+v", got[0])
	}
	if len(got[1].Text) != 0 || got[1].Size != 0 {
		t.Errorf("a pair with no change: %q", got[1].Text)
	}
	// Cut at whole lines under the limit; Size counts it all.
	if p := got[2]; !p.Truncated || len(p.Text) > 400 || !strings.HasSuffix(string(p.Text), "c\n") || p.Size < 1200 {
		t.Errorf("long patch: truncated %v, %d of %d bytes", p.Truncated, len(p.Text), p.Size)
	}
	if _, err := Patches(context.Background(), r.dir, [][2]string{{"", s1.Commit}}, 10); err == nil {
		t.Error("a pair without commits was accepted")
	}
}
