package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// seatbelt is the macOS tool's name.
const seatbelt = "sandbox-exec"

// seatbeltProfile is the Seatbelt profile (SBPL) of a call under rules.
// Seatbelt applies the last rule that matches, so the rules go in their
// order (deeper after shallower), each a subpath; a pinned path also gets
// a deny of unlinking it (a rename unlinks its source), for itself alone:
// what is inside stays writable.
func seatbeltProfile(rules []Rule, network bool) string {
	var b strings.Builder
	b.WriteString("(version 1)\n")
	b.WriteString("(allow default)\n")
	b.WriteString("; Read-only everywhere but where the rules below allow.\n")
	b.WriteString("(deny file-write*)\n")
	b.WriteString("(allow file-write* (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/dtracehelper\") (regex #\"^/dev/tty\") (regex #\"^/dev/fd/\"))\n")
	for _, r := range rules {
		verb := "deny"
		if r.Write {
			verb = "allow"
		}
		fmt.Fprintf(&b, "(%s file-write* (subpath %s))\n", verb, sbplString(r.Path))
		if r.Write && r.Pin {
			fmt.Fprintf(&b, "(deny file-write-unlink (literal %s))\n", sbplString(r.Path))
		}
	}
	b.WriteString("; No signals to processes outside the sandbox (implloop's among them).\n")
	b.WriteString("(deny signal)\n")
	b.WriteString("(allow signal (target same-sandbox))\n")
	if !network {
		b.WriteString("(deny network*)\n")
	}
	return b.String()
}

// sbplString quotes s as an SBPL string literal.
func sbplString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// seatbeltArgs is the argv that runs argv with sandbox-exec (at bin)
// under rules; the call's working directory is its own (dir is not
// needed).
func seatbeltArgs(bin string, rules []Rule, network bool, _ string, argv []string) []string {
	return append([]string{bin, "-p", seatbeltProfile(rules, network)}, argv...)
}

// seatbeltTool is sandbox-exec at bin.
func seatbeltTool(bin string) tool {
	return tool{
		name:      seatbelt,
		bin:       bin,
		probe:     func() []string { return []string{bin, "-p", "(version 1)\n(allow default)\n", "/usr/bin/true"} },
		probeHint: "sandbox-exec is part of macOS (/usr/bin/sandbox-exec); run without --sandbox where it is missing",
		wrap:      seatbeltArgs,
		tmp:       privateTemp,
	}
}

// privateTemp makes a call's own TMPDIR (macOS has no private /tmp).
func privateTemp() (string, func(), error) {
	d, err := os.MkdirTemp("", "implloop-sandbox-")
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: %w", err)
	}
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		os.RemoveAll(d)
		return "", nil, fmt.Errorf("sandbox: %w", err)
	}
	return r, func() { os.RemoveAll(r) }, nil
}
