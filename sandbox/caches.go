package sandbox

import (
	"path/filepath"
	"runtime"
	"strings"
)

// Caches are the build and package caches an agent's own checks and a
// gate use, as the tools themselves find them: Go's build cache (GOCACHE)
// and module cache (GOMODCACHE), npm's, pip's and cargo's. getenv reads
// the environment, home is the home directory. Whether each exists is
// for [Sandbox.Call] to find out.
func Caches(getenv func(string) string, home string) []string {
	cacheDir := getenv("XDG_CACHE_HOME")
	if runtime.GOOS == "darwin" {
		cacheDir = filepath.Join(home, "Library", "Caches")
	} else if cacheDir == "" || !filepath.IsAbs(cacheDir) {
		cacheDir = filepath.Join(home, ".cache")
	}
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	switch gocache := getenv("GOCACHE"); gocache {
	case "off":
	case "":
		add(filepath.Join(cacheDir, "go-build"))
	default:
		add(gocache)
	}
	if m := getenv("GOMODCACHE"); m != "" {
		add(m)
	} else if gp := getenv("GOPATH"); gp != "" {
		first, _, _ := strings.Cut(gp, string(filepath.ListSeparator))
		add(filepath.Join(first, "pkg", "mod"))
	} else if home != "" {
		add(filepath.Join(home, "go", "pkg", "mod"))
	}
	if home != "" {
		add(filepath.Join(home, ".npm"))
	}
	add(filepath.Join(cacheDir, "pip"))
	cargo := getenv("CARGO_HOME")
	if cargo == "" && home != "" {
		cargo = filepath.Join(home, ".cargo")
	}
	if cargo != "" {
		add(filepath.Join(cargo, "registry"))
		add(filepath.Join(cargo, "git"))
	}
	return out
}
