package boundary

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// BlameLine is one line of a file and the commit that last changed it,
// as `git blame --first-parent` finds it.
type BlameLine struct {
	Line   int    `json:"line"` // 1-based, in the file blamed
	Text   string `json:"text"`
	Commit string `json:"commit"` // all zeros: not committed (changed since rev)
	// Summary is the commit's subject line.
	Summary string `json:"summary,omitempty"`
}

// Blame runs git's own blame over a boundary chain: each line of path as
// it is in the work tree now (contents true) or at rev, attributed to the
// first-parent commit of rev that last changed it. Along a run's ref the
// first parents are the boundaries, each holding what one task left, down
// to the HEAD the first run started from and the user's history before
// it. from and to (1-based, inclusive; 0: the whole file) limit the lines.
func Blame(ctx context.Context, repoDir, rev, path string, from, to int, contents bool) ([]BlameLine, error) {
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	args := []string{"blame", "--porcelain", "--first-parent"}
	if from > 0 && !contents {
		r := strconv.Itoa(from) + ","
		if to > 0 {
			r += strconv.Itoa(to)
		}
		args = append(args, "-L", r)
	}
	out, _, err := g.run(nil, nil, append(args, rev, "--", path)...)
	if err != nil {
		if !contents {
			return nil, err
		}
		out = nil // not at rev: every line of the work tree's file is new since
	}
	lines, err := parseBlame(out)
	if err != nil || !contents {
		return lines, err
	}
	// git before 2.41 cannot blame work-tree contents against a commit
	// other than HEAD (--contents with a rev): blame rev, then carry its
	// lines over to the file as it is now through the diff from rev.
	return g.carryBlame(rev, path, lines, from, to)
}

// carryBlame maps lines blamed at rev onto path as it is in the work tree:
// a line the diff from rev leaves alone keeps its commit, a line it adds
// has none (changed since rev).
func (g *gitRepo) carryBlame(rev, path string, atRev []BlameLine, from, to int) ([]BlameLine, error) {
	data, err := os.ReadFile(filepath.Join(g.root, filepath.FromSlash(path)))
	if err != nil {
		return nil, err
	}
	text := strings.Split(string(data), "\n")
	if len(text) > 0 && text[len(text)-1] == "" {
		text = text[:len(text)-1]
	}
	out, _, err := g.run(nil, nil, "diff", "--no-ext-diff", "--no-color", "--no-renames", "-U0", rev, "--", path)
	if err != nil {
		return nil, err
	}
	added := map[int]bool{} // lines of the work-tree file the diff adds
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "@@ ") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 3 || !strings.HasPrefix(f[2], "+") {
			return nil, fmt.Errorf("git diff: cannot parse %q", clip([]byte(l)))
		}
		start, n, err := hunkRange(f[2][1:])
		if err != nil {
			return nil, fmt.Errorf("git diff: cannot parse %q", clip([]byte(l)))
		}
		for i := start; i < start+n; i++ {
			added[i] = true
		}
	}
	res := make([]BlameLine, 0, len(text))
	old := 0 // lines of rev's version consumed
	for i, t := range text {
		n := i + 1
		b := BlameLine{Line: n, Text: t, Commit: strings.Repeat("0", 40)}
		if !added[n] {
			// Unchanged: the next line of rev's version that the diff
			// did not remove. Skip removed lines by matching text.
			for old < len(atRev) && atRev[old].Text != t {
				old++
			}
			if old < len(atRev) {
				b.Commit, b.Summary = atRev[old].Commit, atRev[old].Summary
				old++
			}
		}
		if (from == 0 || n >= from) && (to == 0 || n <= to) {
			res = append(res, b)
		}
	}
	return res, nil
}

// hunkRange parses a unified diff range "start[,count]".
func hunkRange(s string) (int, int, error) {
	a, b, found := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, err
	}
	n := 1
	if found {
		if n, err = strconv.Atoi(b); err != nil {
			return 0, 0, err
		}
	}
	return start, n, nil
}

// parseBlame reads `git blame --porcelain`: per line a header
// "<commit> <orig line> <final line> [<group size>]", the commit's
// key-value lines the first time it appears, and the line's text after a
// tab.
func parseBlame(out []byte) ([]BlameLine, error) {
	var lines []BlameLine
	summary := map[string]string{}
	var cur *BlameLine
	for len(out) > 0 {
		i := bytes.IndexByte(out, '\n')
		if i < 0 {
			i = len(out)
		}
		l := string(out[:i])
		out = out[min(i+1, len(out)):]
		switch {
		case strings.HasPrefix(l, "\t"):
			if cur == nil {
				return nil, fmt.Errorf("git blame: text before a header")
			}
			cur.Text = l[1:]
			lines = append(lines, *cur)
			cur = nil
		case cur == nil:
			f := strings.Fields(l)
			if len(f) < 3 || !isHexID(f[0]) {
				return nil, fmt.Errorf("git blame: cannot parse %q", clip([]byte(l)))
			}
			n, err := strconv.Atoi(f[2])
			if err != nil {
				return nil, fmt.Errorf("git blame: cannot parse %q", clip([]byte(l)))
			}
			cur = &BlameLine{Commit: f[0], Line: n}
		case strings.HasPrefix(l, "summary "):
			summary[cur.Commit] = strings.TrimPrefix(l, "summary ")
		}
	}
	for i := range lines {
		lines[i].Summary = summary[lines[i].Commit]
	}
	return lines, nil
}
