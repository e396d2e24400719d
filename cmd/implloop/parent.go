package main

import (
	"encoding/json"
	"path/filepath"
	"strings"

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

// journalPlanPath is plan path p (relative to the working directory wd) the
// way runLoop records it: relative to the repo root when inside it, else
// absolute.
func journalPlanPath(root, wd, p string) string {
	// git reports the root with symlinks resolved, while the working
	// directory may be reached through one (/tmp on macOS): resolve the
	// directories, not p itself, which may not exist (a path to restore).
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if !filepath.IsAbs(p) {
		if w, err := filepath.EvalSymlinks(wd); err == nil {
			wd = w
		}
		p = filepath.Join(wd, p)
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(d, filepath.Base(p))
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}
