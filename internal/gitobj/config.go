package gitobj

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// settings is what git's configuration says of writing objects, read as
// a superset (see the package comment): a key counts as set when its
// name appears anywhere in a file git may read.
type settings struct {
	shared   bool // core.sharedRepository
	fsync    bool // core.fsync, core.fsyncObjectFiles, core.fsyncMethod
	encoding bool // i18n.commitEncoding
	format   bool // extensions.objectFormat
	compat   bool // extensions.compatObjectFormat
	unsure   string
	// want are other keys looked for (ConfigMentions); wanted the first
	// one found set to anything but a harmless value.
	want   []Key
	wanted string
}

// readSettings searches the configuration files git would read for a
// repository with the given directories, and the configuration in env
// (the environment git would run with, later entries winning).
func readSettings(gitDir, commonDir string, env map[string]string, want ...Key) settings {
	s := settings{want: want}
	if p, ok := env["GIT_CONFIG_PARAMETERS"]; ok {
		s.search(p)
		if strings.Contains(strings.ToLower(p), "include") {
			s.unsure = "GIT_CONFIG_PARAMETERS includes a file"
		}
	}
	if c, ok := env["GIT_CONFIG_COUNT"]; ok && c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			s.unsure = "GIT_CONFIG_COUNT is not a count"
		}
		for i := 0; i < n; i++ {
			k := env["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
			s.search(k)
			if strings.Contains(strings.ToLower(k), "include") {
				s.unsure = "GIT_CONFIG_KEY_" + strconv.Itoa(i) + " includes a file"
			}
		}
	}
	var files []string
	if v := env["GIT_CONFIG_NOSYSTEM"]; !isTrue(v) {
		if p, ok := env["GIT_CONFIG_SYSTEM"]; ok {
			files = append(files, p)
		} else {
			files = append(files, systemConfigs(env)...)
		}
	}
	home := env["HOME"]
	if p, ok := env["GIT_CONFIG_GLOBAL"]; ok {
		files = append(files, p)
	} else {
		if x := env["XDG_CONFIG_HOME"]; x != "" {
			files = append(files, filepath.Join(x, "git", "config"))
		} else if home != "" {
			files = append(files, filepath.Join(home, ".config", "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	files = append(files, filepath.Join(commonDir, "config"))
	if gitDir != "" {
		files = append(files, filepath.Join(gitDir, "config.worktree"))
	}
	for _, f := range files {
		s.file(f, home, 0)
	}
	return s
}

// isTrue is git's boolean true for an environment variable.
func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	n, err := strconv.Atoi(v)
	return err == nil && n != 0
}

// systemConfigs are the places git's system configuration may be: git
// compiles its path in, so every likely one is read (reading one git does
// not read only makes the Writer more careful).
func systemConfigs(env map[string]string) []string {
	out := []string{"/etc/gitconfig"}
	if p, err := exec.LookPath("git"); err == nil {
		cands := []string{p}
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			cands = append(cands, r)
		}
		for _, c := range cands {
			prefix := filepath.Dir(filepath.Dir(c))
			if prefix != "/usr" {
				out = append(out, filepath.Join(prefix, "etc", "gitconfig"))
			}
		}
	}
	return out
}

// search notes the keys text mentions.
func (s *settings) search(text string) {
	t := strings.ToLower(text)
	s.shared = s.shared || strings.Contains(t, "sharedrepository")
	s.fsync = s.fsync || strings.Contains(t, "fsync")
	s.encoding = s.encoding || strings.Contains(t, "commitencoding")
	s.compat = s.compat || strings.Contains(t, "compatobjectformat")
	s.format = s.format || strings.Contains(t, "objectformat")
	for _, k := range s.want {
		if s.wanted == "" && k.setIn(t) {
			s.wanted = k.Name
		}
	}
}

// file searches one configuration file and the files it includes; a
// file that is not there is no configuration, as for git.
func (s *settings) file(path, home string, depth int) {
	if s.unsure != "" {
		return
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || isNotDir(err) {
		return
	}
	if err != nil {
		s.unsure = "cannot read " + path + ": " + err.Error()
		return
	}
	text := string(b)
	s.search(text)
	if !strings.Contains(strings.ToLower(text), "include") {
		return
	}
	if depth >= 10 {
		s.unsure = "includes nested too deep in " + path
		return
	}
	incs, ok := includes(text)
	if !ok {
		s.unsure = "cannot read the includes of " + path
		return
	}
	for _, inc := range incs {
		switch {
		case strings.HasPrefix(inc, "~/"):
			if home == "" {
				s.unsure = "an include of " + path + " names ~ without HOME"
				return
			}
			inc = filepath.Join(home, inc[2:])
		case strings.HasPrefix(inc, "%(prefix)/") || strings.HasPrefix(inc, "~"):
			s.unsure = "an include of " + path + " is not a plain path"
			return
		case !filepath.IsAbs(inc):
			inc = filepath.Join(filepath.Dir(path), inc)
		}
		s.file(inc, home, depth+1)
	}
}

func isNotDir(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// includes lists the path of every include and includeIf section of a
// configuration file's text, whatever the condition; ok is false when a
// line of such a section is not plain enough to read for sure (quotes,
// escapes, continued lines).
func includes(text string) (paths []string, ok bool) {
	in := false
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if strings.HasPrefix(l, "[") {
			end := strings.IndexByte(l, ']')
			if end < 0 {
				return nil, false
			}
			name := strings.ToLower(l[1:end])
			if i := strings.IndexAny(name, " \t\"."); i >= 0 {
				name = name[:i]
			}
			in = name == "include" || name == "includeif"
			l = strings.TrimSpace(l[end+1:])
		}
		if !in || l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			return nil, false // a value going on: its next line is not a header
		}
		key, val, _ := strings.Cut(l, "=")
		if strings.ToLower(strings.TrimSpace(key)) != "path" {
			continue
		}
		if i := strings.IndexAny(val, "#;"); i >= 0 {
			val = val[:i]
		}
		val = strings.TrimSpace(val)
		if val == "" || strings.ContainsAny(val, "\"\\") {
			return nil, false
		}
		paths = append(paths, val)
	}
	return paths, true
}

// Key is a configuration key ConfigMentions looks for: Name is its last
// part, lowercase ("logallrefupdates"); Harmless are the values (as
// written, lowercase) it may have all the same.
type Key struct {
	Name     string
	Harmless []string
}

// setIn reports whether text (lowercase) may set k to anything but a
// harmless value: it mentions k's name other than on lines that are
// plainly `name = value` with a harmless value (`name` alone, which is
// true, when "true" is one). A mention anywhere else (the configuration
// of the environment, a value quoted, continued or commented, another
// key's value) counts.
func (k Key) setIn(text string) bool {
	if !strings.Contains(text, k.Name) {
		return false
	}
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, k.Name) {
			continue
		}
		name, val, eq := strings.Cut(strings.TrimSpace(strings.TrimSuffix(line, "\r")), "=")
		if strings.TrimSpace(name) != k.Name {
			return true
		}
		val = strings.TrimSpace(val)
		if !eq {
			val = "true"
		}
		if !slices.Contains(k.Harmless, val) {
			return true
		}
	}
	return false
}

// ConfigMentions reports whether git's configuration for r may set one
// of keys to anything but a value harmless to the caller, read as the
// Writer reads it: a superset, a key counting as set when its name
// appears anywhere in a file git may read (or in the configuration
// r.Env and the environment give) other than on a plain line giving it
// a harmless value. why says which key, or why it cannot tell (then
// mentioned is true too); r.CommonDir must be known.
func ConfigMentions(r Repo, keys ...Key) (why string, mentioned bool) {
	if r.CommonDir == "" || !filepath.IsAbs(r.CommonDir) {
		return "the common directory is not known", true
	}
	for _, kv := range r.Env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GIT_DIR" || k == "GIT_COMMON_DIR" {
			return k + " is given", true
		}
	}
	s := readSettings(r.GitDir, r.CommonDir, environ(r.Env), keys...)
	switch {
	case s.unsure != "":
		return "git's configuration: " + s.unsure, true
	case s.wanted != "":
		return s.wanted + " may be set", true
	}
	return "", false
}
