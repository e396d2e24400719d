package loop

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/sandbox"
	"github.com/implloop/implloop/settings"
)

// protectedRefs are implloop's ref namespaces (boundary.RunRefPrefix and
// travel's records under refs/implloop/, pulled runs under
// refs/implloop-pull/): read-only inside the sandbox.
var protectedRefs = []string{"refs/implloop", "refs/implloop-pull"}

// startSandbox makes the run's sandbox when --sandbox asks for one, and
// tries it once, so that a system where it cannot run says so before any
// task. The tool's name is recorded with the settings (report, explain).
func (e *engine) startSandbox(ctx context.Context) error {
	e.s.SandboxTool = ""
	if !e.s.Sandbox {
		return nil
	}
	dirs, err := e.stateDirs()
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	allow, err := sandboxAllow(e.s.SandboxAllow, e.o.RepoRoot, home, dirs)
	if err != nil {
		return err
	}
	// Each agent that may make a call has its own config and caches: the
	// run's, and every fallback's (--fallback-agent).
	agentDirs := agent.ConfigDirs(e.agentName(), os.Getenv)
	for _, f := range e.s.Fallbacks {
		name, _ := settings.Fallback(f)
		agentDirs = append(agentDirs, agent.ConfigDirs(name, os.Getenv)...)
	}
	box, err := sandbox.New(sandbox.Options{
		Allow:     allow,
		NoNetwork: e.s.SandboxNetwork == settings.SandboxNetworkNone,
		AgentDirs: agentDirs,
		Caches:    sandbox.Caches(os.Getenv, home),
		State:     []string{dirs.State, dirs.Lock},
		Refs:      protectedRefs,
		Home:      home,
	})
	if err != nil {
		return err
	}
	if err := box.Probe(ctx); err != nil {
		return err
	}
	if err := box.Check(ctx, e.o.RepoRoot); err != nil {
		return err
	}
	e.box = box
	e.s.SandboxTool = box.Name()
	return nil
}

// sandboxAllow resolves --sandbox-allow paths: "~/" from home, relative
// ones from the repository root (a flag's were made absolute from the
// working directory already). A path that does not exist, or one inside
// implloop's state, is refused.
func sandboxAllow(paths []string, root, home string, dirs cache.Dirs) ([]string, error) {
	var out []string
	for _, p := range paths {
		abs := p
		if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
			abs = filepath.Join(home, rest)
		} else if !filepath.IsAbs(p) {
			abs = filepath.Join(root, p)
		}
		r, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, &SettingError{Flag: "sandbox-allow", Msg: fmt.Sprintf("--sandbox-allow %s: %v", p, underlying(err)),
				Hint: "give a directory or file that exists (relative paths in the front matter are from the repository root)"}
		}
		for _, d := range []string{dirs.State, dirs.Lock} {
			if rd, err := filepath.EvalSymlinks(d); err == nil && (r == rd || strings.HasPrefix(r, rd+string(filepath.Separator))) {
				return nil, &SettingError{Flag: "sandbox-allow", Msg: fmt.Sprintf("--sandbox-allow %s: implloop's own state stays read-only in the sandbox", p),
					Hint: "allow another path; the agent's work tree is writable already"}
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// underlying is a path error's cause alone ("no such file or directory").
func underlying(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// sandboxed readies one call in dir for the sandbox (nil when the run has
// none): its argv wrapper and the environment it adds. close ends it.
func (e *engine) sandboxed(ctx context.Context, dir string, env map[string]string) (wrap func([]string) ([]string, error), outEnv map[string]string, close func(), err error) {
	if e.box == nil {
		return nil, env, func() {}, nil
	}
	c, err := e.box.Call(ctx, dir)
	if err != nil {
		return nil, nil, nil, err
	}
	outEnv = maps.Clone(env)
	if outEnv == nil {
		outEnv = map[string]string{}
	}
	maps.Copy(outEnv, c.Env)
	return c.Wrap, outEnv, c.Close, nil
}

// warnSandboxUnused warns of --sandbox-allow, --sandbox-network and
// --sandbox-gates set (flag, front matter or inherited) on a run without
// --sandbox: they have no effect then.
func (e *engine) warnSandboxUnused() {
	if e.s.Sandbox {
		return
	}
	var set []string
	if len(e.s.SandboxAllow) > 0 {
		set = append(set, "--sandbox-allow")
	}
	if e.s.SandboxNetwork != "" {
		set = append(set, "--sandbox-network")
	}
	if e.s.SandboxGates {
		set = append(set, "--sandbox-gates")
	}
	if len(set) > 0 {
		e.emit(Event{Type: EvWarning, Message: strings.Join(set, ", ") + " without --sandbox: no effect (add --sandbox, or sandbox: true in the front matter)"})
	}
}
