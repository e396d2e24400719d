package plan

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/implloop/implloop/internal/words"
	"github.com/implloop/implloop/settings"
)

// FrontMatterKey is one key a plan's front matter may hold: the plan's own
// (title, form, todos, ...) or a run setting, the plan-level default of
// the `implloop run` flag that gives it (package settings' table); a flag
// given on the command line wins.
type FrontMatterKey struct {
	Name string
	Type string // what the value must be, for messages and docs
	Doc  string
	Flag string // the run flag that gives the same setting; "" for the plan's own keys
	// check returns "" when v is acceptable, else what is wrong.
	check func(v any) string
}

// FrontMatterKeys are the keys implloop knows. Any other key is a lint
// warning (a typo like "max_attempt" would otherwise be ignored silently).
var FrontMatterKeys = frontMatterKeys()

// frontMatterKeys are the plan's own keys and the run settings' keys, in
// the order lint names them: title and description, the settings, with the
// keys of task forms and of Cursor plans after params, where they came in.
func frontMatterKeys() []FrontMatterKey {
	str := settings.TypeString
	keys := []FrontMatterKey{
		{"title", str.String(), "the plan's name, for reports", "", str.Check},
		{"description", str.String(), "what the plan is for (spec-kit writes it)", "", str.Check},
	}
	for _, st := range settings.All() {
		if st.Key == "" {
			continue
		}
		keys = append(keys, FrontMatterKey{st.Key, st.Type.String(), st.Doc, st.Flag, st.Type.Check})
		if st.Key == "params" {
			keys = append(keys,
				FrontMatterKey{"form", "task form name", "read the tasks in this form only (" + FormNames() + ")", "", isFormName},
				FrontMatterKey{"todos", "list of mappings", "the tasks, as Cursor plans list them (id, content, status, dependencies)", "", isList},
				FrontMatterKey{"name", str.String(), "the plan's name (Cursor plans write it)", "", str.Check},
				FrontMatterKey{"overview", str.String(), "what the plan does (Cursor plans write it)", "", str.Check})
		}
	}
	return keys
}

func isFormName(v any) string {
	s, ok := v.(string)
	if !ok {
		return "must be a task form name (" + FormNames() + ")"
	}
	if _, err := ParseForm(s); err != nil {
		return "must be a task form name (" + FormNames() + ")"
	}
	return ""
}

func isList(v any) string {
	if _, ok := v.([]any); ok {
		return ""
	}
	return "must be a list"
}

func frontMatterKey(name string) *FrontMatterKey {
	for i := range FrontMatterKeys {
		if FrontMatterKeys[i].Name == name {
			return &FrontMatterKeys[i]
		}
	}
	return nil
}

// splitFrontMatter finds YAML front matter at src[start:]: a first line
// "---" and a closing line "---" or "...". It returns the content's offsets
// and the offset just past the closing line; ok is false when there is none.
// opened reports an opening line without a closing one.
func splitFrontMatter(src []byte, start int) (content [2]int, end int, ok, opened bool) {
	first, next := lineAt(src, start)
	if string(bytes.TrimRight(first, " \t\r")) != "---" {
		return content, 0, false, false
	}
	for pos := next; pos < len(src); {
		line, after := lineAt(src, pos)
		t := string(bytes.TrimRight(line, " \t\r"))
		if t == "---" || t == "..." {
			return [2]int{next, pos}, after, true, true
		}
		pos = after
	}
	return content, 0, false, true
}

// lineAt returns the line starting at pos, without its "\n", and the offset
// of the next line.
func lineAt(src []byte, pos int) ([]byte, int) {
	i := bytes.IndexByte(src[pos:], '\n')
	if i < 0 {
		return src[pos:], len(src)
	}
	return src[pos : pos+i], pos + i + 1
}

var yamlLineRe = regexp.MustCompile(`line (\d+): `)

// MaxFrontMatter is the largest front matter implloop decodes (64 KiB). A
// plan's settings take a few lines; YAML parsing costs far more per byte
// than markdown, so a huge front matter is refused rather than decoded.
const MaxFrontMatter = 64 << 10

// parseFrontMatter decodes the front matter text; firstLine is the file
// line of its first line. Problems are reported through diag.
//
// YAML aliases ("*name") are refused: settings never need them, and each
// alias is a copy of its anchor when decoded, so a few lines of nested
// aliases ("billion laughs") would decode to millions of values.
func parseFrontMatter(text []byte, firstLine int, diag func(line, col int, sev Severity, format string, args ...any)) map[string]any {
	doc, fm := frontMatterMapping(text, firstLine, diag)
	if doc == nil {
		return fm
	}
	fm, foreign := readFrontMatterKeys(doc, firstLine, diag)
	// Other tools' metadata (GSD's phase, wave, depends_on; an ExecPlan's
	// author, status) is one warning, not one per key: implloop ignores it.
	// The metadata of a format implloop reads (an awesome-copilot plan's
	// goal and date_created, a CCPM epic's prd and progress) is none.
	if readFormatMetadata(fm, foreign.keys) {
		foreign.keys = nil
	}
	switch len(foreign.keys) {
	case 0:
	case 1:
		diag(foreign.line, foreign.col, SeverityWarning, "unknown front matter key %s, ignored (known: %s)", foreign.keys[0], knownKeyList())
	default:
		diag(foreign.line, foreign.col, SeverityWarning, "%d unknown front matter keys, ignored: %s (known: %s)", len(foreign.keys), strings.Join(foreign.keys, ", "), knownKeyList())
	}
	return fm
}

// frontMatterMapping parses the front matter as YAML and returns its
// mapping node. Without one it returns what parseFrontMatter returns
// instead: an empty map for empty front matter, nil (and a diagnostic) for
// front matter too large, not YAML, with an alias, or not a mapping.
func frontMatterMapping(text []byte, firstLine int, diag func(line, col int, sev Severity, format string, args ...any)) (*yaml.Node, map[string]any) {
	if len(text) > MaxFrontMatter {
		diag(firstLine, 1, SeverityError, "front matter is %d bytes, the limit is %d (64 KiB): plan settings take a few lines", len(text), MaxFrontMatter)
		return nil, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(text, &root); err != nil {
		line := firstLine - 1
		msg := err.Error()
		if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			line = firstLine + n - 1
		}
		msg = yamlLineRe.ReplaceAllString(strings.TrimPrefix(msg, "yaml: "), "")
		diag(line, 1, SeverityError, "front matter is not valid YAML: %s", msg)
		return nil, nil
	}
	if root.Kind == 0 || len(root.Content) == 0 { // empty front matter
		return nil, map[string]any{}
	}
	if a := firstAlias(&root); a != nil {
		diag(firstLine+a.Line-1, a.Column, SeverityError, "front matter uses the YAML alias *%s: write the value out (implloop does not expand aliases)", a.Value)
		return nil, nil
	}
	doc := root.Content[0]
	if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
		return nil, map[string]any{}
	}
	if doc.Kind != yaml.MappingNode {
		diag(firstLine+doc.Line-1, doc.Column, SeverityError, "front matter must be a mapping of settings (key: value), not a %s", yamlKind(doc))
		return nil, nil
	}
	return doc, nil
}

// foreignKeys are the unknown front matter keys that are no typo of a
// known one, quoted, and where the first stands.
type foreignKeys struct {
	keys      []string
	line, col int
}

// readFrontMatterKeys reads the mapping's keys and values, checking each
// known key's value and warning of likely typos of known keys; it returns
// the other unknown keys apart.
func readFrontMatterKeys(doc *yaml.Node, firstLine int, diag func(line, col int, sev Severity, format string, args ...any)) (map[string]any, foreignKeys) {
	fm := make(map[string]any, len(doc.Content)/2)
	var foreign foreignKeys
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		line, col := firstLine+k.Line-1, k.Column
		var key string
		if k.Kind != yaml.ScalarNode || k.Decode(&key) != nil {
			diag(line, col, SeverityError, "front matter keys must be strings")
			continue
		}
		var val any
		if err := v.Decode(&val); err != nil {
			diag(line, col, SeverityError, "front matter %q: %v", key, err)
			continue
		}
		val = jsonable(val)
		fm[key] = val
		known := frontMatterKey(key)
		if known == nil {
			if near := nearestKey(key); near != "" {
				diag(line, col, SeverityWarning, "unknown front matter key %q: did you mean %q?", key, near)
				continue
			}
			if len(foreign.keys) == 0 {
				foreign.line, foreign.col = line, col
			}
			foreign.keys = append(foreign.keys, strconv.Quote(key))
			continue
		}
		if problem := known.check(val); problem != "" {
			got := ""
			if v.Kind == yaml.ScalarNode {
				got = ", got " + strconv.Quote(v.Value)
			}
			diag(line, col, SeverityError, "front matter %q %s%s", key, problem, got)
		}
	}
	return fm, foreign
}

// nearestKey returns the known key that key is a likely typo of
// (words.Nearest), or "".
func nearestKey(key string) string {
	names := make([]string, len(FrontMatterKeys))
	for i, k := range FrontMatterKeys {
		names[i] = k.Name
	}
	return words.Nearest(key, names)
}

// firstAlias returns the first alias node under n, in document order, or
// nil. The walk visits each node once: an alias is not followed.
func firstAlias(n *yaml.Node) *yaml.Node {
	stack := []*yaml.Node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Kind == yaml.AliasNode {
			return n
		}
		for i := len(n.Content) - 1; i >= 0; i-- {
			stack = append(stack, n.Content[i])
		}
	}
	return nil
}

func knownKeyList() string {
	names := make([]string, len(FrontMatterKeys))
	for i, k := range FrontMatterKeys {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// jsonable turns what YAML decodes into values encoding/json can marshal:
// map[any]any (non-string keys) becomes map[string]any.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonable(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = jsonable(e)
		}
		return v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strconv.FormatFloat(v, 'g', -1, 64) // JSON has no NaN
		}
	}
	return v
}

// formatMetadata are the front matter keys of plan formats implloop reads,
// each with the keys that identify the format.
var formatMetadata = []struct {
	format    string
	keys      []string
	signature []string
}{
	{"awesome-copilot implementation plan", []string{"goal", "version", "date_created", "last_updated", "owner", "status", "tags"}, []string{"goal", "date_created"}},
	{"CCPM epic", []string{"status", "created", "updated", "completed", "progress", "prd", "github", "depends_on", "parallel", "conflicts_with", "priority", "effort"}, []string{"created", "progress"}},
}

// readFormatMetadata reports whether the unknown keys (quoted) are all
// the metadata of one format implloop reads, whose signature keys fm has.
func readFormatMetadata(fm map[string]any, unknown []string) bool {
	if len(unknown) == 0 {
		return false
	}
formats:
	for _, f := range formatMetadata {
		for _, k := range f.signature {
			if _, ok := fm[k]; !ok {
				continue formats
			}
		}
		for _, q := range unknown {
			k, _ := strconv.Unquote(q)
			if !slices.Contains(f.keys, k) {
				continue formats
			}
		}
		return true
	}
	return false
}
