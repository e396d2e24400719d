package gitobj

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIncludesAsGitReadsThem: the include paths read from a config file
// are the ones git reads (every includeIf's, whatever its condition).
func TestIncludesAsGitReadsThem(t *testing.T) {
	text := "[core]\n\tbare = false\n[include]\n\tpath = a.inc ; comment\n[includeIf \"gitdir:/x/\"]\n  PATH=/abs/b.inc\n[Include] path = ~/c.inc\n[user]\n\tpath = not/an/include\n"
	got, ok := includes(text)
	if !ok || strings.Join(got, ",") != "a.inc,/abs/b.inc,~/c.inc" {
		t.Fatalf("%v %v", got, ok)
	}
	f := filepath.Join(t.TempDir(), "config")
	os.WriteFile(f, []byte(strings.Replace(text, "[includeIf \"gitdir:/x/\"]", "[include]", 1)), 0o644)
	want := gitIn(t, t.TempDir(), "", nil, "config", "--file", f, "--no-includes", "--get-all", "include.path")
	if strings.Join(got, "\n") != want {
		t.Fatalf("git reads %q", want)
	}
	for _, unsure := range []string{"[include]\n\tpath = \"q\"\n", "[include]\n\tpath = a\\\n b\n", "[include]\n\tpath\n", "[include\n", "[include]\n\tx = a\\\n[core]\n\tpath = b\n"} {
		if _, ok := includes(unsure); ok {
			t.Errorf("read for sure: %q", unsure)
		}
	}
}

// FuzzIncludes: reading a config file's includes never panics, and what
// it returns is a plain path.
func FuzzIncludes(f *testing.F) {
	f.Add("[include]\n\tpath = a\n")
	f.Add("[includeIf \"onbranch:x\"] path=~/y\n[core]\nsharedRepository\n")
	f.Add("[include \"x\"]\npath = a;b\n#[include]\n")
	f.Fuzz(func(t *testing.T, text string) {
		paths, ok := includes(text)
		if !ok {
			return
		}
		for _, p := range paths {
			if p == "" || p != strings.TrimSpace(p) || strings.ContainsAny(p, "\"\\\n#;") {
				t.Fatalf("%q from %q", p, text)
			}
		}
	})
}

// TestConfigMentions: a key counts as set unless every line naming it
// plainly gives it a harmless value; anything less plain counts.
func TestConfigMentions(t *testing.T) {
	k := Key{Name: "logallrefupdates", Harmless: []string{"true", "false"}}
	for _, c := range []struct {
		conf string
		set  bool
	}{
		{"[core]\n\tbare = false\n", false},
		{"[core]\n\tlogallrefupdates = true\n", false},
		{"[core]\n\tlogAllRefUpdates=false\r\n", false},
		{"[core]\n\tlogallrefupdates\n", false},
		{"[core]\n\tlogallrefupdates = always\n", true},
		{"[core]\n\tlogallrefupdates = \"always\"\n", true},
		{"[core]\n\tlogallrefupdates = true # or always\n", true},
		{"[core]\n\tlogallrefupdates = alw\\\nays\n", true},
		{"[core]logallrefupdates = always\n", true},
		{"[alias]\n\tx = !git -c core.logallrefupdates=always\n", true},
		{"[include]\n\tpath = /nonexistent/\"quoted\n", true},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config"), []byte(c.conf), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("HOME", t.TempDir())
		t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
		why, set := ConfigMentions(Repo{CommonDir: dir}, k)
		if set != c.set {
			t.Errorf("%q: set %v (%s), want %v", c.conf, set, why, c.set)
		}
	}
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.logallrefupdates'='true'")
	if _, set := ConfigMentions(Repo{CommonDir: t.TempDir()}, k); !set {
		t.Error("the environment's configuration does not count")
	}
}
