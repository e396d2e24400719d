package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/identity"
	"github.com/implloop/implloop/settings"
)

type idOptions struct {
	io        *ioStreams
	role      string
	model     string
	agent     string
	taskID    string
	attempt   int
	artifacts []string
	env       []string
	project   string
	explain   bool
}

func newIDCmd(io *ioStreams) *cobra.Command {
	return newIDCmdWith(io, idRun)
}

// newIDCmdWith takes the function that does the work, so a test can check
// flag parsing alone.
func newIDCmdWith(io *ioStreams, runF func(*idOptions) error) *cobra.Command {
	opts := &idOptions{io: io}
	cmd := &cobra.Command{
		Use:   "id",
		Short: "Print the identity of a prompt read on stdin (read-only)",
		Long: `Print the identity implloop gives an agent call with the prompt read on
stdin, for outside tools (record/replay, provenance) and for checking by hand.

The prompt is normalized first for the project around the working directory
(the git repository root, else the directory itself; --project to choose):
paths under the project, the home directory and temp directories, date-times,
UUIDs and run ids become fixed tokens, so the same prompt on another machine
or in another run has the same identity. docs/identity.md lists every rule
and every field that is hashed, and why.

--env takes variable NAMES only: the names are hashed, values never are.
--explain prints the canonical preimage (RFC 8785 JSON) that is hashed,
instead of the identity. Nothing is written anywhere.

` + exitStatusHelp(plainExits...),
		Example: `  echo 'add a /health endpoint' | implloop id --model sonnet
  implloop id --agent claude --attempt 2 --env GITHUB_TOKEN --explain < prompt.md`,
		Args:              exactArgs(0, "no arguments (the prompt is read on stdin)"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runF(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.role, "role", "implement", "the unit's role")
	f.StringVar(&opts.model, "model", "", "the model (default: the agent's own)")
	f.StringVar(&opts.agent, "agent", "exec", "the agent backend's name")
	f.StringVar(&opts.taskID, "task-id", "", "the task's id, when the prompt is for a task")
	f.IntVar(&opts.attempt, "attempt", 1, "the attempt number, from 1")
	f.StringArrayVar(&opts.artifacts, "artifact", nil, "hash of a dependency's artifact (repeatable; order does not matter)")
	f.StringArrayVar(&opts.env, "env", nil, "NAME of an environment variable passed to the agent (repeatable; never NAME=VALUE)")
	f.StringVar(&opts.project, "project", "", "the project directory (default: the git repository around the working directory)")
	f.BoolVar(&opts.explain, "explain", false, "print the canonical preimage JSON instead of the identity")
	_ = cmd.RegisterFlagCompletionFunc("agent", completeFixed(settings.Agents()...))
	return cmd
}

func idRun(opts *idOptions) error {
	hint := "run 'implloop id --help' for usage"
	if opts.attempt < 1 {
		return usagef(hint, "--attempt %d: attempts count from 1", opts.attempt)
	}
	for _, e := range opts.env {
		if name, _, ok := strings.Cut(e, "="); ok {
			return usagef("pass the name alone: --env "+name, "--env %s=...: only variable names are hashed, never values", name)
		}
		if !identity.ValidEnvName(e) { // the rule every preimage's env is held to
			return usagef(hint, "--env %q is not a variable name", e)
		}
	}
	for _, a := range opts.artifacts {
		if strings.TrimSpace(a) == "" {
			return usagef(hint, "--artifact needs a hash")
		}
	}
	if opts.role == "" || opts.agent == "" {
		return usagef(hint, "--role and --agent must not be empty")
	}
	project, err := idProjectDir(opts)
	if err != nil {
		return err
	}

	prompt, err := io.ReadAll(opts.io.In)
	if err != nil {
		return errorf("", "reading the prompt from stdin: %w", err)
	}
	if !utf8.Valid(prompt) {
		return errorf("convert the prompt to UTF-8 first", "the prompt on stdin is not valid UTF-8")
	}

	env := identity.EnvFor(project)
	p := identity.Preimage{
		Role:      opts.role,
		Agent:     opts.agent,
		Model:     opts.model,
		Prompt:    identity.Normalize(string(prompt), env),
		Attempt:   opts.attempt,
		Artifacts: opts.artifacts,
		Env:       opts.env,
	}
	if opts.taskID != "" {
		p.Task = &identity.TaskInput{ID: opts.taskID}
	}
	canonical, err := identity.Canonical(p)
	if err != nil { // every input but the prompt is a flag
		return usagef(hint, "%s", strings.TrimPrefix(err.Error(), "identity: "))
	}
	if opts.explain {
		_, err = fmt.Fprintf(opts.io.Out, "%s\n", canonical)
	} else {
		_, err = fmt.Fprintln(opts.io.Out, identity.DigestCanonical(canonical))
	}
	return err
}

// idProjectDir is --project, else the git repository root around the
// working directory, else the working directory.
func idProjectDir(opts *idOptions) (string, error) {
	if opts.project != "" {
		dir := opts.project
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(opts.io.workingDir, dir)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return "", usagef("run 'implloop id --help' for usage", "--project %s: not a directory", opts.project)
		}
		return dir, nil
	}
	wd := opts.io.workingDir
	if top, err := gitToplevel(wd); err == nil && top != "" {
		return top, nil
	}
	return wd, nil
}
