package bytepath

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

func TestListRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := rapid.SliceOf(rapid.SliceOf(rapid.Byte())).Draw(t, "paths")
		in := make(List, len(raw))
		for i, r := range raw {
			in[i] = string(r)
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out List
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if len(out) != len(in) {
			t.Fatalf("%q -> %s -> %q", in, b, out)
		}
		for i := range in {
			if in[i] != out[i] {
				t.Fatalf("%q -> %s -> %q", in, b, out)
			}
		}
	})
}

func TestListForm(t *testing.T) {
	b, _ := json.Marshal(List{"a.txt", "bad\xffname.txt"})
	if got := string(b); got != `["a.txt",{"path":"bad\ufffdname.txt","path_b64":"YmFk/25hbWUudHh0"}]` {
		t.Errorf("%s", got)
	}
	if Display("bad\xffname.txt") != `"bad\xffname.txt"` || Display("ok name.txt") != "ok name.txt" {
		t.Error(Display("bad\xffname.txt"))
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(`["a",{"path":"x","path_b64":"eA=="}]`)
	f.Fuzz(func(t *testing.T, s string) {
		var l List
		if json.Unmarshal([]byte(s), &l) != nil {
			return
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var again List
		if err := json.Unmarshal(b, &again); err != nil || len(again) != len(l) {
			t.Fatalf("%s -> %s: %v", s, b, err)
		}
	})
}

// AppendTwins writes what a struct with the twins as its last fields,
// omitted when empty, marshals to; ReadTwins reads them back.
func TestTwins(t *testing.T) {
	t.Parallel()
	type rec struct {
		Path string `json:"path"`
		To   string `json:"to,omitempty"`
		N    int    `json:"n"`
	}
	type empty struct{}
	for _, r := range []rec{{Path: "a.txt"}, {Path: "bad\xffname", N: 1}, {Path: "a", To: "b\xfe"}, {Path: "\xff", To: "\xfe/x"}, {}} {
		b, err := json.Marshal(r)
		got, err := AppendTwins(b, err, Field{"path", &r.Path}, Field{"to", &r.To})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(struct {
			rec
			PathB64 string `json:"path_b64,omitempty"`
			ToB64   string `json:"to_b64,omitempty"`
		}{r, B64(r.Path), B64(r.To)})
		if string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", r.Path, got, want)
		}
		var back rec
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if err := ReadTwins(got, Field{"path", &back.Path}, Field{"to", &back.To}); err != nil || back != r {
			t.Errorf("%s read back as %+v, %v", got, back, err)
		}
	}
	p := "\xff"
	b, err := json.Marshal(empty{})
	if got, err := AppendTwins(b, err, Field{"path", &p}); err != nil || string(got) != `{"path_b64":"/w=="}` {
		t.Errorf("empty object: %s %v", got, err)
	}
	if _, err := AppendTwins([]byte(`"x"`), nil, Field{"path", &p}); err == nil {
		t.Error("a string is no object")
	}
	q := "x"
	if err := ReadTwins([]byte(`{"path":"x","path_b64":"!"}`), Field{"path", &q}); err == nil {
		t.Error("bad base64 read")
	}
}
