package identity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Version is the hash scope version: it is the preimage's "v", and it is
// part of the digest's domain separator and prefix. Changing a rule of the
// normalization table or the scope table bumps it.
const Version = "1"

const (
	// DigestPrefix starts every digest of this version.
	DigestPrefix = "u" + Version + ":"
	// domain separates unit identities from any other sha256 of JSON.
	domain = "implloop.unit\x00v" + Version + "\x00"
	// maxSafeInt is the largest integer an RFC 8785 number holds exactly.
	maxSafeInt = 1<<53 - 1
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidEnvName reports whether name may be an env entry of a preimage: a
// bare variable name (letters, digits and _, not starting with a digit).
// Settings are checked with it before a run starts, so that no run is
// created that Canonical would then refuse.
func ValidEnvName(name string) bool { return envNameRE.MatchString(name) }

// Canonical returns the RFC 8785 (JCS) form of p: the exact bytes Digest
// hashes and the journal stores. It fills an empty Version, sorts and
// de-duplicates Env and Artifacts, and leaves unset optional keys out. It
// does not normalize text: pass p through [Preimage.Normalized] (or
// [Normalize] each text field) first. It rejects a preimage that could
// not be hashed faithfully: an unknown version, attempt < 1, an empty role
// or agent, an env entry that is not a bare NAME (NAME=VALUE would leak a
// value into the preimage), invalid UTF-8, or a timeout beyond 2^53-1.
func Canonical(p Preimage) ([]byte, error) {
	q, err := p.canonicalForm()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(q); err != nil {
		return nil, fmt.Errorf("identity: encode preimage: %w", err)
	}
	out, err := jcs.Transform(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("identity: canonicalize preimage: %w", err)
	}
	return out, nil
}

// Digest returns p's identity: "u1:" + hex(sha256("implloop.unit\x00v1\x00"
// + Canonical(p))).
func Digest(p Preimage) (string, error) {
	c, err := Canonical(p)
	if err != nil {
		return "", err
	}
	return DigestCanonical(c), nil
}

// DigestCanonical returns the digest of a preimage already in canonical
// form, such as one read back from the journal, so a stored preimage can be
// checked against its stored identity. It hashes b as given.
func DigestCanonical(b []byte) string {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write(b)
	var sum [sha256.Size]byte
	return DigestPrefix + hex.EncodeToString(h.Sum(sum[:0]))
}

// Parse decodes a canonical preimage (as stored in the journal) and checks
// that it is canonical: Canonical of the result gives b back byte for byte.
func Parse(b []byte) (Preimage, error) {
	var p Preimage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Preimage{}, fmt.Errorf("identity: parse preimage: %w", err)
	}
	c, err := Canonical(p)
	if err != nil {
		return Preimage{}, err
	}
	if !bytes.Equal(c, b) {
		return Preimage{}, fmt.Errorf("identity: parse preimage: not in canonical form")
	}
	return p, nil
}

// canonicalForm checks p and returns a copy with defaults filled in and the
// unordered lists sorted.
func (p Preimage) canonicalForm() (Preimage, error) {
	if p.Version == "" {
		p.Version = Version
	}
	if p.Version != Version {
		return p, fmt.Errorf("identity: preimage version %q, this implloop hashes version %q", p.Version, Version)
	}
	if p.Role == "" {
		return p, fmt.Errorf("identity: preimage has no role")
	}
	if p.Agent == "" {
		return p, fmt.Errorf("identity: preimage has no agent")
	}
	if p.Attempt < 1 {
		return p, fmt.Errorf("identity: attempt %d: attempts count from 1", p.Attempt)
	}
	if p.Attempt > maxSafeInt || p.TimeoutSeconds < 0 || p.TimeoutSeconds > maxSafeInt {
		return p, fmt.Errorf("identity: attempt or timeout out of range")
	}
	for _, name := range p.Env {
		if strings.Contains(name, "=") {
			return p, fmt.Errorf("identity: env entry %q: only variable names are hashed, never values", redactValue(name))
		}
		if !envNameRE.MatchString(name) {
			return p, fmt.Errorf("identity: env entry %q is not a variable name", name)
		}
	}
	p.Env = sortedSet(p.Env)
	for _, a := range p.Artifacts {
		if a == "" {
			return p, fmt.Errorf("identity: empty artifact hash")
		}
	}
	p.Artifacts = sortedSet(p.Artifacts)
	for k := range p.Params {
		if k == "" {
			return p, fmt.Errorf("identity: param with an empty name")
		}
	}
	if p.Task != nil {
		t := *p.Task
		p.Task = &t
	}
	if err := p.checkUTF8(); err != nil {
		return p, err
	}
	return p, nil
}

// redactValue keeps the name of a NAME=VALUE entry for an error message.
func redactValue(entry string) string {
	name, _, _ := strings.Cut(entry, "=")
	return name + "=..."
}

func (p Preimage) checkUTF8() error {
	fields := []struct{ name, s string }{
		{"role", p.Role}, {"agent", p.Agent}, {"model", p.Model}, {"instructions", p.Instructions},
		{"preamble_sha256", p.PreambleSHA256}, {"plan_sha256", p.PlanSHA256}, {"prompt", p.Prompt},
		{"gate_feedback", p.GateFeedback}, {"gate", p.Gate},
	}
	if p.Task != nil {
		fields = append(fields, struct{ name, s string }{"task.id", p.Task.ID}, struct{ name, s string }{"task.text", p.Task.Text})
	}
	for _, a := range p.Artifacts {
		fields = append(fields, struct{ name, s string }{"artifacts", a})
	}
	for k, v := range p.Params {
		fields = append(fields, struct{ name, s string }{"params", k}, struct{ name, s string }{"params." + k, v})
	}
	for _, f := range fields {
		if !utf8.ValidString(f.s) {
			return fmt.Errorf("identity: %s is not valid UTF-8", f.name)
		}
	}
	return nil
}

// sortedSet returns the sorted distinct values of s, nil when s is empty.
func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := append([]string(nil), s...)
	sort.Strings(out)
	n := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[n-1] {
			out[n] = out[i]
			n++
		}
	}
	return out[:n]
}
