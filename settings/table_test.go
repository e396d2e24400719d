package settings

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The table is the one place a setting is named: each row is whole, and
// names no flag or key twice.
func TestTable(t *testing.T) {
	t.Parallel()
	flags, keys := map[string]bool{}, map[string]bool{}
	for _, st := range All() {
		if st.Flag == "" || st.Help == "" || flags[st.Flag] {
			t.Errorf("row %+v: a flag of its own, with help", st)
		}
		flags[st.Flag] = true
		if st.Key != "" {
			if keys[st.Key] || st.Type == 0 || st.Doc == "" {
				t.Errorf("--%s: key %q: a key of its own, with a type and a doc line", st.Flag, st.Key)
			}
			keys[st.Key] = true
			if got, ok := ByKey(st.Key); !ok || got.Flag != st.Flag {
				t.Errorf("ByKey(%q) = %q", st.Key, got.Flag)
			}
		} else if st.Type != 0 || st.Doc != "" {
			t.Errorf("--%s has no key but a type or doc line", st.Flag)
		}
		if got, ok := ByFlag(st.Flag); !ok || got.Key != st.Key {
			t.Errorf("ByFlag(%q) = %+v", st.Flag, got)
		}
		// Every field is one Copy, Reset and the commands know.
		var a, b Settings
		st.Copy(&a, &b)
		st.Reset(&a)
		// A pair is both ways.
		if st.Pair() != "" {
			if p, ok := ByFlag(st.Pair()); !ok || p.Pair() != st.Flag || p.alone == nil || st.alone == nil {
				t.Errorf("--%s pairs with --%s, which does not pair back", st.Flag, st.Pair())
			}
		}
		// Each fixed value is one Validate takes.
		for _, v := range st.Values {
			s := Default()
			s.AgentCmd = "./agent.sh"
			switch p := st.Field(&s).(type) {
			case *string:
				*p = v
				if st.Flag == "agent" && v != "exec" {
					s.AgentCmd = ""
				}
			case *[]string:
				*p = []string{v}
			}
			if err := s.Validate(); err != nil {
				t.Errorf("--%s %s: %v", st.Flag, v, err)
			}
		}
	}
	if !slices.Equal(Flags(), func() []string {
		var out []string
		for _, st := range All() {
			out = append(out, st.Flag)
		}
		return out
	}()) {
		t.Error("Flags() is not the table's flags")
	}
	// What a resume applies first: --agent before --agent-cmd.
	if i, j := slices.Index(Flags(), "agent"), slices.Index(Flags(), "agent-cmd"); i > j {
		t.Error("--agent-cmd before --agent")
	}
}

// Reset is Default's value; FlagDefaults differ from Default only where a
// row says so.
func TestDefaults(t *testing.T) {
	t.Parallel()
	s := everyField()
	for _, st := range All() {
		st.Reset(&s)
	}
	s.Plan, s.SandboxTool, s.AgentVersion, s.Flags, s.FrontMatter = "", "", "", nil, nil
	if d := Default(); !equalJSON(t, s, d) {
		t.Errorf("every setting reset: %+v, want %+v", s, d)
	}
	f := FlagDefaults()
	if f.Jobs != 1 {
		t.Errorf("--jobs defaults to %d, want 1", f.Jobs)
	}
	f.Jobs = 0
	if !equalJSON(t, f, Default()) {
		t.Errorf("FlagDefaults %+v", f)
	}
}

// The front matter's values decode as a plan's YAML gives them.
func TestDecode(t *testing.T) {
	t.Parallel()
	s := Default()
	for key, v := range map[string]any{
		"model": "m", "max_attempts": 2, "jobs": "4", "timeout": "90s", "env": []any{"A", "B"},
		"params": map[string]any{"n": 3, "s": "x"}, "sandbox": true, "plan_context": nil,
	} {
		st, ok := ByKey(key)
		if !ok {
			t.Fatalf("no key %q", key)
		}
		if err := st.Decode(&s, v); err != nil {
			t.Fatal(err)
		}
	}
	if s.Model != "m" || s.MaxAttempts != 2 || s.Jobs != 4 || time.Duration(s.Timeout) != 90*time.Second || strings.Join(s.Env, ",") != "A,B" ||
		s.Params["n"] != "3" || s.Params["s"] != "x" || !s.Sandbox || s.PlanContext != "" {
		t.Errorf("decoded %+v", s)
	}
	st, _ := ByKey("max_attempts")
	if err := st.Decode(&s, "many"); err == nil || !strings.HasPrefix(err.Error(), "front matter max_attempts: ") {
		t.Errorf("max_attempts: many: %v", err)
	}
	st, _ = ByKey("timeout")
	if err := st.Decode(&s, []any{}); err == nil || !strings.HasPrefix(err.Error(), "front matter timeout: ") {
		t.Errorf("timeout: []: %v", err)
	}
}

// The package is a leaf: it imports nothing of implloop's, so that
// package plan may read the table and stay the leaf it is (package plan
// imports this package and internal/words, itself a leaf, and nothing
// else of implloop's).
func TestLeaf(t *testing.T) {
	t.Parallel()
	for dir, allowed := range map[string][]string{".": nil, "../plan": {"github.com/implloop/implloop/settings", "github.com/implloop/implloop/internal/words"}, "../internal/words": nil} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, "github.com/implloop/") && !slices.Contains(allowed, p) {
					t.Errorf("%s imports %s", name, p)
				}
			}
		}
	}
}
