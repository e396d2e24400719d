package sandbox

import (
	"os"
	"path/filepath"
)

// bubblewrap is the Linux tool's name.
const bubblewrap = "bubblewrap"

// bwrapInstallHint says how to install bubblewrap.
const bwrapInstallHint = "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap), or run without --sandbox"

// bwrapProbeHint says what to do when bwrap is there but cannot make
// namespaces.
const bwrapProbeHint = "bubblewrap needs unprivileged user namespaces: enable them (sysctl kernel.unprivileged_userns_clone=1; " +
	"on Ubuntu 24.04 and later, an AppArmor profile that allows bwrap to use them, see docs/agents.md), or run without --sandbox"

// hiddenRoots are the directories bwrapArgs replaces with empty ones.
var hiddenRoots = []string{"/tmp", "/run"}

// bwrapBase are the options every call and the probe get: a PID namespace
// of its own that dies with bwrap, its own session and IPC, no
// capabilities (bwrap run by root would keep them), the host's files
// read-only, fresh /dev and /proc, and empty /tmp and /run.
//
// The command is the namespace's PID 1 (--as-pid-1): when it exits, the
// kernel kills everything left in the namespace and waits for it before
// bwrap sees the exit, so nothing of the call runs once bwrap has exited.
// (With bwrap's own init as PID 1, bwrap exits as soon as that init
// reports the command's status, while the rest may still run for a
// moment.) Orphans are the command's to reap; the ones it does not stay
// zombies until the call ends.
//
// Run by root, the call also gets a user namespace where it is an
// ordinary user (sandboxUID, which the host's root maps to): an agent
// whose CLI sandboxes its own commands with bubblewrap (codex) can then
// make a user namespace of its own, which a root without capabilities
// cannot (mapping uid 0 takes CAP_SETFCAP). Others run bwrap without
// privileges, in a user namespace already, as themselves.
func bwrapBase(network, root bool) []string {
	args := []string{
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--as-pid-1", "--unshare-ipc", "--cap-drop", "ALL",
	}
	if root {
		args = append(args, "--unshare-user", "--uid", sandboxUID, "--gid", sandboxUID)
	}
	if !network {
		args = append(args, "--unshare-net")
	}
	args = append(args,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--tmpfs", "/run",
	)
	// The resolver's configuration, when /etc/resolv.conf points into
	// /run (systemd-resolved, resolvconf): name lookups keep working.
	if p, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && within(p, "/run") {
		args = append(args, "--ro-bind", p, p)
	}
	return args
}

// sandboxUID is the user root's calls run as (see bwrapBase).
const sandboxUID = "1000"

// bwrapArgs is the argv that runs argv with bwrap (at bin) under rules,
// in dir.
func bwrapArgs(bin string, rules []Rule, network bool, dir string, argv []string) []string {
	args := append([]string{bin}, bwrapBase(network, os.Geteuid() == 0)...)
	for _, r := range rules {
		if r.Path == "/" {
			continue // the root's rule is the base's
		}
		src := r.Path
		if r.From != "" {
			src = r.From
		}
		switch {
		case r.Link:
			args = append(args, "--symlink", src, r.Path)
		case r.Write:
			args = append(args, "--bind", src, r.Path)
		default:
			args = append(args, "--ro-bind", src, r.Path)
		}
	}
	args = append(args, "--setenv", "TMPDIR", "/tmp", "--chdir", dir, "--")
	return append(args, argv...)
}

// bwrapTool is bubblewrap at bin.
func bwrapTool(bin string) tool {
	return tool{
		name: bubblewrap,
		bin:  bin,
		probe: func() []string {
			return append(append([]string{bin}, bwrapBase(true, os.Geteuid() == 0)...), "--", "true")
		},
		probeHint: bwrapProbeHint,
		wrap:      bwrapArgs,
		tmp:       func() (string, func(), error) { return "", nil, nil },
		hidden:    hiddenRoots,
		reaps:     true,
	}
}

// lookBwrap finds bwrap on PATH.
func lookBwrap(look func(string) (string, error)) (tool, error) {
	bin, err := look("bwrap")
	if err != nil {
		return tool{}, &UnavailableError{Msg: "bubblewrap (bwrap) is not installed (not found in $PATH)", Hint: bwrapInstallHint}
	}
	return bwrapTool(bin), nil
}

// tool is a sandbox tool: how to probe it, wrap a call, and give the call
// its private temporary directory.
type tool struct {
	name, bin string
	probe     func() []string
	probeHint string
	wrap      func(bin string, rules []Rule, network bool, dir string, argv []string) []string
	// tmp makes a call's private temporary directory, "" when the tool
	// makes its own.
	tmp func() (dir string, cleanup func(), err error)
	// hidden are directories the sandbox hides (the agent's executable is
	// shown when it lives there).
	hidden []string
	// reaps: nothing a call starts outlives it (a PID namespace).
	reaps bool
}
