package report

//go:generate go run ./gen -o chroma_css.go

import (
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// A patch as the HTML report shows it: per file, its lines with their
// tokens. Highlighting is chroma's (its lexers, its token classes, its
// styles' CSS); html/template writes every byte.
type diffFile struct {
	Path     string
	Add, Del int
	Lines    []diffLine
}

// diffLine is one line of a patch. Kind is its CSS class: a added, d
// deleted, c context, h hunk header, m meta (new file, rename, binary).
type diffLine struct {
	Kind   string
	Prefix string
	Toks   []tok
}

type tok struct{ Class, Text string }

// maxHighlightLine: a file with a longer line (minified, generated) is
// shown plain, which is both cheaper and as readable.
const maxHighlightLine = 1000

// parsePatch splits git's patch text into files and highlights each
// file's code lines with the lexer its path names.
func parsePatch(text []byte, colour bool) []diffFile {
	var files []diffFile
	var f *diffFile
	var code []int // indexes into f.Lines of lines holding code
	inHunk := false
	flush := func() {
		if f != nil && colour {
			highlight(f, code)
		}
	}
	for _, raw := range strings.SplitAfter(string(text), "\n") {
		line := strings.TrimSuffix(raw, "\n")
		if raw == "" {
			continue
		}
		if strings.HasPrefix(line, "diff --git ") {
			flush()
			files = append(files, diffFile{Path: gitPathFromHeader(line)})
			f, code, inHunk = &files[len(files)-1], nil, false
			continue
		}
		if f == nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "@@"):
			inHunk = true
			f.Lines = append(f.Lines, diffLine{Kind: "h", Toks: []tok{{Text: line}}})
		case inHunk && line != "" && (line[0] == '+' || line[0] == '-' || line[0] == ' '):
			kind := map[byte]string{'+': "a", '-': "d", ' ': "c"}[line[0]]
			if kind == "a" {
				f.Add++
			} else if kind == "d" {
				f.Del++
			}
			code = append(code, len(f.Lines))
			f.Lines = append(f.Lines, diffLine{Kind: kind, Prefix: line[:1], Toks: []tok{{Text: line[1:]}}})
		case inHunk && strings.HasPrefix(line, `\`):
			f.Lines = append(f.Lines, diffLine{Kind: "m", Toks: []tok{{Text: line}}})
		case strings.HasPrefix(line, "+++ "):
			if p := strings.TrimPrefix(line, "+++ "); p != "/dev/null" {
				f.Path = trimSide(unquoteGit(p), "b/")
			}
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "index "):
		default: // new file mode, rename from, Binary files ... differ
			f.Lines = append(f.Lines, diffLine{Kind: "m", Toks: []tok{{Text: line}}})
		}
	}
	flush()
	return files
}

// highlight tokenises the file's code lines (old and new interleaved, as
// the patch shows them) and puts the tokens back on their lines. With no
// lexer for the path, or anything unexpected, the lines stay plain.
func highlight(f *diffFile, code []int) {
	lexer := lexerFor(f.Path)
	if lexer == nil || len(code) == 0 {
		return
	}
	var src strings.Builder
	for _, i := range code {
		t := f.Lines[i].Toks[0].Text
		if len(t) > maxHighlightLine {
			return
		}
		src.WriteString(t)
		src.WriteByte('\n')
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, src.String())
	if err != nil {
		return
	}
	lines := chroma.SplitTokensIntoLines(it.Tokens())
	if len(lines) < len(code) {
		return
	}
	for n, i := range code {
		var toks []tok
		for _, t := range lines[n] {
			text := strings.TrimSuffix(t.Value, "\n")
			if text == "" {
				continue
			}
			class := tokenClass(t.Type)
			if !styled(class) {
				class = "" // a span no rule colours is only bytes
			}
			if k := len(toks) - 1; k >= 0 && toks[k].Class == class {
				toks[k].Text += text
				continue
			}
			toks = append(toks, tok{Class: class, Text: text})
		}
		if joined := joinToks(toks); joined != f.Lines[i].Toks[0].Text {
			return // the lexer changed the text (tabs, CRs): keep it plain
		}
		f.Lines[i].Toks = toks
	}
}

func joinToks(ts []tok) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Text)
	}
	return b.String()
}

// tokenClass is chroma's CSS class for a token type, as its HTML
// formatter names it (the nearest ancestor type with a class).
func tokenClass(t chroma.TokenType) string {
	for ; t != 0; t = t.Parent() {
		if cls, ok := chroma.StandardTypes[t]; ok {
			return cls
		}
	}
	return ""
}

// lexerFor is lexers.Match, remembered by extension (or by name, for a
// file without one): Match tries every lexer's globs, milliseconds a call.
func lexerFor(path string) chroma.Lexer {
	name := filepath.Base(path)
	key := filepath.Ext(name)
	if key == "" || key == name {
		key = name
	} else {
		name = "x" + key
	}
	lexerMu.Lock()
	defer lexerMu.Unlock()
	l, ok := lexerMemo[key]
	if !ok {
		l = lexers.Match(name)
		lexerMemo[key] = l
	}
	return l
}

var (
	lexerMu   sync.Mutex
	lexerMemo = map[string]chroma.Lexer{}
)

// gitPathFromHeader is the b/ path of a "diff --git a/x b/x" line: the
// fallback for files with no +++ line (binary, mode or rename only).
func gitPathFromHeader(line string) string {
	rest := strings.TrimPrefix(line, "diff --git ")
	if strings.HasPrefix(rest, `"`) {
		if i := strings.Index(rest, `" `); i > 0 {
			return trimSide(unquoteGit(rest[i+2:]), "b/")
		}
	}
	// Unquoted: "a/p b/p" with both halves the same length (a rename has
	// its own lines, and a +++ line names the file when there is a hunk).
	if n := len(rest); n%2 == 1 {
		return trimSide(rest[n/2+1:], "b/")
	}
	return rest
}

func trimSide(p, side string) string { return strings.TrimPrefix(p, side) }

// unquoteGit undoes git's C-style quoting of a path with unusual bytes.
func unquoteGit(p string) string {
	if !strings.HasPrefix(p, `"`) {
		return p
	}
	if u, err := strconv.Unquote(p); err == nil {
		return u
	}
	return p
}
