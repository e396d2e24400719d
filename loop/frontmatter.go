package loop

import (
	"errors"
	"slices"
	"sort"

	"github.com/implloop/implloop/settings"
)

// applyFrontMatter fills the settings a plan's front matter sets, for each
// setting whose flag the user did not give (given reports whether the flag
// of that name was set on the command line). Flags win over front matter,
// front matter over defaults. The plan package has already checked each
// value's type (lint errors stop a run before this).
//
// The keys applied are recorded in s.FrontMatter.
func applyFrontMatter(s Settings, fm map[string]any, given func(flag string) bool) (Settings, error) {
	s.FrontMatter = nil
	keys := make([]string, 0, len(fm))
	for k := range fm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		st, ok := settings.ByKey(key)
		if !ok || given(st.Flag) {
			continue
		}
		// --agent and --agent-cmd pick the backend together: either flag
		// outranks both keys (agent: claude in a shared plan must not
		// replace the user's --agent-cmd, nor the reverse).
		if st.Pair() != "" && given(st.Pair()) {
			continue
		}
		s.FrontMatter = append(s.FrontMatter, key)
		if err := st.Decode(&s, fm[key]); err != nil {
			return s, err
		}
		// The two keys pick the backend together, as the two flags do
		// (Settings.Validate refuses a preset with a command line).
		if pair, ok := settings.ByFlag(st.Pair()); ok {
			if _, both := fm[pair.Key]; !both {
				st.Alone(&s)
			}
		}
	}
	if err := s.Validate(); err != nil {
		var se *SettingError
		if errors.As(err, &se) {
			if st, ok := settings.ByFlag(se.Flag); ok && st.Key != "" && slices.Contains(s.FrontMatter, st.Key) {
				se.From = "set by " + st.Key + " in the plan's front matter"
				se.Hint = "fix " + st.Key + " in the plan's front matter (or pass --" + st.Flag + ", which wins over it)"
			}
		}
		return s, err
	}
	return s, nil
}

// frontMatterOnResume re-applies the plan's front matter as it is now to the
// settings a resume inherited: a front-matter edit (model: a -> b) reaches
// the resume, a removed key reverts to its default, and a setting any run
// of the lineage was given as a flag is left alone.
func frontMatterOnResume(s Settings, fm map[string]any) (Settings, error) {
	flagged := func(flag string) bool { return slices.Contains(s.Flags, flag) }
	for _, key := range s.FrontMatter {
		st, ok := settings.ByKey(key)
		if _, still := fm[key]; still || !ok || flagged(st.Flag) {
			continue
		}
		st.Reset(&s)
	}
	return applyFrontMatter(s, fm, flagged)
}
