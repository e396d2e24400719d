package boundary

import (
	"context"
	"strings"
	"testing"
)

func TestParseRaw(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	z := strings.Repeat("0", 40)
	in := ":100644 100644 " + a + " " + b + " M\x00dir/f.txt\x00" +
		":000000 100755 " + z + " " + b + " A\x00new\nline\x00" +
		":100644 100644 " + a + " " + a + " R100\x00old\x00bad\xffname\x00" +
		":100644 000000 " + a + " " + z + " D\x00gone\x00"
	got, err := parseRaw([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d changes: %+v", len(got), got)
	}
	if got[0].Path != "dir/f.txt" || got[0].Status != 'M' || got[0].Before.Hash != a || got[0].After.Hash != b {
		t.Errorf("modified: %+v", got[0])
	}
	if got[1].Before.Present() || got[1].After.Mode != ModeExecutable || got[1].Path != "new\nline" {
		t.Errorf("added: %+v", got[1])
	}
	if got[2].Path != "bad\xffname" || got[2].From != "old" || got[2].Score != 100 {
		t.Errorf("renamed: %+v", got[2])
	}
	if got[3].After.Present() || got[3].Status != 'D' {
		t.Errorf("deleted: %+v", got[3])
	}
	for _, bad := range []string{"x", ":100644 100644 " + a + " " + b + " M", ":100644 100644 " + a + " " + b + " M\x00\x00",
		":1006x4 100644 " + a + " " + b + " M\x00p\x00", ":100644 100644 " + a + " " + b + " R\x00only\x00"} {
		if _, err := parseRaw([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseRaw: git's raw diff output is parsed without panicking, and
// every change it accepts has a path.
func FuzzParseRaw(f *testing.F) {
	a := strings.Repeat("a", 40)
	f.Add([]byte(":100644 100644 " + a + " " + a + " M\x00p\x00"))
	f.Add([]byte(":100644 100644 " + a + " " + a + " R087\x00p\x00q\x00"))
	f.Add([]byte(":000000 000000 " + strings.Repeat("0", 40) + " " + strings.Repeat("0", 40) + " U\x00p\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		changes, err := parseRaw(data)
		if err != nil {
			return
		}
		for _, c := range changes {
			if c.Path == "" {
				t.Fatalf("a change without a path: %+v", c)
			}
		}
	})
}

func TestEffects(t *testing.T) {
	r := newTestRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("init")
	s1 := r.take(WithRun("fx"))
	r.write("b.txt", "b\n")
	s2 := r.take(WithRun("fx"), WithPrev(s1))
	s3 := r.take(WithRun("fx"), WithPrev(s2))
	r.remove("a.txt")
	s4 := r.take(WithRun("fx"), WithPrev(s3))
	got, err := Effects(context.Background(), r.dir, [][2]string{{s1.Commit, s2.Commit}, {s2.Commit, s3.Commit}, {s3.Commit, s4.Commit}, {"", s1.Tree}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || len(got[0]) != 1 || got[0][0].Path != "b.txt" || len(got[1]) != 0 ||
		len(got[2]) != 1 || got[2][0].Path != "a.txt" || got[2][0].After.Present() || len(got[3]) != 1 {
		t.Errorf("%+v", got)
	}
	// A pair git no longer has (a forgotten run's, collected) is an
	// error, wherever it is, not an effect of nothing.
	gone := strings.Repeat("1", 40)
	for _, pairs := range [][][2]string{{{s1.Commit, s2.Commit}, {s2.Commit, gone}}, {{gone, gone}, {s1.Commit, s2.Commit}}} {
		if _, err := Effects(context.Background(), r.dir, pairs); err == nil || !strings.Contains(err.Error(), "not in the repository") {
			t.Errorf("%v: error %v, want the missing pair named", pairs, err)
		}
	}
}

func TestParseBlame(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	out := a + " 1 1 2\nauthor x\nsummary implloop: run r-1, after task 3\nfilename f\n\tline one\n" +
		a + " 2 2\n\tline two\n" + b + " 5 3 1\nsummary start\nfilename f\n\t\tindented\n"
	got, err := parseBlame([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Summary != "implloop: run r-1, after task 3" || got[1].Commit != a || got[1].Text != "line two" ||
		got[2].Line != 3 || got[2].Text != "\tindented" || got[2].Summary != "start" {
		t.Errorf("%+v", got)
	}
	if _, err := parseBlame([]byte("\tno header\n")); err == nil {
		t.Error("text before a header accepted")
	}
}

// FuzzParseBlame: git blame's porcelain output is parsed without panicking.
func FuzzParseBlame(f *testing.F) {
	f.Add([]byte(strings.Repeat("a", 40) + " 1 1 1\nsummary s\n\tx\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = parseBlame(data)
	})
}
