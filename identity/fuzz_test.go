package identity

import (
	"strings"
	"testing"
)

// FuzzNormalize: Normalize never panics, is idempotent, and leaves no CR;
// the fast token matchers agree with the documented patterns.
// Seeds: the table's examples and normalizeCases; more in
// testdata/fuzz/FuzzNormalize.
func FuzzNormalize(f *testing.F) {
	for _, r := range Rules() {
		f.Add(r.Example.In)
	}
	for _, c := range normalizeCases {
		f.Add(c.in)
	}
	f.Add("/home/ann/src/shop.2026-11-30T05:40:12Z")
	f.Add("/tmp/x/tmp/ab1/home/ann/r-20261130-054012-3f9a-0f8fad5b-d9cb-469f-a165-70867728950e")
	f.Add("- [x]\r\n* [X] 2026-11-30 05:40\t \r")
	envs := []Env{ExampleEnv(), normalizeEnv, {ProjectRoots: []string{"/tmp/ws1/p", "/private/tmp/ws1/p"}, Home: "/tmp/ws1/.home", TempRoots: []string{"/tmp", "/private/tmp"}}, {}}
	f.Fuzz(func(t *testing.T, in string) {
		checkMatchersAgree(t, in)
		for _, env := range envs {
			once := Normalize(in, env)
			if twice := Normalize(once, env); twice != once {
				t.Fatalf("not idempotent under %+v:\nin    %q\nonce  %q\ntwice %q", env, in, once, twice)
			}
			if strings.ContainsRune(once, '\r') {
				t.Fatalf("CR left in %q", once)
			}
		}
	})
}
