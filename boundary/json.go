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
	return json.Marshal(struct {
		plain
		Status  string `json:"status"`
		PathB64 string `json:"path_b64,omitempty"`
		FromB64 string `json:"from_b64,omitempty"`
	}{plain(c), status, bytepath.B64(c.Path), bytepath.B64(c.From)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Change) UnmarshalJSON(data []byte) error {
	type plain Change
	var v struct {
		plain
		Status  string `json:"status"`
		PathB64 string `json:"path_b64"`
		FromB64 string `json:"from_b64"`
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
	var err error
	if c.Path, err = bytepath.Decode(c.Path, v.PathB64); err != nil {
		return err
	}
	c.From, err = bytepath.Decode(c.From, v.FromB64)
	return err
}

// MarshalJSON writes the lost content with the path's base64 twin when
// needed.
func (l LostContent) MarshalJSON() ([]byte, error) {
	type plain LostContent
	return json.Marshal(struct {
		plain
		PathB64 string `json:"path_b64,omitempty"`
	}{plain(l), bytepath.B64(l.Path)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *LostContent) UnmarshalJSON(data []byte) error {
	type plain LostContent
	var v struct {
		plain
		PathB64 string `json:"path_b64"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*l = LostContent(v.plain)
	var err error
	l.Path, err = bytepath.Decode(l.Path, v.PathB64)
	return err
}

// MarshalJSON writes the entry with its paths' base64 twins when needed.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	return json.Marshal(struct {
		plain
		PathB64      string `json:"path_b64,omitempty"`
		OrigPathB64  string `json:"orig_path_b64,omitempty"`
		RenamedToB64 string `json:"renamed_to_b64,omitempty"`
	}{plain(e), bytepath.B64(e.Path), bytepath.B64(e.OrigPath), bytepath.B64(e.RenamedTo)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Entry) UnmarshalJSON(data []byte) error {
	type plain Entry
	var v struct {
		plain
		PathB64      string `json:"path_b64"`
		OrigPathB64  string `json:"orig_path_b64"`
		RenamedToB64 string `json:"renamed_to_b64"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*e = Entry(v.plain)
	var err error
	if e.Path, err = bytepath.Decode(e.Path, v.PathB64); err != nil {
		return err
	}
	if e.OrigPath, err = bytepath.Decode(e.OrigPath, v.OrigPathB64); err != nil {
		return err
	}
	e.RenamedTo, err = bytepath.Decode(e.RenamedTo, v.RenamedToB64)
	return err
}
