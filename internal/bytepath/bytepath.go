// Package bytepath carries file paths through JSON and text without losing
// a byte.
//
// git allows a path to be any bytes but NUL, and a JSON string can only
// hold valid UTF-8: encoding/json turns every invalid byte into U+FFFD, so
// `bad\377name.txt` would come back as `bad\uFFFDname.txt` and name
// another file. implloop's rule, everywhere a path is JSON (the journal,
// `--json` output, events):
//
//   - a path that is valid UTF-8 is a plain JSON string, as always;
//   - a path that is not is written twice: its JSON string (for display,
//     with U+FFFD where the bytes were) and, beside it, its exact bytes in
//     standard base64 under the same name with `_b64` appended
//     (`"path_b64"`). Readers that care use the `_b64` field when it is
//     there.
//
// A list of paths ([List]) writes each non-UTF-8 element as an object
// `{"path": "...", "path_b64": "..."}` instead of a string.
//
// For people (terminal, markdown), [Display] quotes a path that holds
// bytes a terminal cannot show, the way Go (and, closely, git) quotes it.
package bytepath

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// B64 returns p's bytes in base64 when p is not valid UTF-8, "" when a JSON
// string carries p exactly.
func B64(p string) string {
	if utf8.ValidString(p) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(p))
}

// Decode returns the path a JSON record holds: the bytes of b64 when it is
// set, else s.
func Decode(s, b64 string) (string, error) {
	if b64 == "" {
		return s, nil
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("path %q: bad base64: %w", s, err)
	}
	return string(b), nil
}

// A Field is a path member of a JSON object: its JSON name ("path",
// "moved_to") and the path, for [AppendTwins] and [ReadTwins].
type Field struct {
	Name string
	Path *string
}

// AppendTwins adds to obj, the JSON object of a record holding paths, the
// base64 twin ("NAME_b64") of each field whose path is not valid UTF-8,
// after obj's members: what a struct with the twins as its last fields,
// omitted when empty, marshals to. A record's MarshalJSON is
//
//	b, err := json.Marshal(plain(r))
//	return bytepath.AppendTwins(b, err, bytepath.Field{Name: "path", Path: &r.Path})
func AppendTwins(obj []byte, err error, fields ...Field) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(obj, '}')
	if len(obj) == 0 || obj[0] != '{' || end < 0 {
		return nil, fmt.Errorf("bytepath: not a JSON object: %.40s", obj)
	}
	comma := len(bytes.TrimSpace(obj[1:end])) > 0
	var twins []byte
	for _, f := range fields {
		b64 := B64(*f.Path)
		if b64 == "" {
			continue
		}
		if comma {
			twins = append(twins, ',')
		}
		comma = true
		twins = append(twins, '"')
		twins = append(twins, f.Name...)
		twins = append(twins, `_b64":"`...)
		twins = append(twins, b64...)
		twins = append(twins, '"')
	}
	if len(twins) == 0 {
		return obj, nil
	}
	out := make([]byte, 0, len(obj)+len(twins))
	out = append(out, obj[:end]...)
	out = append(out, twins...)
	return append(out, obj[end:]...), nil
}

// ReadTwins sets each field's path from its base64 twin in obj (what
// [AppendTwins] wrote), when obj has one. A record's UnmarshalJSON reads
// obj into its plain form first, then calls it.
func ReadTwins(obj []byte, fields ...Field) error {
	if !bytes.Contains(obj, []byte(`_b64"`)) {
		return nil // no twin: every path was valid UTF-8
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(obj, &members); err != nil {
		return err
	}
	for _, f := range fields {
		raw, ok := members[f.Name+"_b64"]
		if !ok {
			continue
		}
		var b64 string
		if err := json.Unmarshal(raw, &b64); err != nil {
			return fmt.Errorf("path %q: %s_b64: %w", *f.Path, f.Name, err)
		}
		p, err := Decode(*f.Path, b64)
		if err != nil {
			return err
		}
		*f.Path = p
	}
	return nil
}

// Display is p as a person should see it: as it is when it is printable
// UTF-8 without quotes, backslashes or control characters, else quoted
// with Go's escapes (`"bad\xffname.txt"`).
func Display(p string) string {
	if !utf8.ValidString(p) || strings.ContainsAny(p, "\"\\") || strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

// List is a list of paths whose JSON form loses no byte (see the package
// doc).
type List []string

type encoded struct {
	Path    string `json:"path"`
	PathB64 string `json:"path_b64"`
}

// MarshalJSON writes the list as an array of strings, with an object for
// each path that is not valid UTF-8.
func (l List) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		var v any = p
		if b64 := B64(p); b64 != "" {
			v = encoded{Path: p, PathB64: b64}
		}
		e, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes (and a plain array of
// strings).
func (l *List) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		*l = nil
		return nil
	}
	out := make(List, 0, len(raw))
	for _, r := range raw {
		var s string
		if err := json.Unmarshal(r, &s); err == nil {
			out = append(out, s)
			continue
		}
		var e encoded
		if err := json.Unmarshal(r, &e); err != nil {
			return fmt.Errorf("path list: %s is neither a string nor {path, path_b64}", r)
		}
		p, err := Decode(e.Path, e.PathB64)
		if err != nil {
			return err
		}
		out = append(out, p)
	}
	*l = out
	return nil
}
