package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command line in a command's Examples parses as the user would type
// it: the command exists, its flags parse, its arguments validate. Nothing
// runs. An example that drifted from the flags it shows fails here.
func TestExamplesParse(t *testing.T) {
	t.Parallel()
	io, _, _ := testIO()
	root := newRootCmd(io)
	root.InitDefaultCompletionCmd()
	// The commands whose help must show examples of real use.
	want := []string{"run", "resume", "restore", "explain", "watch", "check", "plan", "show"}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		name := strings.TrimPrefix(c.CommandPath(), "implloop ")
		if slices.Contains(want, name) && strings.TrimSpace(c.Example) == "" {
			t.Errorf("implloop %s --help has no examples", name)
		}
		itself := false
		for _, line := range strings.Split(c.Example, "\n") {
			cmds, err := exampleCommands(line)
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			for _, words := range cmds {
				got, err := parseExample(words)
				if err != nil {
					t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
					continue
				}
				itself = itself || got == c.CommandPath()
			}
		}
		if c.Example != "" && !itself {
			t.Errorf("%s: no example runs %s itself", c.CommandPath(), c.CommandPath())
		}
	}
	walk(root)
}

// parseExample parses one implloop command line on a fresh command tree
// (flags keep their values) and returns the command it names.
func parseExample(words []string) (string, error) {
	io, _, _ := testIO()
	root := newRootCmd(io)
	root.InitDefaultCompletionCmd()
	cmd, rest, err := root.Find(words[1:])
	if err != nil {
		return "", err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return "", err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return "", err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return "", err
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return "", err
	}
	return cmd.CommandPath(), nil
}

// exampleCommands splits an example line as sh would, and returns the
// words of each implloop command in it: `echo x | implloop id` and
// `implloop show --json | jq .outcome` hold one each. Blank lines and
// comments hold none; any other line must run implloop.
func exampleCommands(line string) ([][]string, error) {
	words, ops, err := shellWords(line)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, nil
	}
	var out [][]string
	var cur []string
	redirect := false
	flush := func() {
		if len(cur) > 0 && cur[0] == "implloop" {
			out = append(out, cur)
		}
		cur = nil
	}
	for i, w := range words {
		switch op := ops[i]; {
		case op == "|" || op == ";" || op == "&&" || op == "||":
			flush()
			redirect = false
		case op == "<" || op == ">" || op == ">>":
			redirect = true
		case op != "":
			return nil, &exampleError{"unexpected " + op}
		case redirect:
			redirect = false // the redirection's target
		default:
			cur = append(cur, w)
		}
	}
	flush()
	if len(out) == 0 {
		return nil, &exampleError{"not an implloop command line (make it a # comment)"}
	}
	return out, nil
}

type exampleError struct{ msg string }

func (e *exampleError) Error() string { return e.msg }

// shellWords splits a line into words and operators the way sh reads it,
// for what examples hold: '...', "..." with \ escapes, |, ;, &&, ||, <, >,
// >> and a # comment. ops[i] is the operator at i ("" for a word).
func shellWords(line string) (words, ops []string, err error) {
	var cur strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words, ops = append(words, cur.String()), append(ops, "")
			cur.Reset()
			inWord = false
		}
	}
	op := func(o string) {
		end()
		words, ops = append(words, o), append(ops, o)
	}
	r := []rune(line)
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '#' && !inWord:
			end()
			return words, ops, nil
		case c == '\'':
			j := slices.Index(r[i+1:], '\'')
			if j < 0 {
				return nil, nil, &exampleError{"unterminated '"}
			}
			cur.WriteString(string(r[i+1 : i+1+j]))
			inWord, i = true, i+1+j
		case c == '"':
			i++
			for ; i < len(r) && r[i] != '"'; i++ {
				if r[i] == '\\' && i+1 < len(r) && strings.ContainsRune(`"\$`+"`", r[i+1]) {
					i++
				}
				cur.WriteRune(r[i])
			}
			if i >= len(r) {
				return nil, nil, &exampleError{`unterminated "`}
			}
			inWord = true
		case c == '\\' && i+1 < len(r):
			i++
			cur.WriteRune(r[i])
			inWord = true
		case c == '|' || c == '&' || c == ';' || c == '<' || c == '>':
			o := string(c)
			if i+1 < len(r) && (r[i+1] == c && c != ';' && c != '<') {
				o += string(c)
				i++
			}
			if o == "&" {
				return nil, nil, &exampleError{"background jobs are not examples"}
			}
			op(o)
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	end()
	return words, ops, nil
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line string
		want [][]string
	}{
		{`  implloop run plan.md --verify "go test ./..."`, [][]string{{"implloop", "run", "plan.md", "--verify", "go test ./..."}}},
		{`  # a comment`, nil},
		{``, nil},
		{`implloop plan p.md --json | jq -r '.tasks[] | "\(.id)"'`, [][]string{{"implloop", "plan", "p.md", "--json"}}},
		{`echo 'a | b' | implloop id --model sonnet`, [][]string{{"implloop", "id", "--model", "sonnet"}}},
		{`implloop id --explain < prompt.md`, [][]string{{"implloop", "id", "--explain"}}},
		{`implloop resume --dry-run && implloop resume # then`, [][]string{{"implloop", "resume", "--dry-run"}, {"implloop", "resume"}}},
		{`implloop check --plans 'docs/*.md' --plans "a\"b"`, [][]string{{"implloop", "check", "--plans", "docs/*.md", "--plans", `a"b`}}},
	} {
		got, err := exampleCommands(c.line)
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%q: got %q, want %q", c.line, got, c.want)
		}
	}
	for _, bad := range []string{`rm BLOCKED.md`, `implloop run 'plan.md`, `implloop watch plan.md &`} {
		if _, err := exampleCommands(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// The check catches what it is for: an unknown flag, a missing argument,
// a bad --color, an unknown command.
func TestParseExampleRefuses(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"implloop run plan.md --agnet claude",
		"implloop run",
		"implloop show a b",
		"implloop --color sometimes show",
		"implloop frobnicate",
		"implloop resume extra",
	} {
		cmds, err := exampleCommands(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if _, err := parseExample(cmds[0]); err == nil {
			t.Errorf("%q: parsed", line)
		}
	}
}
