package identity

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// EnvFor returns the Env for a project rooted at projectDir on this
// machine: the project root as given (made absolute), symlink-resolved,
// and as reached through the working directory when that lies inside the
// project by way of a symlink (git reports the resolved root, while a
// prompt built from $PWD holds the symlinked one),
// the home directory, and the temp roots: os.TempDir(), $TMPDIR, /tmp and
// /var/tmp, plus /private/tmp, /private/var/tmp, /var/folders and
// /private/var/folders on macOS, each as written and symlink-resolved.
// Paths that do not exist are kept as written; EnvFor never fails.
func EnvFor(projectDir string) Env {
	var env Env
	if projectDir != "" {
		if abs, err := filepath.Abs(projectDir); err == nil {
			projectDir = abs
		}
		env.ProjectRoots = withResolved(projectDir)
		if alias := workingDirAlias(projectDir); alias != "" && !slices.Contains(env.ProjectRoots, alias) {
			env.ProjectRoots = append(env.ProjectRoots, alias)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		env.Home = home
	}
	temps := []string{os.TempDir(), os.Getenv("TMPDIR"), "/tmp", "/var/tmp"}
	if runtime.GOOS == "darwin" {
		temps = append(temps, "/private/tmp", "/private/var/tmp", "/var/folders", "/private/var/folders")
	}
	seen := map[string]bool{}
	for _, t := range temps {
		if t == "" {
			continue
		}
		for _, r := range withResolved(t) {
			if !seen[r] {
				seen[r] = true
				env.TempRoots = append(env.TempRoots, r)
			}
		}
	}
	return env
}

// withResolved returns dir (without a trailing separator) and, when it
// differs, its symlink-resolved form.
func withResolved(dir string) []string {
	if len(dir) > 1 {
		dir = filepath.Clean(dir)
	}
	out := []string{dir}
	if r, err := filepath.EvalSymlinks(dir); err == nil && r != dir {
		out = append(out, r)
	}
	return out
}

// workingDirAlias returns root as spelled by the working directory's path
// (os.Getwd keeps $PWD's symlinks), when the working directory is inside
// root and that spelling differs; else "".
func workingDirAlias(root string) string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	realWD, err1 := filepath.EvalSymlinks(wd)
	realRoot, err2 := filepath.EvalSymlinks(root)
	if err1 != nil || err2 != nil {
		return ""
	}
	rel, err := filepath.Rel(realRoot, realWD)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	alias := wd
	if rel != "." {
		for range strings.Split(rel, string(filepath.Separator)) {
			alias = filepath.Dir(alias)
		}
	}
	if r, err := filepath.EvalSymlinks(alias); err != nil || r != realRoot || alias == root {
		return ""
	}
	return alias
}
