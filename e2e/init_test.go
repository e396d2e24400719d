//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/fakeclaude"
	"github.com/implloop/implloop/internal/gittest"
)

// TestInitClaude is the newcomer's first hour, end to end: `implloop init`
// in a real (Go) repository, then the commands it prints, with the real
// Claude Code CLI (against the scripted server) as the agent: the sample
// plan runs to DONE, its gate (go test ./..., from go.mod) passing after
// each task, and the report names each task's final message.
func TestInitClaude(t *testing.T) {
	implloop := buildImplloop(t)
	bin := fakeclaude.CLI(t)
	repo := newRepo(t)
	r := gittest.At(t, repo)
	r.Write("go.mod", "module example.com/sample\n\ngo 1.22\n")
	r.Git("add", "go.mod")
	r.Git("commit", "-q", "-m", "a Go module")

	home := t.TempDir()
	rec, h := newRecorder(fakeclaude.WriteTask)
	srv := fakeclaude.New(t, h)
	env := runEnv(append(srv.Environ(home), goCaches(t)...), onPath(t, "claude", bin))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	implloopCmd := func(args ...string) (string, string) {
		cmd := groupCommand(ctx, implloop, args...)
		cmd.Dir, cmd.Env = repo, env
		out, errb := runLogged(t, cmd, "", srv.Summary)
		return string(out), string(errb)
	}

	out, _ := implloopCmd("init")
	// The three commands it prints, and the one for a real agent.
	var printed []string
	for _, m := range regexp.MustCompile(`(?m)^  \d\. (implloop [^#]*?)\s+#`).FindAllStringSubmatch(out, -1) {
		printed = append(printed, m[1])
	}
	realCmd := regexp.MustCompile(`(?m)^  (implloop run \S+ --agent claude)\s`).FindStringSubmatch(out)
	if len(printed) != 3 || realCmd == nil {
		t.Fatalf("init printed commands %q and %v, want three and a run with --agent claude:\n%s", printed, realCmd, out)
	}
	if printed[1] != "implloop run plan.md --agent builtin" {
		t.Errorf("the second command is %q, want the builtin run", printed[1])
	}

	// 1: the plan; 2, with the real agent: run it; 3: the report.
	plan, _ := implloopCmd(strings.Fields(printed[0])[1:]...)
	if !strings.Contains(plan, "tasks     3, form headings") {
		t.Errorf("implloop plan: %s", plan)
	}
	run, _ := implloopCmd(append(strings.Fields(realCmd[1])[1:], "--model", fakeclaude.Model)...)
	if !strings.Contains(run, "DONE 3/3") {
		t.Errorf("the run with Claude Code did not end DONE 3/3:\n%s", run)
	}
	want := map[string]string{}
	for _, f := range []string{"greet/greet.go", "greet/greet_test.go", "README.md"} {
		p := filepath.Join(repo, "implloop-example", filepath.FromSlash(f))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("Claude Code did not write %s: %v", f, err)
		}
		want[p] = string(b)
	}
	checkWrites(t, rec.all(), want)
	html, _ := implloopCmd(strings.Fields(printed[2])[1:]...)
	page, err := os.ReadFile(strings.TrimSpace(html))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `<div class="final-message">`); n != 3 {
		t.Errorf("report.html shows %d final messages, want one per task", n)
	}
	log, _ := implloopCmd("show", "--task", "2", "--log")
	if !strings.Contains(log, "the agent's final message:\n    done") || !strings.Contains(log, "gate `go test ./...`: passed") {
		t.Errorf("show --task 2 --log:\n%s", log)
	}
}

// goCaches are the go command's caches, so that the gate (go test) in a
// moved HOME does not start cold.
func goCaches(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(v) != 3 {
		t.Fatalf("go env: %q", out)
	}
	return []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1], "GOPATH=" + v[2]}
}
