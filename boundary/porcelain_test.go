package boundary

import (
	"strings"
	"testing"
)

const (
	h1 = "e7200a54688fa2fd03d135acff617754aee5dda8"
	h2 = "45b983be36b73c0788dc9cbcb76cbb80fc7bb057"
	z  = "0000000000000000000000000000000000000000"
)

func z0(records ...string) []byte { return []byte(strings.Join(records, "\x00") + "\x00") }

func TestParsePorcelainV2(t *testing.T) {
	t.Parallel()
	st, err := parsePorcelainV2(z0(
		"# branch.oid "+h1,
		"# branch.head main",
		"# branch.upstream origin/main",
		"# branch.ab +1 -2",
		"2 R. N... 100644 100644 100644 "+h2+" "+h2+" R100 a/moved name.txt",
		"a/b/x y.txt",
		"1 .M N... 100644 100644 100644 "+h2+" "+h2+" f",
		"1 A. N... 000000 100644 100644 "+z+" "+h2+" new\nline",
		"u UU N... 100644 100644 100644 100644 "+h1+" "+h2+" "+h1+" c.txt",
		"1 .M SC.. 160000 160000 160000 "+h1+" "+h1+" sub",
		"? ünï code",
		"? nested/",
		"! ignored.log",
	))
	if err != nil {
		t.Fatal(err)
	}
	if st.oid != h1 || st.head != "main" || st.hashSize != 40 || len(st.records) != 8 {
		t.Fatalf("%+v", st)
	}
	r := st.records[0]
	if r.kind != '2' || r.path != "a/moved name.txt" || r.orig != "a/b/x y.txt" || r.score != "R100" || r.modes[0] != ModeRegular {
		t.Errorf("rename: %+v", r)
	}
	if r := st.records[2]; r.path != "new\nline" || blobOf(r.modes[0], r.hashes[0]).Present() {
		t.Errorf("added: %+v", r)
	}
	if r := st.records[3]; r.kind != 'u' || len(r.hashes) != 3 || r.modes[3] != ModeRegular || r.path != "c.txt" {
		t.Errorf("unmerged: %+v", r)
	}
	if r := st.records[4]; r.sub != "SC.." || r.modes[2] != ModeGitlink {
		t.Errorf("submodule: %+v", r)
	}
	if r := st.records[5]; r.kind != '?' || r.path != "ünï code" {
		t.Errorf("untracked: %+v", r)
	}

	st, err = parsePorcelainV2(z0("# branch.oid (initial)", "# branch.head (detached)"))
	if err != nil || st.oid != "" || st.head != "(detached)" {
		t.Errorf("%+v %v", st, err)
	}
	for _, bad := range [][]byte{
		[]byte("1 .M N... 100644 100644 100644 " + h2 + " " + h2 + " f"), // no NUL
		z0("2 R. N... 100644 100644 100644 " + h2 + " " + h2 + " R100 new"),
		z0("1 .M N... 100644 100644 100644 " + h2 + " " + h2),
		z0("1 .M N... 10064x 100644 100644 " + h2 + " " + h2 + " f"),
		z0("1 .M N... 100644 100644 100644 " + h2[:39] + "g " + h2 + " f"),
		z0("x what"),
		z0("?"),
		z0("# branch.oid nothex"),
		z0(""),
	} {
		if _, err := parsePorcelainV2(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParsePorcelainV2: the parser never panics, and what it accepts is
// well-formed.
func FuzzParsePorcelainV2(f *testing.F) {
	f.Add(z0("# branch.oid "+h1, "# branch.head main", "1 .M N... 100644 100644 100644 "+h2+" "+h2+" f"))
	f.Add(z0("2 R. N... 100644 100644 100644 "+h2+" "+h2+" R100 new", "old", "? u"))
	f.Add(z0("u UU N... 100644 100644 100644 100644 " + h1 + " " + h2 + " " + h1 + " c"))
	f.Add(z0("# branch.oid (initial)", "# branch.head (detached)", "? a/", "! b"))
	f.Add([]byte("1 .M S.MU 160000 160000 160000 " + h1 + " " + h1 + " s\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parsePorcelainV2(data)
		if err != nil {
			return
		}
		for _, r := range st.records {
			if r.path == "" {
				t.Fatalf("empty path in %+v", r)
			}
			switch r.kind {
			case '1', '2':
				if len(r.modes) != 3 || len(r.hashes) != 2 || len(r.xy) != 2 {
					t.Fatalf("%+v", r)
				}
				if r.kind == '2' && r.orig == "" {
					t.Fatalf("rename without source: %+v", r)
				}
			case 'u':
				if len(r.modes) != 4 || len(r.hashes) != 3 {
					t.Fatalf("%+v", r)
				}
			case '?', '!':
			default:
				t.Fatalf("kind %q", r.kind)
			}
			for _, h := range r.hashes {
				if len(h) != st.hashSize {
					t.Fatalf("hash %q, size %d", h, st.hashSize)
				}
			}
		}
	})
}
