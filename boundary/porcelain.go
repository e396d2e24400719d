package boundary

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// porcelainStatus is the parsed output of
// `git status --porcelain=v2 --branch -z`.
type porcelainStatus struct {
	oid      string // HEAD commit, "" when "(initial)"
	head     string // branch name, "(detached)", or "" when absent
	records  []statusRecord
	hashSize int // hex length of the ids seen (40 or 64), 0 if none
}

// statusRecord is one changed, unmerged or untracked entry.
type statusRecord struct {
	kind   byte   // '1' ordinary, '2' rename/copy, 'u' unmerged, '?' untracked, '!' ignored
	xy     string // two letters
	sub    string // "N..." or "S<c><m><u>"
	modes  []Mode // '1','2': mH mI mW; 'u': m1 m2 m3 mW
	hashes []string
	score  string // '2': R100, C75
	path   string
	orig   string // '2': the source path
}

// parsePorcelainV2 parses the NUL-terminated porcelain v2 records. It never
// panics on malformed input: every malformed record is an error naming it.
func parsePorcelainV2(data []byte) (porcelainStatus, error) {
	var st porcelainStatus
	for len(data) > 0 {
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			return st, fmt.Errorf("porcelain v2: record %q is not NUL-terminated", clip(data))
		}
		line := string(data[:i])
		data = data[i+1:]
		if line == "" {
			return st, fmt.Errorf("porcelain v2: empty record")
		}
		switch line[0] {
		case '#':
			if err := st.header(line); err != nil {
				return st, err
			}
		case '1', '2', 'u':
			rec, err := parseChanged(line)
			if err != nil {
				return st, err
			}
			if rec.kind == '2' {
				j := bytes.IndexByte(data, 0)
				if j < 0 {
					return st, fmt.Errorf("porcelain v2: rename of %q has no source path", rec.path)
				}
				rec.orig = string(data[:j])
				data = data[j+1:]
				if rec.orig == "" {
					return st, fmt.Errorf("porcelain v2: rename of %q has an empty source path", rec.path)
				}
			}
			for _, h := range rec.hashes {
				if st.hashSize == 0 {
					st.hashSize = len(h)
				} else if len(h) != st.hashSize {
					return st, fmt.Errorf("porcelain v2: object ids of different lengths in %q", clip([]byte(line)))
				}
			}
			st.records = append(st.records, rec)
		case '?', '!':
			if len(line) < 3 || line[1] != ' ' {
				return st, fmt.Errorf("porcelain v2: malformed record %q", clip([]byte(line)))
			}
			st.records = append(st.records, statusRecord{kind: line[0], path: line[2:]})
		default:
			return st, fmt.Errorf("porcelain v2: unknown record %q", clip([]byte(line)))
		}
	}
	if st.oid != "" && st.hashSize != 0 && len(st.oid) != st.hashSize {
		return st, fmt.Errorf("porcelain v2: HEAD %q and entries have object ids of different lengths", st.oid)
	}
	if st.oid != "" && st.hashSize == 0 {
		st.hashSize = len(st.oid)
	}
	return st, nil
}

func (st *porcelainStatus) header(line string) error {
	key, val, _ := strings.Cut(strings.TrimPrefix(line, "# "), " ")
	switch key {
	case "branch.oid":
		if val == "(initial)" {
			st.oid = ""
			return nil
		}
		if !isHexID(val) {
			return fmt.Errorf("porcelain v2: bad branch.oid %q", clip([]byte(val)))
		}
		st.oid = val
	case "branch.head":
		if val == "" {
			return fmt.Errorf("porcelain v2: empty branch.head")
		}
		st.head = val
	}
	// branch.upstream, branch.ab, stash: not needed.
	return nil
}

// parseChanged parses a '1', '2' or 'u' record (without a rename's source).
func parseChanged(line string) (statusRecord, error) {
	var nModes, nHashes, nFields int
	switch line[0] {
	case '1':
		nModes, nHashes, nFields = 3, 2, 9
	case '2':
		nModes, nHashes, nFields = 3, 2, 10
	case 'u':
		nModes, nHashes, nFields = 4, 3, 11
	}
	f := strings.SplitN(line, " ", nFields)
	if len(f) != nFields || f[0] != line[:1] {
		return statusRecord{}, fmt.Errorf("porcelain v2: malformed record %q", clip([]byte(line)))
	}
	rec := statusRecord{kind: line[0], xy: f[1], sub: f[2], path: f[nFields-1]}
	if len(rec.xy) != 2 || !validSub(rec.sub) || rec.path == "" {
		return statusRecord{}, fmt.Errorf("porcelain v2: malformed record %q", clip([]byte(line)))
	}
	for _, m := range f[3 : 3+nModes] {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || len(m) != 6 {
			return statusRecord{}, fmt.Errorf("porcelain v2: bad mode %q in %q", m, clip([]byte(line)))
		}
		rec.modes = append(rec.modes, Mode(v))
	}
	for _, h := range f[3+nModes : 3+nModes+nHashes] {
		if !isHexID(h) {
			return statusRecord{}, fmt.Errorf("porcelain v2: bad object id %q in %q", clip([]byte(h)), clip([]byte(line)))
		}
		rec.hashes = append(rec.hashes, h)
	}
	if rec.kind == '2' {
		rec.score = f[8]
		if len(rec.score) < 2 || (rec.score[0] != 'R' && rec.score[0] != 'C') {
			return statusRecord{}, fmt.Errorf("porcelain v2: bad rename score %q in %q", rec.score, clip([]byte(line)))
		}
	}
	return rec, nil
}

func validSub(s string) bool {
	if len(s) != 4 {
		return false
	}
	return s == "N..." || s[0] == 'S'
}

func isHexID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// blobOf turns a porcelain (mode, id) pair into a Blob; git prints zeros for
// an absent side.
func blobOf(m Mode, h string) Blob {
	if m == ModeAbsent {
		return Blob{}
	}
	if strings.Trim(h, "0") == "" {
		h = ""
	}
	return Blob{Hash: h, Mode: m}
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
