package identity

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Env names the machine-specific places that Normalize replaces with fixed
// tokens. Build one with [EnvFor]; the zero Env replaces no path.
type Env struct {
	// ProjectRoots are the project's root directory as written and as
	// symlink-resolved (they differ on macOS, /var vs /private/var, and
	// under symlinked home directories). Each becomes <PROJECT>.
	ProjectRoots []string
	// Home is the user's home directory; it becomes <HOME>.
	Home string
	// TempRoots are temporary-file roots (os.TempDir(), $TMPDIR, /tmp, ...),
	// as written and symlink-resolved. Each, together with the random
	// directory under it, becomes <TMP>.
	TempRoots []string
}

// Rule is one row of the normalization table. Rules apply in table order,
// each to the output of the one before.
type Rule struct {
	Name    string  // short stable name, e.g. "line-endings"
	Matches string  // what the rule matches, in prose
	Becomes string  // what a match becomes
	Example Example // one input and its output under [ExampleEnv]
	apply   func(s string, env *preparedEnv) string
}

// Example is an input and its normalized output.
type Example struct{ In, Out string }

// ExampleEnv returns the Env under which the examples of the rules table
// hold.
func ExampleEnv() Env {
	return Env{
		ProjectRoots: []string{"/home/ann/src/shop", "/data/ann/src/shop"},
		Home:         "/home/ann",
		TempRoots:    []string{"/tmp"},
	}
}

// rules is THE normalization table. Changing a row (adding, removing,
// reordering, or changing what a row matches or produces) changes digests:
// bump Version and regenerate the golden vectors and docs/identity.md.
var rules = []Rule{
	{
		Name:    "line-endings",
		Matches: "CRLF and lone CR line breaks",
		Becomes: "LF",
		Example: Example{"a\r\nb\rc", "a\nb\nc"},
		apply:   normalizeLineEndings,
	},
	{
		Name:    "trailing-space",
		Matches: "spaces and tabs at the end of a line",
		Becomes: "nothing",
		Example: Example{"run tests \t\nok", "run tests\nok"},
		apply:   trimLineEnds,
	},
	{
		Name:    "trailing-blank-lines",
		Matches: "blank lines and line breaks at the end of the text",
		Becomes: "nothing: the text ends with its last non-blank line",
		Example: Example{"done\n\n\n", "done"},
		apply:   trimTrailingBlankLines,
	},
	{
		Name: "project-root",
		Matches: "the project root, as written or symlink-resolved, longest first, " +
			"where it is a whole path prefix (not followed by a name character, so /src/shop2 is not /src/shop); " +
			"where roots nest, the longest root wins whatever its row (a $TMPDIR under the home directory is a temp root)",
		Becomes: "`<PROJECT>`",
		Example: Example{"edit /home/ann/src/shop/a.go and /data/ann/src/shop/b.go, not /data/ann/src/shop2", "edit <PROJECT>/a.go and <PROJECT>/b.go, not /data/ann/src/shop2"},
		apply: func(s string, env *preparedEnv) string {
			return replaceRoots(s, env.project, "<PROJECT>", false, env.home, env.temp)
		},
	},
	{
		Name:    "home",
		Matches: "the home directory, where it is a whole path prefix",
		Becomes: "`<HOME>`",
		Example: Example{"read /home/ann/.config/app.toml", "read <HOME>/.config/app.toml"},
		apply: func(s string, env *preparedEnv) string {
			return replaceRoots(s, env.home, "<HOME>", false, env.temp)
		},
	},
	{
		Name: "temp",
		Matches: "a temp root, where it is a whole path prefix, and the random directory under it: " +
			"the first path element below the root when the path goes on below it or the element has a digit " +
			"(`/tmp/out.txt` keeps its name)",
		Becomes: "`<TMP>`",
		Example: Example{"see /tmp/go-build4120/b001/x.log and /tmp/out.txt", "see <TMP>/b001/x.log and <TMP>/out.txt"},
		apply: func(s string, env *preparedEnv) string {
			return replaceRoots(s, env.temp, "<TMP>", true)
		},
	},
	{
		Name: "date-time",
		Matches: "an RFC 3339 / ISO 8601 date with a time part: `2026-11-30T05:40:12Z`, `2026-11-30 05:40`, " +
			"`2026-11-30T05:40:12.5+01:00`, `20261130T054012Z`; not glued to a letter or digit",
		Becomes: "`<TIME>`",
		Example: Example{"started 2026-11-30T05:40:12Z, due 2026-12-01", "started <TIME>, due 2026-12-01"},
		apply:   replaceDateTimes,
	},
	{
		Name:    "uuid",
		Matches: "a dashed UUID (8-4-4-4-12 hex digits, any case), not glued to a letter or digit",
		Becomes: "`<UUID-1>`, `<UUID-2>`, ... numbered by first appearance; equal UUIDs (ignoring case) get the same number",
		Example: Example{
			"a 0f8fad5b-d9cb-469f-a165-70867728950e b 7c9e6679-7425-40de-944b-e07fc1f90ae7 a 0F8FAD5B-D9CB-469F-A165-70867728950E",
			"a <UUID-1> b <UUID-2> a <UUID-1>",
		},
		apply: replaceUUIDs,
	},
	{
		Name:    "run-id",
		Matches: "an implloop run id (`r-YYYYMMDD-HHMMSS-xxxx`, see NewRunID), not glued to a letter or digit",
		Becomes: "`<RUN-1>`, `<RUN-2>`, ... numbered by first appearance; equal ids get the same number",
		Example: Example{
			".git/implloop/runs/r-20261130-054012-3f9a/report.md (parent r-20261129-230001-00b1)",
			".git/implloop/runs/<RUN-1>/report.md (parent <RUN-2>)",
		},
		apply: replaceRunIDs,
	},
	{
		Name:    "task-marker",
		Matches: "the state of a task-list marker at the start of a list item: `- [x]`, `* [X]`, `1. [x]`",
		Becomes: "`[ ]`",
		Example: Example{"- [x] add login\n- [ ] add logout", "- [ ] add login\n- [ ] add logout"},
		apply:   resetTaskMarkers,
	},
}

// keptOnPurpose lists what Normalize leaves alone on purpose, and why. It is rendered
// into docs/identity.md with the rules.
var keptOnPurpose = []struct{ What, Why string }{
	{"bare hex tokens (`3f9a`, a 40- or 64-hex sha)", "they are usually hashes, and a hash is content: erasing a plan sha would make a plan edit invisible"},
	{"date-only strings (`2026-11-30`)", "a date without a time is usually a deadline or a version, chosen by a person"},
	{"bare clock times (`05:40:12`)", "without a date they are as often durations or versions as timestamps"},
	{"numbers", "they are content"},
	{"whitespace inside a line, leading whitespace, leading blank lines", "indentation and spacing can carry meaning (code, YAML, Markdown)"},
	{"Unicode as given (no NFC/NFD folding)", "different code points are different input; folding would hide real edits"},
	{"`${{ x }}`, `{{item}}` and other template-looking text", "implloop never interpolates: such text is plain content"},
	{"a literal `<PROJECT>` or `<UUID-1>` already in the text", "it is content; a token Normalize wrote is never matched again, which keeps Normalize idempotent"},
}

// Normalize applies the rules table, in order, to text. The result is used
// for the identity only: the agent always gets the byte-exact text.
// Normalize is idempotent and never panics; it works on bytes, so invalid
// UTF-8 passes through unchanged (Canonical rejects it).
func Normalize(text string, env Env) string { return prepare(env).normalize(text) }

func (pe *preparedEnv) normalize(text string) string {
	for i := range rules {
		text = rules[i].apply(text, pe)
	}
	return text
}

// preparedEnv is an Env with each list cleaned, de-duplicated and sorted
// longest first, so that the longest literal root wins.
type preparedEnv struct {
	project, home, temp []string
}

func prepare(env Env) *preparedEnv {
	return &preparedEnv{
		project: cleanRoots(env.ProjectRoots),
		home:    cleanRoots([]string{env.Home}),
		temp:    cleanRoots(env.TempRoots),
	}
}

// cleanRoots drops trailing separators and roots that would match too much
// ("", "/", "."), de-duplicates, and sorts longest first.
func cleanRoots(roots []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range roots {
		r = strings.TrimRight(r, `/\`)
		if r == "" || r == "." || r == "~" || len(r) < 2 || seen[r] {
			continue
		}
		if len(r) == 2 && r[1] == ':' { // a bare Windows drive, C:
			continue
		}
		seen[r] = true
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

func normalizeLineEndings(s string, _ *preparedEnv) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

func trimLineEnds(s string, _ *preparedEnv) string {
	if !strings.Contains(s, " \n") && !strings.Contains(s, "\t\n") && !strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\t") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			b.WriteString(strings.TrimRight(s, " \t"))
			return b.String()
		}
		b.WriteString(strings.TrimRight(s[:i], " \t"))
		b.WriteByte('\n')
		s = s[i+1:]
	}
}

// trimTrailingBlankLines runs after trimLineEnds, so a blank line is empty.
func trimTrailingBlankLines(s string, _ *preparedEnv) string {
	return strings.TrimRight(s, "\n")
}

// isNameByte reports whether c can continue a file or directory name. Bytes
// of multi-byte UTF-8 sequences count as name bytes.
func isNameByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	case c == '.', c == '_', c == '-', c == '~', c == '+', c == '@', c == '%':
		return true
	case c >= 0x80:
		return true
	}
	return false
}

// blocksRoot reports whether c, next to a root, makes it part of a longer
// name. The token delimiters < and > block too: without that, a second
// Normalize could replace a root that the first left alone because it was
// glued to a timestamp that has since become <TIME> (idempotence).
func blocksRoot(c byte) bool { return isNameByte(c) || c == '<' || c == '>' }

func isSep(c byte) bool { return c == '/' || c == '\\' }

// replaceRoots replaces every whole-path occurrence of any root with token,
// trying roots longest first at each position. With randomDir, the first
// element below the root is swallowed too when it looks generated. A longer
// root of a later rule (yield) at the same position is left for that rule,
// so that where roots nest the longest wins whatever the rule order.
func replaceRoots(s string, roots []string, token string, randomDir bool, yield ...[]string) string {
	if len(roots) == 0 {
		return s
	}
	var b strings.Builder
	last := 0 // s[last:i] is not yet written
	for i := 0; i < len(s); i++ {
		if i > 0 && blocksRoot(s[i-1]) {
			continue
		}
		for _, r := range roots {
			if s[i] != r[0] || !strings.HasPrefix(s[i:], r) {
				continue
			}
			end := i + len(r)
			if !rootEndsAt(s, end) {
				continue
			}
			if n := longerRootAt(s, i, len(r), yield); n > 0 {
				i += n - 1 // the later rule replaces all of it
				break
			}
			if randomDir && end < len(s) && isSep(s[end]) {
				j := end + 1
				digit := false
				for j < len(s) && isNameByte(s[j]) {
					if '0' <= s[j] && s[j] <= '9' {
						digit = true
					}
					j++
				}
				if j > end+1 && (digit || (j < len(s) && isSep(s[j]))) {
					end = j
				}
			}
			if b.Cap() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteString(token)
			last = end
			i = end - 1
			break
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// longerRootAt returns the length of the longest root in lists that is
// longer than n and a whole path prefix at s[i:], or 0.
func longerRootAt(s string, i, n int, lists [][]string) int {
	best := 0
	for _, list := range lists {
		for _, r := range list {
			if len(r) > n && len(r) > best && strings.HasPrefix(s[i:], r) && rootEndsAt(s, i+len(r)) {
				best = len(r)
			}
		}
	}
	return best
}

// rootEndsAt reports whether a root ending at s[end] ends a path prefix: at
// the end of the text, at a separator, before a character that cannot be in
// a name, or before a sentence's final dot ("in /src/shop.").
func rootEndsAt(s string, end int) bool {
	if end == len(s) || isSep(s[end]) {
		return true
	}
	if s[end] == '.' {
		return end+1 == len(s) || !blocksRoot(s[end+1]) && !isSep(s[end+1])
	}
	return !blocksRoot(s[end])
}

// isAlnum reports an ASCII letter or digit: a token rule does not match
// glued to one (r-2026... inside xr-2026... is not a run id).
func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// replaceTokens replaces every token that match finds and that is not
// glued to an ASCII letter or digit on either side with repl(token). match
// returns the length of the token starting at s[i], or 0. Scanning resumes
// after every token found, accepted or not, exactly as
// regexp.FindAllStringIndex does with the rule's pattern (a test checks the
// two agree); the hand-written matchers are ten times faster.
func replaceTokens(s string, match func(s string, i int) int, repl func(token string) string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		n := match(s, i)
		if n == 0 {
			i++
			continue
		}
		end := i + n
		if !(i > 0 && isAlnum(s[i-1]) || end < len(s) && isAlnum(s[end])) {
			if b.Cap() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteString(repl(s[i:end]))
			last = end
		}
		i = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

const (
	reDate = `\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])`
	reTime = `(?:[01]\d|2[0-3]):[0-5]\d(?::(?:[0-5]\d|60)(?:[.,]\d+)?)?`
	reZone = `(?:[Zz]|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?`
	// ISO 8601 basic format, with seconds: 20261130T054012Z.
	reBasic = `\d{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3])[0-5]\d(?:[0-5]\d|60)(?:[.,]\d+)?(?:Z|[+-](?:[01]\d|2[0-3])(?:[0-5]\d)?)?`
)

// The patterns of the token rules. Normalize runs hand-written matchers
// that find exactly what these find (see replaceTokens).
var (
	dateTimeRE = regexp.MustCompile(reDate + `[Tt ]` + reTime + reZone + `|` + reBasic)
	uuidRE     = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	markerRE   = regexp.MustCompile(`(?m)^([ \t]*(?:>[ \t]?)*[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+)\[[xX]\]([ \t]|$)`)

	dateTimeAtRE   = regexp.MustCompile(`^(?:` + dateTimeRE.String() + `)`)
	markerPrefixRE = regexp.MustCompile(`^[ \t]*(?:>[ \t]?)*[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+$`)
)

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// dateTimeAt returns the length of the date-time starting at s[i], or 0.
// Only a position that can start one (a digit, with the dashes of a date or
// the T of the basic format in place) reaches the regexp.
func dateTimeAt(s string, i int) int {
	if !isDigit(s[i]) {
		return 0
	}
	extended := i+16 <= len(s) && s[i+4] == '-' && s[i+7] == '-'
	basic := i+15 <= len(s) && s[i+8] == 'T'
	if !extended && !basic {
		return 0
	}
	// Most date-times fit in a short window; one that reaches its end (a
	// long fraction) is matched again against the whole rest.
	window := s[i:min(len(s), i+48)]
	loc := dateTimeAtRE.FindStringIndex(window)
	if loc != nil && loc[1] == len(window) && len(window) < len(s)-i {
		loc = dateTimeAtRE.FindStringIndex(s[i:])
	}
	if loc != nil {
		return loc[1]
	}
	return 0
}

// uuidAt returns 36 when a dashed UUID starts at s[i], else 0.
func uuidAt(s string, i int) int {
	if i+36 > len(s) || s[i+8] != '-' || s[i+13] != '-' || !isHex(s[i]) {
		return 0
	}
	for j := 0; j < 36; j++ {
		c := s[i+j]
		if j == 8 || j == 13 || j == 18 || j == 23 {
			if c != '-' {
				return 0
			}
		} else if !isHex(c) {
			return 0
		}
	}
	return 36
}

// runIDAt returns 22 when a run id (r-YYYYMMDD-HHMMSS-xxxx) starts at s[i].
func runIDAt(s string, i int) int {
	const n = len("r-20261130-054012-3f9a")
	if i+n > len(s) || s[i] != 'r' || s[i+1] != '-' || s[i+10] != '-' || s[i+17] != '-' {
		return 0
	}
	for j := 2; j < n; j++ {
		c := s[i+j]
		switch {
		case j == 10 || j == 17:
		case j < 17 && !isDigit(c):
			return 0
		case j > 17 && !(isDigit(c) || 'a' <= c && c <= 'f'):
			return 0
		}
	}
	return n
}

func replaceDateTimes(s string, _ *preparedEnv) string {
	if !strings.Contains(s, ":") && !strings.Contains(s, "T") {
		return s
	}
	return replaceTokens(s, dateTimeAt, func(string) string { return "<TIME>" })
}

// counter numbers distinct values by first appearance.
func counter(prefix string, key func(string) string) func(string) string {
	seen := map[string]int{}
	return func(m string) string {
		k := key(m)
		n, ok := seen[k]
		if !ok {
			n = len(seen) + 1
			seen[k] = n
		}
		return "<" + prefix + "-" + strconv.Itoa(n) + ">"
	}
}

func replaceUUIDs(s string, _ *preparedEnv) string {
	if strings.Count(s, "-") < 4 {
		return s
	}
	return replaceTokens(s, uuidAt, counter("UUID", strings.ToLower))
}

func replaceRunIDs(s string, _ *preparedEnv) string {
	if !strings.Contains(s, "r-") {
		return s
	}
	return replaceTokens(s, runIDAt, counter("RUN", func(m string) string { return m }))
}

func resetTaskMarkers(s string, _ *preparedEnv) string {
	if !strings.Contains(s, "[x]") && !strings.Contains(s, "[X]") {
		return s
	}
	var b []byte
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		// The marker's '[' is the line's first: the prefix has none.
		if j := strings.IndexByte(s[start:end], '['); j >= 0 {
			j += start
			if j+3 <= end && (s[j+1] == 'x' || s[j+1] == 'X') && s[j+2] == ']' &&
				(j+3 == end || s[j+3] == ' ' || s[j+3] == '\t') && markerPrefixRE.MatchString(s[start:j]) {
				if b == nil {
					b = []byte(s)
				}
				b[j+1] = ' '
			}
		}
		start = end + 1
	}
	if b == nil {
		return s
	}
	return string(b)
}
