package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/sandbox"
)

var update = os.Getenv("UPDATE_SCRIPTS") != ""

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"implloop": func() { os.Exit(run(os.Args[1:], newIOStreams())) },
	})
}

// TestScript runs the CLI end-to-end tests in testdata/script/*.txtar. Each
// script runs in its own temporary directory with implloop on PATH.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		UpdateScripts:       update,
		RequireExplicitExec: false,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exits CODE PROG ARGS...: run PROG and require exit status CODE,
			// keeping stdout and stderr for the following checks.
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits CODE PROG [ARGS...]")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("%s: %v", args[1], err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("%s exited %d, want %d", args[1], got, want)
				}
			},
			"snapshot":     cmdSnapshot,
			"journalcheck": cmdJournalCheck,
			"runid":        cmdRunID,
			"waitfile":     cmdWaitFile,
			"replace":      cmdReplace,
			"gitserver":    cmdGitServer,
			"ndjson":       cmdNDJSON,
			"sqlexec":      cmdSQLExec,
		},
		// [sandbox]: bubblewrap can make a sandbox here. A missing bwrap
		// is a failure (make test installs it), not a skip.
		Condition: func(cond string) (bool, error) {
			if cond != "sandbox" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			return sandboxWorks()
		},
		Setup: func(env *testscript.Env) error {
			// git needs an identity and must not read the developer's config.
			env.Setenv("HOME", env.WorkDir+"/.home")
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GIT_AUTHOR_NAME", "implloop test")
			env.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
			env.Setenv("GIT_COMMITTER_NAME", "implloop test")
			env.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
			env.Setenv("GIT_CONFIG_COUNT", "1")
			env.Setenv("GIT_CONFIG_KEY_0", "init.defaultBranch")
			env.Setenv("GIT_CONFIG_VALUE_0", "main")
			// The repository's own files (scripts/, testdata/demo), and the
			// go command's caches, for scripts that run the demo or init a
			// Go project: with HOME moved they would start cold.
			env.Setenv("IMPLLOOP_SRC", srcRoot)
			for k, v := range goCaches() {
				env.Setenv(k, v)
			}
			// After every script, as restic checks its repository after
			// every integration test: each journal the script left must
			// keep its invariants.
			env.Defer(func() { checkJournalsUnder(env.T(), env.WorkDir) })
			return os.MkdirAll(env.WorkDir+"/.home", 0o755)
		},
	})
}

// snapshot [-exclude PATTERN]... DIR FILE: writes to FILE one line per
// entry under DIR (DIR included): its path, type, size, permissions,
// modification time in nanoseconds, link target, and a regular file's
// sha256. Two snapshots compared with cmp prove that nothing in between
// wrote to DIR, not even a timestamp. PATTERN (filepath.Match) is matched
// against an entry's path relative to DIR and against its base name; a
// matching directory is skipped whole.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: snapshot [-exclude PATTERN]... DIR FILE")
	}
	var excludes []string
	fl := flag.NewFlagSet("snapshot", flag.ContinueOnError)
	fl.Func("exclude", "skip entries matching `PATTERN`", func(p string) error {
		excludes = append(excludes, p)
		return nil
	})
	if err := fl.Parse(args); err != nil || fl.NArg() != 2 {
		ts.Fatalf("usage: snapshot [-exclude PATTERN]... DIR FILE")
	}
	root := ts.MkAbs(fl.Arg(0))
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		for _, x := range excludes {
			if m, _ := filepath.Match(x, rel); m || matchBase(x, d.Name()) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var link, sum string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			link, _ = os.Readlink(p)
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(data)
			sum = hex.EncodeToString(h[:])
		}
		fmt.Fprintf(&b, "%s|%s|%d|%o|%d|%s|%s\n", rel, fi.Mode().Type(), fi.Size(), fi.Mode().Perm(), fi.ModTime().UnixNano(), link, sum)
		return nil
	})
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(fl.Arg(1)), []byte(b.String()), 0o644))
}

func matchBase(pattern, name string) bool {
	m, _ := filepath.Match(pattern, name)
	return m && !strings.Contains(pattern, "/")
}

// journalcheck: opens the journal of the repository around the current
// directory and fails on any broken invariant (cache.(*Journal).Check, as
// the Go tests' checkJournal does after every run). For scripts that kill,
// interrupt or resume.
func cmdJournalCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: journalcheck")
	}
	j, err := cache.Open(ts.MkAbs("."))
	if err != nil {
		ts.Fatalf("journalcheck: %v", err)
	}
	defer j.Close()
	problems, err := j.Check(identity.DigestCanonical)
	ts.Check(err)
	for _, p := range problems {
		ts.Logf("journal invariant broken: %s", p)
	}
	if len(problems) > 0 {
		ts.Fatalf("journalcheck: %d broken invariant(s)", len(problems))
	}
}

// checkJournalsUnder fails t when a journal of a repository under dir
// breaks an invariant (cache.(*Journal).Check). A script that breaks its
// journal on purpose says why in a file .no-journalcheck at its root.
func checkJournalsUnder(t testscript.T, dir string) {
	if _, err := os.Stat(filepath.Join(dir, ".no-journalcheck")); err == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if d.Name() != ".git" {
			return nil
		}
		if _, err := os.Stat(filepath.Join(path, "implloop", "state.db")); err == nil {
			checkJournal(t, filepath.Dir(path))
		}
		return filepath.SkipDir
	})
}

func checkJournal(t testscript.T, repo string) {
	j, err := cache.OpenReadOnly(repo)
	if err != nil {
		t.Fatal(fmt.Sprintf("journal of %s: %v", repo, err))
		return
	}
	defer j.Close()
	problems, err := j.Check(identity.DigestCanonical)
	if err != nil {
		t.Fatal(fmt.Sprintf("journal of %s: check: %v", repo, err))
		return
	}
	for _, p := range problems {
		t.Log(fmt.Sprintf("journal of %s: invariant broken: %s", repo, p))
	}
	if len(problems) > 0 {
		t.Fatal(fmt.Sprintf("journal of %s: %d broken invariant(s) after the script", repo, len(problems)))
	}
}

// ndjson [-where KEY=VALUE]... [-check KEY=REGEXP]... [-uniq] FILE FIELD...:
// reads FILE, one JSON object a line (every line must be one), keeps the
// objects whose KEY equals VALUE (compared as text), and prints for each the
// FIELDs: a lone string field as itself, else a compact JSON array. A FIELD
// is a dotted path (tasks.0.action); len(PATH) is its length. -check fails
// unless every kept object's KEY matches REGEXP; -uniq drops repeated lines.
// It stands in for jq, which a machine may lack.
func cmdNDJSON(ts *testscript.TestScript, neg bool, args []string) {
	var wheres, checks multiFlag
	fl := flag.NewFlagSet("ndjson", flag.ContinueOnError)
	fl.Var(&wheres, "where", "KEY=VALUE")
	fl.Var(&checks, "check", "KEY=REGEXP")
	uniq := fl.Bool("uniq", false, "drop repeated lines")
	if err := fl.Parse(args); err != nil || fl.NArg() < 1 || neg {
		ts.Fatalf("usage: ndjson [-where KEY=VALUE]... [-check KEY=REGEXP]... [-uniq] FILE FIELD...")
	}
	b, err := os.ReadFile(ts.MkAbs(fl.Arg(0)))
	ts.Check(err)
	seen := map[string]bool{}
	var out strings.Builder
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil || obj == nil {
			ts.Fatalf("ndjson: line %d is not a JSON object: %q", i+1, line)
		}
		if !ndjsonKeep(obj, wheres) {
			continue
		}
		for _, c := range checks {
			k, re, _ := strings.Cut(c, "=")
			if v := ndjsonText(ndjsonField(obj, k)); !regexp.MustCompile(re).MatchString(v) {
				ts.Fatalf("ndjson: line %d: %s is %q, does not match %s", i+1, k, v, re)
			}
		}
		fields := fl.Args()[1:]
		if len(fields) == 0 {
			continue
		}
		var text string
		if v := ndjsonField(obj, fields[0]); len(fields) == 1 {
			text = ndjsonText(v)
		} else {
			vals := make([]any, len(fields))
			for k, f := range fields {
				vals[k] = ndjsonField(obj, f)
			}
			j, err := json.Marshal(vals)
			ts.Check(err)
			text = string(j)
		}
		if *uniq && seen[text] {
			continue
		}
		seen[text] = true
		out.WriteString(text + "\n")
	}
	_, err = ts.Stdout().Write([]byte(out.String()))
	ts.Check(err)
}

func ndjsonKeep(obj map[string]any, wheres []string) bool {
	for _, w := range wheres {
		k, want, _ := strings.Cut(w, "=")
		if ndjsonText(ndjsonField(obj, k)) != want {
			return false
		}
	}
	return true
}

// ndjsonField reads a dotted path (a.b.0.c) or len(path) from obj; nil
// where the path leads nowhere.
func ndjsonField(obj map[string]any, path string) any {
	if inner, ok := strings.CutPrefix(path, "len("); ok {
		switch v := ndjsonField(obj, strings.TrimSuffix(inner, ")")).(type) {
		case []any:
			return len(v)
		case map[string]any:
			return len(v)
		case string:
			return len(v)
		}
		return nil
	}
	var v any = obj
	for _, p := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(c) {
				return nil
			}
			v = c[n]
		default:
			return nil
		}
	}
	return v
}

// ndjsonText is v as jq -r prints it: a string as itself, else JSON.
func ndjsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	j, _ := json.Marshal(v)
	return string(j)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// sqlexec DB SQL: runs SQL on the SQLite database DB with the journal's own
// driver, so no sqlite3 command is needed (a script that forges a
// journal's schema, say).
func cmdSQLExec(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sqlexec DB SQL")
	}
	db, err := sql.Open("sqlite", ts.MkAbs(args[0]))
	ts.Check(err)
	defer db.Close()
	_, err = db.Exec(args[1])
	ts.Check(err)
}

// runid VAR [N]: sets VAR to the id of the newest run of the repository
// around the current directory (N: the N-th newest, 1-based).
func cmdRunID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: runid VAR [N]")
	}
	n := 1
	if len(args) == 2 {
		var err error
		if n, err = strconv.Atoi(args[1]); err != nil || n < 1 {
			ts.Fatalf("runid: N must be a positive number")
		}
	}
	j, err := cache.OpenReadOnly(ts.MkAbs("."))
	if err != nil {
		ts.Fatalf("runid: %v", err)
	}
	defer j.Close()
	runs, err := j.ListRuns()
	ts.Check(err)
	if len(runs) < n {
		ts.Fatalf("runid: %d run(s), want at least %d", len(runs), n)
	}
	ts.Setenv(args[0], runs[n-1].ID)
}

// replace FILE OLD NEW: replaces every OLD in FILE with NEW, literally,
// and fails when FILE has no OLD: an edit by hand, without GNU sed's -i
// (BSD sed reads -i differently), so the scripts run on macOS too.
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	if !strings.Contains(string(b), args[1]) {
		ts.Fatalf("replace: %s has no %q", args[0], args[1])
	}
	fi, err := os.Stat(path)
	ts.Check(err)
	ts.Check(os.WriteFile(path, []byte(strings.ReplaceAll(string(b), args[1], args[2])), fi.Mode().Perm()))
}

// waitfile [-timeout D] FILE: waits until FILE exists (default: 20s).
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	fl := flag.NewFlagSet("waitfile", flag.ContinueOnError)
	timeout := fl.Duration("timeout", 20*time.Second, "how long to wait")
	if err := fl.Parse(args); err != nil || fl.NArg() != 1 || neg {
		ts.Fatalf("usage: waitfile [-timeout D] FILE")
	}
	path := ts.MkAbs(fl.Arg(0))
	for deadline := time.Now().Add(*timeout); ; {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s did not appear in %s", fl.Arg(0), *timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// srcRoot is the repository's root (this package is cmd/implloop).
var srcRoot, _ = filepath.Abs(filepath.Join("..", ".."))

// goCaches are the go command's cache directories as this test process
// sees them (GOCACHE, GOMODCACHE), read once.
var goCaches = sync.OnceValue(func() map[string]string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil
	}
	return map[string]string{"GOCACHE": lines[0], "GOMODCACHE": lines[1]}
})

// sandboxWorks reports whether --sandbox can run here: an error when its
// tool is not installed, false when the system does not let it run
// (user namespaces off). Probed once.
var sandboxWorks = sync.OnceValues(func() (bool, error) {
	s, err := sandbox.New(sandbox.Options{})
	if err != nil {
		return false, fmt.Errorf("%v (scripts/install-bwrap.sh installs it; make test runs it)", err)
	}
	return s.Probe(context.Background()) == nil, nil
})
