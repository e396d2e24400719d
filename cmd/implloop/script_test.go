package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
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
			return os.MkdirAll(env.WorkDir+"/.home", 0o755)
		},
	})
}
