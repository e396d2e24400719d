package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Options are what a run asked of its sandbox, and what of implloop's own
// it must keep out of the call's reach.
type Options struct {
	// Allow are more paths the call may write (--sandbox-allow): absolute,
	// and they must exist.
	Allow []string
	// NoNetwork cuts the call off the network (--sandbox-network none).
	NoNetwork bool
	// AgentDirs are the agent CLI's own config and cache paths
	// (agent.ConfigDirs): absolute, or "~/" for the home directory. A path
	// ending in "/" is a directory, made when missing (the CLI would make
	// it); any other is a file, writable when it exists.
	AgentDirs []string
	// Caches are build caches the call may write ([Caches]); those that
	// do not exist are left out.
	Caches []string
	// State are implloop's own directories (the journal's, the lock's):
	// read-only inside, whatever else is allowed.
	State []string
	// Refs are implloop's ref namespaces ("refs/implloop"): read-only
	// inside, kept as loose refs (see the package doc).
	Refs []string
	// Home is the home directory "~/" stands for ("": the user's).
	Home string
}

// Sandbox makes the calls of one run: the tool found, the options, and
// each work tree's git layout, read once.
type Sandbox struct {
	tool tool
	o    Options
	home string

	mu      sync.Mutex
	layouts map[string]*layout
	// placeholders counts the calls that use each commondir placeholder
	// (placeholder.go).
	placeholders map[string]int
	// held releases HoldCommon's hold (nil: none).
	held func()
}

// UnavailableError is a sandbox that cannot be made here: no tool
// installed, or one the system does not let run. Hint says what to do.
type UnavailableError struct {
	Msg  string
	Hint string
}

func (e *UnavailableError) Error() string { return e.Msg }

// ErrReftable is a repository whose refs are kept in a reftable: all
// refs share its files, so implloop's cannot be made read-only apart
// from the branches the agent must be able to move.
var ErrReftable = errors.New("the repository keeps its refs in a reftable, where implloop's refs cannot be made read-only apart from the others")

// New finds the platform's sandbox tool (see the package doc) and checks
// the options. An *UnavailableError says the tool is missing and how to
// install it.
func New(o Options) (*Sandbox, error) {
	t, err := findTool()
	if err != nil {
		return nil, err
	}
	home := o.Home
	if home == "" {
		if home, err = os.UserHomeDir(); err != nil {
			home = ""
		}
	}
	for _, p := range o.Allow {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: allowed path %q is not absolute", p)
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("sandbox: allowed path: %w", err)
		}
	}
	return &Sandbox{tool: t, o: o, home: home, layouts: map[string]*layout{}, placeholders: map[string]int{}}, nil
}

// Name is the tool's name, as reports say it: "bubblewrap" or
// "sandbox-exec".
func (s *Sandbox) Name() string { return s.tool.name }

// Reaps reports whether nothing a call starts can outlive it (Linux: the
// call's PID namespace dies with it). Where it can (macOS), a process
// that leaves the call's process group lives on, inside the sandbox.
func (s *Sandbox) Reaps() bool { return s.tool.reaps }

// Probe runs `true` in a sandbox of the kind calls get, once: a system
// that does not let the tool run (user namespaces off, an AppArmor rule)
// fails here, before any task, with an *UnavailableError.
func (s *Sandbox) Probe(ctx context.Context) error {
	argv := s.tool.probe()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	if msg == "" {
		msg = err.Error()
	}
	return &UnavailableError{
		Msg:  fmt.Sprintf("%s cannot make a sandbox on this system: %s", s.tool.name, msg),
		Hint: s.tool.probeHint,
	}
}

// Check reads the git layout of the work tree at dir, as the first call
// there would: a repository the sandbox cannot protect (ErrReftable) is
// refused before any task.
func (s *Sandbox) Check(ctx context.Context, dir string) error {
	_, err := s.layout(ctx, dir)
	return err
}

// Call is one sandboxed call in a work tree: Wrap puts its argv inside,
// Env is what it adds to the call's environment, Close cleans up after.
type Call struct {
	s     *Sandbox
	dir   string
	rules []Rule
	// Env is added to the call's environment (TMPDIR).
	Env     map[string]string
	cleanup []func()
}

// Call readies a sandboxed call whose work tree is dir (the main tree or
// a task's worktree): it reads the tree's git layout (once per dir),
// keeps implloop's refs as loose files and makes the directories the
// rules need (see the package doc). Close the call once it is over.
func (s *Sandbox) Call(ctx context.Context, dir string) (*Call, error) {
	l, err := s.layout(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := l.prepare(s.o.Refs); err != nil {
		return nil, err
	}
	c := &Call{s: s, dir: l.tree, Env: map[string]string{}}
	// The common git directory is writable to every call, a linked
	// worktree's included (its git directory's own commondir exists).
	release, err := s.holdPlaceholder(filepath.Join(l.common, "commondir"))
	if err != nil {
		return nil, err
	}
	c.cleanup = append(c.cleanup, release)
	extra := []Rule{}
	for _, d := range s.agentPaths() {
		extra = append(extra, Rule{Path: d, Write: true})
	}
	for _, d := range s.o.Caches {
		if p, ok := existing(d); ok {
			extra = append(extra, Rule{Path: p, Write: true})
		}
	}
	for _, d := range s.o.Allow {
		if p, ok := existing(d); ok {
			extra = append(extra, Rule{Path: p, Write: true})
		}
	}
	tmp, cleanup, err := s.tool.tmp()
	if err != nil {
		c.Close()
		return nil, err
	}
	if tmp != "" {
		c.Env["TMPDIR"] = tmp
		c.cleanup = append(c.cleanup, cleanup)
		extra = append(extra, Rule{Path: tmp, Write: true})
	}
	c.rules = rulesFor(l, s.o, extra)
	return c, nil
}

// Rules are the call's file-system rules, in the order they apply.
func (c *Call) Rules() []Rule { return c.rules }

// Wrap returns the argv that runs argv inside the sandbox, in the call's
// work tree.
func (c *Call) Wrap(argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	rules := c.rules
	if shown := hiddenExecutable(argv[0], c.dir, c.s.tool.hidden, rules); len(shown) > 0 {
		rules = order(append(append([]Rule(nil), rules...), shown...))
	}
	return c.s.tool.wrap(c.s.tool.bin, rules, !c.s.o.NoNetwork, c.dir, argv), nil
}

// Close ends the call: its private temporary directory goes (macOS), and
// the commondir placeholder once no call uses it.
func (c *Call) Close() {
	for i := len(c.cleanup) - 1; i >= 0; i-- {
		c.cleanup[i]()
	}
	c.cleanup = nil
}

// agentPaths are the agent's config and cache paths, absolute and
// resolved: directories made when missing, files when they exist.
func (s *Sandbox) agentPaths() []string {
	var out []string
	for _, d := range s.o.AgentDirs {
		dir := strings.HasSuffix(d, "/")
		p := strings.TrimSuffix(d, "/")
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if s.home == "" {
				continue
			}
			p = filepath.Join(s.home, rest)
		}
		if !filepath.IsAbs(p) {
			continue
		}
		if dir {
			// As the CLI would on its first run; a failure leaves it out.
			_ = os.MkdirAll(p, 0o700)
		}
		if r, ok := existing(p); ok {
			out = append(out, r)
		}
	}
	return out
}

// existing is p with symlinks resolved, when it exists.
func existing(p string) (string, bool) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	return r, true
}

// hiddenExecutable are the read-only rules that show argv0 when the
// sandbox's own /tmp or /run would hide it (an agent, or a PATH entry
// leading to it, in a temporary directory): at the path it is run by, its
// file, or a symlink to where its symlinks lead (a script finds its own
// files from there); and that file too when it is hidden. None when
// nothing of it is hidden, or what is hidden is in view through rules
// already (an agent script in the work tree).
func hiddenExecutable(argv0, dir string, hidden []string, rules []Rule) []Rule {
	p := argv0
	if !strings.Contains(p, "/") {
		lp, err := exec.LookPath(p)
		if err != nil {
			return nil
		}
		p = lp
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	r, ok := existing(p)
	if !ok {
		return nil
	}
	isHidden := func(q string) bool {
		for _, r := range rules {
			if within(q, r.Path) {
				return false
			}
		}
		for _, h := range hidden {
			if within(q, h) {
				return true
			}
		}
		return false
	}
	// An executable in a directory of its own under a hidden root (a
	// clone in /tmp with its CLI installed in it) needs its neighbours
	// too: a node or python CLI reads its package and modules from around
	// it. That directory is shown, read-only, whole.
	var out []Rule
	shown := map[string]bool{}
	for _, q := range []string{p, r} {
		if !isHidden(q) {
			continue
		}
		if top := topUnder(q, hidden); top != "" {
			if !shown[top] {
				shown[top] = true
				out = append(out, Rule{Path: top})
			}
			continue
		}
		if q == p {
			out = append(out, Rule{Path: p, From: r, Link: r != p})
		} else {
			out = append(out, Rule{Path: r})
		}
	}
	return out
}

// topUnder is the directory right under the hidden root q is in, holding
// q ("/tmp/clone" for /tmp/clone/.e2e/bin/codex); "" when q lies in the
// root itself.
func topUnder(q string, hidden []string) string {
	for _, h := range hidden {
		if !within(q, h) || q == h {
			continue
		}
		first, rest, _ := strings.Cut(strings.TrimPrefix(q, h+"/"), "/")
		if rest == "" {
			return ""
		}
		return filepath.Join(h, first)
	}
	return ""
}

// within reports whether p is root or below it.
func within(p, root string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}
