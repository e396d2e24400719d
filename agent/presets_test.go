package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeAgent writes an executable shell script called name into a new
// directory and puts that directory first on PATH. The script records its
// argv (one per line), stdin, working directory and IMPLLOOP_* environment
// under rec, then prints the fixture: that agent's documented output shape.
func fakeAgent(t *testing.T, name, fixture string) (rec string) {
	t.Helper()
	bin := t.TempDir()
	rec = t.TempDir()
	out, err := filepath.Abs(filepath.Join("testdata", "output", fixture))
	if err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
rec='` + rec + `'
printf '%s\n' "$@" > "$rec/argv"
cat > "$rec/stdin"
pwd -P > "$rec/cwd"
env | grep '^IMPLLOOP_' | sort > "$rec/env"
echo "fake ` + name + ` is working" >&2
cat '` + out + `'
`
	if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return rec
}

func readRec(t *testing.T, rec, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rec, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		name, fixture, model string
		argv                 []string
	}{
		{"claude", "claude-stream.jsonl", "opus", []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--model", "opus"}},
		{"claude", "claude.json", "", []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}},
		{"codex", "codex.jsonl", "gpt-5-codex", []string{"exec", "--json", "--sandbox", "workspace-write", "-m", "gpt-5-codex", "-"}},
		{"codex", "codex.jsonl", "", []string{"exec", "--json", "--sandbox", "workspace-write", "-"}},
		{"codex", "codex-cache-write.jsonl", "", []string{"exec", "--json", "--sandbox", "workspace-write", "-"}},
		{"gemini", "gemini-stream.jsonl", "gemini-2.5-pro", []string{"--output-format", "stream-json", "--approval-mode", "auto_edit", "--skip-trust", "-m", "gemini-2.5-pro"}},
		{"gemini", "gemini-stream-error.jsonl", "", []string{"--output-format", "stream-json", "--approval-mode", "auto_edit", "--skip-trust"}},
		{"opencode", "opencode.jsonl", "anthropic/claude-sonnet-4-5", []string{"run", "--format", "json", "-m", "anthropic/claude-sonnet-4-5"}},
	} {
		t.Run(tc.name+"/"+tc.model, func(t *testing.T) {
			rec := fakeAgent(t, tc.name, tc.fixture)
			a, err := New(tc.name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Check(); err != nil {
				t.Fatal(err)
			}
			repo := t.TempDir()
			prompt := []byte("Implement task 1.\n\n```json\n{\"task\":{\"text\":\"${{ x }}\"}}\n```\n")
			var stdout, stderr bytes.Buffer
			res, err := a.Run(context.Background(), Request{
				Prompt: prompt,
				Dir:    repo,
				Env:    ProtocolEnv("r-1", "1", 1, "implement", "", "/tmp/ctx.json", ""),
				Model:  tc.model,
				Stdout: &stdout,
				Stderr: &stderr,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSuffix(readRec(t, rec, "argv"), "\n"), "\n"); !reflect.DeepEqual(got, tc.argv) {
				t.Errorf("argv = %q, want %q", got, tc.argv)
			}
			if got := readRec(t, rec, "stdin"); got != string(prompt) {
				t.Errorf("stdin = %q", got)
			}
			if got, want := strings.TrimSpace(readRec(t, rec, "cwd")), evalSymlinks(t, repo); got != want {
				t.Errorf("cwd = %q, want %q", got, want)
			}
			wantEnv := "IMPLLOOP_ATTEMPT=1\nIMPLLOOP_CONTEXT_FILE=/tmp/ctx.json\nIMPLLOOP_ROLE=implement\nIMPLLOOP_RUN_ID=r-1\nIMPLLOOP_TASK_ID=1\n"
			if got := readRec(t, rec, "env"); got != wantEnv {
				t.Errorf("env = %q, want %q", got, wantEnv)
			}
			if !bytes.Equal(stdout.Bytes(), readFixture(t, tc.fixture)) {
				t.Errorf("stdout was not streamed byte for byte")
			}
			if !strings.Contains(stderr.String(), "is working") {
				t.Errorf("stderr = %q", stderr.String())
			}
			want := fixtureResults[tc.fixture]
			if res.ExitCode != 0 || !sameResult(res, want) {
				t.Errorf("result:\n got %+v\nwant %+v", res, want)
			}
		})
	}
}

func evalSymlinks(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for name, pkg := range map[string]string{
		"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli", "opencode": "opencode-ai",
	} {
		a, err := New(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = a.Check()
		var ce *CheckError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: Check() = %v, want a *CheckError", name, err)
		}
		if !strings.Contains(err.Error(), `"`+name+`" not found in $PATH`) || !strings.Contains(ce.Hint, "npm install -g "+pkg) {
			t.Errorf("%s: unclear error: %v", name, err)
		}
	}
	a, _ := New("exec", Options{Command: "no-such-agent --flag"})
	if err := a.Check(); err == nil || !strings.Contains(err.Error(), "no-such-agent") {
		t.Errorf("exec: Check() = %v", err)
	}
	a, _ = New("exec", Options{})
	if err := a.Check(); err == nil || !strings.Contains(err.Error(), "--agent-cmd") {
		t.Errorf("exec without a command: Check() = %v", err)
	}
	a, _ = New("exec", Options{Command: "agent | tee log"})
	if err := a.Check(); err == nil || !strings.Contains(err.Error(), "sh -c") {
		t.Errorf("exec with a pipe: Check() = %v", err)
	}
	if _, err := New("cursor", Options{}); err == nil || !strings.Contains(err.Error(), "claude, codex, exec") {
		t.Errorf("unknown agent: %v", err)
	}
}

func TestBinaryOverride(t *testing.T) {
	rec := fakeAgent(t, "my-claude", "claude.json")
	a, _ := New("claude", Options{Binary: "my-claude"})
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), Request{Dir: t.TempDir(), Prompt: []byte("p")})
	if err != nil || res.OutputTokens != 356 {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := readRec(t, rec, "argv"); !strings.HasPrefix(got, "-p\n") {
		t.Errorf("argv = %q", got)
	}
}

func TestPresetVersion(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\necho '2.1.197 (Claude Code)'\n"), 0o755)
	a, _ := New("claude", Options{Binary: filepath.Join(bin, "claude")})
	v, err := a.(Versioner).Version(context.Background())
	if err != nil || v != "2.1.197 (Claude Code)" {
		t.Fatalf("Version() = %q, %v", v, err)
	}
}

func TestProtocolEnv(t *testing.T) {
	got := ProtocolEnv("20250101-abcd", "10", 2, "implement", "ff", "/c.json", "/p.md")
	want := map[string]string{
		"IMPLLOOP_RUN_ID": "20250101-abcd", "IMPLLOOP_TASK_ID": "10", "IMPLLOOP_ATTEMPT": "2", "IMPLLOOP_ROLE": "implement",
		"IMPLLOOP_PLAN_SHA256": "ff", "IMPLLOOP_CONTEXT_FILE": "/c.json", "IMPLLOOP_PROMPT_FILE": "/p.md",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

// The exec fallback parses every accepted shape, such as Claude Code's
// stream-json or a JSON array, that no preset prints.
func TestExecShapes(t *testing.T) {
	for name, want := range fixtureResults {
		path, err := filepath.Abs(filepath.Join("testdata", "output", name))
		if err != nil {
			t.Fatal(err)
		}
		a := newExecAgent(t, QuoteCommand([]string{"cat", path}), time.Second)
		res, err := a.Run(context.Background(), Request{Dir: t.TempDir()})
		if err != nil || !sameResult(res, want) {
			t.Errorf("%s: %+v, %v", name, res, err)
		}
	}
}

// Every preset has a guide for `implloop init`: its login and what its
// permission flags allow, and the command line it really runs.
func TestGuides(t *testing.T) {
	t.Parallel()
	gs := Guides()
	if len(gs) != len(presets()) {
		t.Fatalf("%d guides for %d presets", len(gs), len(presets()))
	}
	for i, g := range gs {
		p := presets()[i]
		if g.Login == "" || g.Allows == "" || g.Package != p.pkg {
			t.Errorf("%s: guide %+v is incomplete", p.name, g)
		}
		if want := p.bin + " " + strings.Join(p.args(""), " "); g.Command != want {
			t.Errorf("%s: command %q, want %q", p.name, g.Command, want)
		}
	}
}
