package main

import (
	"encoding/json"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/loop"
)

// Shared by resume and the commands that look at a resume before it
// happens (watch, check).

// resumeSettings are the settings a resume of parent starts from: the
// defaults, then the parent's journaled settings; the plan is planPath
// (repo-relative, as journaled) when given, else the parent's.
func resumeSettings(parent *cache.Run, planPath string) (loop.Settings, error) {
	s := loop.DefaultSettings()
	if len(parent.Settings) > 0 {
		if err := json.Unmarshal(parent.Settings, &s); err != nil {
			return s, errorf("", "run %s: settings in the journal: %w", parent.ID, err)
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
