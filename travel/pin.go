package travel

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/implloop/implloop/internal/gitcmd"
)

// # Signing and verifying as a worker started
//
// git signs (`commit-tree -S`, and `push` when push.gpgSign says so) and
// verifies (`log --format=%G?`) with what its configuration says at that
// moment: the format, the key and the program that signs, the allowed
// signers and revoked keys it verifies against. A worker's agents share
// that configuration, so a worker reads it once, before any agent ran
// (LearnSigning), and each git that signs or verifies on its behalf gets
// those values as command-line configuration (`git -c key=value`), which
// wins over every configuration file. A key that was not set is pinned to
// what git does without it: the program's default name (gpg, gpgsm,
// ssh-keygen), openpgp, push.gpgSign false, minTrustLevel undefined, no
// revoked keys and no allowed signers (os.DevNull: empty files; git says
// U, not allowed, of an SSH signature then, where it says N without the
// file, which a pull makes E, cannot be checked: neither is trusted).
//
// Without user.signingKey, git signs OpenPGP and X.509 with the
// committer's identity as the key's name: the records' identity that
// Signing learned, which every commit it signs names as its committer,
// is pinned as the key. SSH has no such default: git runs
// gpg.ssh.defaultKeyCommand for the key, and that command is pinned, but
// a user.signingKey set later wins over it (git has no way to say a key
// is unset on its command line).
//
// What is pinned is the configuration, not the files it names: the key,
// the allowed signers file and the keyring are read as they are when git
// reads them.

// configRegexp selects the keys a worker learns once: those git signs
// and verifies by (gpg-interface.c: user.signingKey and gpg.*; push
// signs with them when push.gpgSign says so), and those whose values
// Signing keeps (SignsRuns, recordsIdent), which are reported changed
// but not given to git (their values are Signing's).
const configRegexp = `^(gpg\.|user\.(signingkey|name|email)$|push\.gpgsign$|implloop\.signruns$|commit\.gpgsign$|(author|committer)\.(name|email)$)`

// gitConfig is git's signing and verifying configuration as a worker
// learned it (learnConfig).
type gitConfig struct {
	// args are the `-c key=value` arguments every git that signs or
	// verifies is given.
	args []string
	// minTrust is gpg.minTrustLevel as learned ("": not set), which
	// verifyCommits applies itself.
	minTrust string
	// read are the values of configRegexp's keys as learned, the last
	// one of each (what git takes).
	read map[string]string
	// ssh, when set, is what made signing in process safe (sshsign.go);
	// set once, by the worker's self-trust probe, before anything signs.
	ssh *sshProof
}

// readConfig reads the values of configRegexp's keys in dir's git, in
// git's order (includes followed, the command line's last).
func readConfig(ctx context.Context, dir string) (keys, values []string, err error) {
	out, _, err := gitcmd.Run(ctx, gitcmd.Options{Dir: dir}, "config", "-z", "--get-regexp", configRegexp)
	if err != nil {
		if gitcmd.ExitCode(err) == 1 {
			return nil, nil, nil // none set
		}
		return nil, nil, fmt.Errorf("reading git's signing configuration: %w", err)
	}
	for _, e := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		if len(e) == 0 {
			continue
		}
		k, v, _ := strings.Cut(string(e), "\n") // no value: a boolean true, which git refuses for these keys
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values, nil
}

// lastOf is the last value of each key.
func lastOf(keys, values []string) map[string]string {
	m := map[string]string{}
	for i, k := range keys {
		m[k] = values[i]
	}
	return m
}

// learnConfig reads how dir's git signs and verifies now, as the
// arguments that make a later git sign and verify so whatever its
// configuration says then (see the section above); ident is the
// committer of the commits it signs ("Name <email>").
func learnConfig(ctx context.Context, dir, ident string) (*gitConfig, error) {
	keys, values, err := readConfig(ctx, dir)
	if err != nil {
		return nil, err
	}
	c := &gitConfig{read: lastOf(keys, values)}
	pin := func(k, v string) { c.args = append(c.args, "-c", k+"="+v) }
	or := func(k, def string) string {
		if v, ok := c.read[k]; ok {
			return v
		}
		return def
	}
	format := or("gpg.format", "openpgp")
	pin("gpg.format", format)
	if key, ok := c.read["user.signingkey"]; ok {
		pin("user.signingkey", key)
	} else if format != "ssh" {
		pin("user.signingkey", ident) // git's default key: the committer
	}
	if cmd, ok := c.read["gpg.ssh.defaultkeycommand"]; ok {
		pin("gpg.ssh.defaultkeycommand", cmd)
	}
	// gpg.program and gpg.openpgp.program name the same program: the
	// later of the two wins.
	openpgp := "gpg"
	for i, k := range keys {
		if k == "gpg.program" || k == "gpg.openpgp.program" {
			openpgp = values[i]
		}
	}
	pin("gpg.program", openpgp)
	pin("gpg.openpgp.program", openpgp)
	pin("gpg.x509.program", or("gpg.x509.program", "gpgsm"))
	pin("gpg.ssh.program", or("gpg.ssh.program", "ssh-keygen"))
	pin("gpg.ssh.allowedsignersfile", or("gpg.ssh.allowedsignersfile", os.DevNull))
	pin("gpg.ssh.revocationfile", or("gpg.ssh.revocationfile", os.DevNull))
	c.minTrust = c.read["gpg.mintrustlevel"]
	pin("gpg.mintrustlevel", or("gpg.mintrustlevel", "undefined"))
	pin("push.gpgsign", or("push.gpgsign", "false"))
	return c, nil
}

// with is args after c's -c arguments (nil c: args).
func (c *gitConfig) with(args ...string) []string {
	if c == nil {
		return args
	}
	return append(slices.Clone(c.args), args...)
}

// minTrustLevel is gpg.minTrustLevel: c's, else what dir's git says now.
func (c *gitConfig) minTrustLevel(ctx context.Context, dir string) string {
	if c != nil {
		return c.minTrust
	}
	v, _ := git(ctx, dir, nil, nil, "config", "--get", "gpg.minTrustLevel")
	return v
}

// ConfigChanged names the keys of git's signing configuration (those
// LearnSigning read) whose values dir's git reads now differ from those
// s learned, sorted; none when s learned none (it was not learned by
// LearnSigning). s goes on signing and verifying as it learned.
func (s *Signing) ConfigChanged(ctx context.Context, dir string) ([]string, error) {
	if s == nil || s.cfg == nil {
		return nil, nil
	}
	keys, values, err := readConfig(ctx, dir)
	if err != nil {
		return nil, err
	}
	now := lastOf(keys, values)
	var changed []string
	for k, v := range now {
		if was, ok := s.cfg.read[k]; !ok || was != v {
			changed = append(changed, k)
		}
	}
	for k := range s.cfg.read {
		if _, ok := now[k]; !ok {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	return changed, nil
}
