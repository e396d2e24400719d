package boundary

import (
	"encoding/json"
	"fmt"

	"github.com/implloop/implloop/internal/bytepath"
)

// Paths are bytes (any but NUL): every JSON form of a path here follows
// internal/bytepath's rule, a `_b64` twin beside each path that is not
// valid UTF-8, so a path survives the journal and --json byte for byte.

// MarshalJSON writes the change with its status letter and the paths'
// base64 twins when needed.
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change
	status := ""
	if c.Status != 0 {
		status = string(rune(c.Status))
	}
	b, err := json.Marshal(struct {
		plain
		Status string `json:"status"`
	}{plain(c), status})
	return bytepath.AppendTwins(b, err, c.paths()...)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Change) UnmarshalJSON(data []byte) error {
	type plain Change
	var v struct {
		plain
		Status string `json:"status"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*c = Change(v.plain)
	if len(v.Status) == 1 {
		c.Status = v.Status[0]
	} else if v.Status != "" {
		return fmt.Errorf("change of %q: status %q", c.Path, v.Status)
	}
	return bytepath.ReadTwins(data, c.paths()...)
}

func (c *Change) paths() []bytepath.Field {
	return []bytepath.Field{{Name: "path", Path: &c.Path}, {Name: "from", Path: &c.From}}
}

// MarshalJSON writes the lost content with the path's base64 twin when
// needed.
func (l LostContent) MarshalJSON() ([]byte, error) {
	type plain LostContent
	b, err := json.Marshal(plain(l))
	return bytepath.AppendTwins(b, err, l.paths()...)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *LostContent) UnmarshalJSON(data []byte) error {
	type plain LostContent
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*l = LostContent(p)
	return bytepath.ReadTwins(data, l.paths()...)
}

func (l *LostContent) paths() []bytepath.Field {
	return []bytepath.Field{{Name: "path", Path: &l.Path}}
}

// MarshalJSON writes the entry with its paths' base64 twins when needed.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	b, err := json.Marshal(plain(e))
	return bytepath.AppendTwins(b, err, e.paths()...)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Entry) UnmarshalJSON(data []byte) error {
	type plain Entry
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*e = Entry(p)
	return bytepath.ReadTwins(data, e.paths()...)
}

func (e *Entry) paths() []bytepath.Field {
	return []bytepath.Field{{Name: "path", Path: &e.Path}, {Name: "orig_path", Path: &e.OrigPath}, {Name: "renamed_to", Path: &e.RenamedTo}}
}
