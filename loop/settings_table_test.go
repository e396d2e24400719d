package loop

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/settings"
	"github.com/implloop/implloop/unit"
)

// Package settings is a leaf, so it keeps two facts of other packages: the
// agent backends and the rule for a variable's name. They must agree.
func TestSettingsFactsAgree(t *testing.T) {
	t.Parallel()
	if got, want := settings.Agents(), agent.Names(); !slices.Equal(got, want) {
		t.Errorf("settings.Agents() = %v, agent.Names() = %v", got, want)
	}
	for _, n := range []string{"A", "_", "a1", "API_TOKEN", "", "1A", "A-B", "A=1", "A B", "é", "A\n", " A", "HOME"} {
		if settings.ValidEnvName(n) != identity.ValidEnvName(n) {
			t.Errorf("%q: settings says %v, identity %v", n, settings.ValidEnvName(n), identity.ValidEnvName(n))
		}
	}
}

// The table's Hashed column is what the code does: a setting marked
// Identity changes every unit's identity, one marked Inputs only the
// inputs digest, one marked Neither neither.
func TestSettingsHashedColumn(t *testing.T) {
	t.Parallel()
	sel, err := selectBytes("plan.md", []byte("# Plan\n\n- [ ] one\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	base := DefaultSettings()
	base.Plan, base.AgentCmd, base.Model, base.Verify = "plan.md", "./a.sh", "m", "make test"
	ids := func(s Settings) string {
		e := &engine{s: s, sel: sel}
		t0 := sel.Tasks[0]
		units, err := unit.WorkList(t0, e.unitParams(t0), unit.Facts{Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range units {
			out = append(out, u.Identity)
		}
		return strings.Join(out, " ")
	}
	baseIDs, baseInputs := ids(base), inputsDigest(sel, base)
	for _, st := range settings.All() {
		s := base
		s.Env, s.Params, s.Fallbacks, s.SandboxAllow = slices.Clone(s.Env), map[string]string{}, nil, nil
		switch p := st.Field(&s).(type) {
		case *string:
			if i := slices.IndexFunc(st.Values, func(v string) bool { return v != *p }); i >= 0 {
				*p = st.Values[i]
			} else {
				*p += "-changed"
			}
		case *int:
			*p++
		case *int64:
			*p++
		case *float64:
			*p++
		case *bool:
			*p = !*p
		case *Duration:
			*p += Duration(time.Minute)
		case *[]string:
			*p = append(*p, "EXTRA")
		case *map[string]string:
			*p = map[string]string{"k": "v"}
		default:
			t.Fatalf("--%s: a field of type %T", st.Flag, p)
		}
		idChanged, inputsChanged := ids(s) != baseIDs, inputsDigest(sel, s) != baseInputs
		want := settings.Identity
		switch {
		case !inputsChanged:
			want = settings.Neither
		case !idChanged:
			want = settings.Inputs
		}
		if idChanged && !inputsChanged {
			t.Errorf("--%s changes the identities but not the inputs digest", st.Flag)
		}
		if st.Hashed != want {
			name := map[settings.Hashed]string{settings.Identity: "identity", settings.Inputs: "inputs", settings.Neither: "neither"}
			t.Errorf("--%s is marked %s in the table, but what changing it changes says %s", st.Flag, name[st.Hashed], name[want])
		}
	}
}
