package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/settings"
)

// Settings are a run's settings: the record, its checks and the one table
// of settings are package settings'. The names below are the engine's
// vocabulary for them.
type (
	Settings     = settings.Settings
	Duration     = settings.Duration
	SettingError = settings.Error
)

// DefaultSettings returns the settings of a run given no flags.
func DefaultSettings() Settings { return settings.Default() }

// SettingsOf is the settings a resume of parent starts from: the
// defaults, then the parent's journaled settings. The plan is planPath
// (repo-relative, as journaled) when given, else the parent's. Resume,
// watch and check start from it; Inherit puts flags given again over it.
func SettingsOf(parent *cache.Run, planPath string) (Settings, error) {
	s := settings.Default()
	if len(parent.Settings) > 0 {
		if err := json.Unmarshal(parent.Settings, &s); err != nil {
			return s, fmt.Errorf("run %s: settings in the journal: %w", parent.ID, err)
		}
	}
	if planPath != "" {
		s.Plan = planPath
	}
	if s.Plan == "" {
		s.Plan = parent.PlanPath
	}
	return s, nil
}

// Inherit is the settings of a resume: the parent's (journaled by run
// parentID) with the flags given on the resume's command line applied over
// them. given holds the flags' values, given.Flags names the ones given.
// Both are validated: a bad flag is refused as a flag, a bad inherited value
// says it was inherited and how to replace it.
func Inherit(parent Settings, parentID string, given Settings) (Settings, error) {
	if err := given.Validate(); err != nil {
		return given, err
	}
	isGiven := func(name string) bool { return slices.Contains(given.Flags, name) }
	s := parent
	for _, st := range settings.All() {
		if !isGiven(st.Flag) {
			continue
		}
		st.Copy(&s, &given)
		// --agent and --agent-cmd pick the backend together: a preset
		// given alone drops an inherited command line, and both given are
		// kept for Validate to refuse, as run does.
		if st.Pair() != "" && !isGiven(st.Pair()) {
			st.Alone(&s)
		}
		s.Flags = addFlag(s.Flags, st.Flag)
	}
	if err := s.Validate(); err != nil {
		var se *SettingError
		if errors.As(err, &se) {
			se.From = "inherited from run " + parentID
			se.Hint = "pass --" + se.Flag + " again with the value you mean (it replaces the inherited one)"
		}
		return s, err
	}
	return s, nil
}

// addFlag adds name to the sorted set flags.
func addFlag(flags []string, name string) []string {
	if slices.Contains(flags, name) {
		return flags
	}
	flags = append(append([]string(nil), flags...), name)
	sort.Strings(flags)
	return flags
}
