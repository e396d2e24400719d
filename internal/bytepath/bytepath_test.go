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
