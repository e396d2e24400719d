package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/implloop/implloop/cache"
)

func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	const rev = "fe5b0a53d1c9e06ce34faa4177bfabe030e31625"
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		line string
	}{
		{"no build info", nil, "implloop version 0.1.0-dev (" + runtime.Version() + " " + platform + "; journal schema N)"},
		{"go build in a checkout, -buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"implloop version 0.1.0-dev (go1.26.8 " + platform + "; journal schema N)"},
		{"go build in a dirty checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130101456-fe5b0a53d1c9+dirty"}, Settings: vcs(rev, "true")},
			"implloop version 0.1.0-dev (fe5b0a53d1c9, dirty; go1.26.8 " + platform + "; journal schema N)"},
		{"go build on a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: vcs(rev, "false")},
			"implloop version v1.2.3 (fe5b0a53d1c9; go1.26.8 " + platform + "; journal schema N)"},
		{"go install at a commit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130101456-fe5b0a53d1c9"}},
			"implloop version v0.0.0-20261130101456-fe5b0a53d1c9 (go1.26.8 " + platform + "; journal schema N)"},
		{"go install at a release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			"implloop version v1.2.3 (go1.26.8 " + platform + "; journal schema N)"},
	} {
		v := versionOf(c.bi)
		if v.JournalSchema != cache.SchemaVersion() {
			t.Errorf("%s: journal schema %d, want %d", c.name, v.JournalSchema, cache.SchemaVersion())
		}
		got := strings.Replace(v.line(), "journal schema "+strconv.Itoa(cache.SchemaVersion()), "journal schema N", 1)
		if got != c.line {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.line)
		}
	}
}

// Without VCS stamping (-buildvcs=false) there is no revision and no
// dirty flag to report: --json leaves both out instead of "dirty": false.
func TestVersionJSONWithoutVCS(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"-buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, ""},
		{"clean checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fe5b0a53d1c9"}, {Key: "vcs.modified", Value: "false"}}}, `"revision":"fe5b0a53d1c9","dirty":false`},
	} {
		b, err := json.Marshal(versionOf(c.bi))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if c.want == "" && (strings.Contains(s, `"dirty"`) || strings.Contains(s, `"revision"`)) {
			t.Errorf("%s: %s has a revision or a dirty flag the build never recorded", c.name, s)
		}
		if c.want != "" && !strings.Contains(s, c.want) {
			t.Errorf("%s: %s does not have %s", c.name, s, c.want)
		}
	}
}

// Both `implloop version` and `implloop --version` print one line, ending
// in a newline; --json has every field.
func TestVersionOutput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		io, out, errOut := testIO()
		if code := run(args, io); code != 0 || errOut.Len() != 0 {
			t.Fatalf("implloop %v: exit %d, stderr %q", args, code, errOut)
		}
		s := out.String()
		if !strings.HasPrefix(s, "implloop version ") || !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
			t.Errorf("implloop %v printed %q, want one line ending in a newline", args, s)
		}
		if want := buildVersion().line() + "\n"; s != want {
			t.Errorf("implloop %v printed %q, want %q", args, s, want)
		}
	}

	io, out, _ := testIO()
	if code := run([]string{"version", "--json"}, io); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"version", "go", "platform", "journal_schema"} {
		if _, ok := m[k]; !ok {
			t.Errorf("version --json has no %q: %s", k, out)
		}
	}
	// revision and dirty come together, from the build's VCS stamp, or not
	// at all (the tests' binary may be built with -buildvcs=false).
	_, rev := m["revision"]
	_, dirty := m["dirty"]
	if rev != dirty || rev != (buildVersion().Revision != "") {
		t.Errorf("version --json: revision present %v, dirty present %v, build stamped %q: %s", rev, dirty, buildVersion().Revision, out)
	}
	if m["journal_schema"] != float64(cache.SchemaVersion()) {
		t.Errorf("journal_schema %v, want %d", m["journal_schema"], cache.SchemaVersion())
	}
	if !bytes.HasSuffix(out.Bytes(), []byte("}\n")) {
		t.Errorf("version --json does not end in a newline: %q", out)
	}
}
