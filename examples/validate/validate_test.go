package validate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v4"
	batchv1 "k8s.io/api/batch/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// root is the repository's root.
var root = filepath.Join("..", "..")

// The composite action: its metadata decodes strictly (no key GitHub
// does not know), it is composite, and every script of it is valid bash
// that takes the inputs from env: an input spliced into a script
// (${{ inputs.x }} in run:) would be shell injection.
func TestActionMetadata(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var md actionlint.ActionMetadata
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&md); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if md.Runs.Using != "composite" {
		t.Fatalf("action.yml: runs.using is %q, want composite", md.Runs.Using)
	}
	for _, in := range []string{"mode", "plan", "remote", "agent", "verify", "lease", "signing-key", "allowed-signers"} {
		if _, ok := md.Inputs[in]; !ok {
			t.Errorf("action.yml: no input %q", in)
		}
	}
	var raw struct {
		Runs struct {
			Steps []struct {
				Name  string `yaml:"name"`
				Run   string `yaml:"run"`
				Shell string `yaml:"shell"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	scripts := 0
	for _, s := range raw.Runs.Steps {
		if s.Run == "" {
			continue
		}
		scripts++
		if strings.Contains(s.Run, "${{") {
			t.Errorf("action.yml: step %q splices an expression into its script: pass it through env", s.Name)
		}
		if s.Shell != "bash" {
			t.Errorf("action.yml: step %q: shell %q, want bash", s.Name, s.Shell)
		}
		cmd := exec.Command("bash", "-n")
		cmd.Stdin = strings.NewReader(s.Run)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("action.yml: step %q is not valid bash: %v\n%s", s.Name, err, out)
		}
	}
	if scripts < 4 {
		t.Fatalf("action.yml: %d scripts", scripts)
	}
}

// The example workflow, checked by actionlint with the action it uses
// read from this repository's action.yml (as ./), so that every with:
// is an input the action has and every expression is one GitHub takes.
func TestActionsWorkflow(t *testing.T) {
	path := filepath.Join(root, "examples", "github-actions", "implloop-workers.yml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	local := bytes.ReplaceAll(b, []byte("uses: implloop/implloop@main"), []byte("uses: ./"))
	if bytes.Equal(local, b) {
		t.Fatal("the workflow does not use implloop/implloop@main")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := actionlint.NewProject(abs)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{Shellcheck: shellcheck()})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(path, local, proj)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Fatalf("actionlint: %d problem(s):\n%s", len(errs), out.String())
	}
	// The checks must see the action: a with: it lacks is an error.
	bad := bytes.Replace(local, []byte("mode: work"), []byte("mode: work\n          no-such-input: 1"), 1)
	if errs, err := l.Lint(path, bad, proj); err != nil || len(errs) == 0 {
		t.Fatalf("actionlint did not see the action's inputs (%v, %d errors)", err, len(errs))
	}
}

// shellcheck is the shellcheck actionlint runs on run: scripts, when
// installed ("" when not: actionlint then skips that check).
func shellcheck() string {
	if p, err := exec.LookPath("shellcheck"); err == nil {
		return p
	}
	return ""
}

// The Kubernetes manifests: every document decodes strictly (a field the
// API does not have is an error) into a batch/v1 Job; the workers' Job is
// Indexed with parallelism = completions, and its pods run implloop work.
func TestIndexedJob(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "examples", "kubernetes", "indexed-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var jobs []batchv1.Job
	for i, doc := range strings.Split(string(b), "\n---\n") {
		var job batchv1.Job
		if err := sigsyaml.UnmarshalStrict([]byte(doc), &job); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		if job.APIVersion != "batch/v1" || job.Kind != "Job" {
			t.Fatalf("document %d: %s %s, want batch/v1 Job", i+1, job.APIVersion, job.Kind)
		}
		jobs = append(jobs, job)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want the workers and the fan-in", len(jobs))
	}
	w := jobs[0].Spec
	if w.CompletionMode == nil || *w.CompletionMode != batchv1.IndexedCompletion {
		t.Fatal("the workers' Job is not Indexed")
	}
	if w.Parallelism == nil || w.Completions == nil || *w.Parallelism != *w.Completions || *w.Parallelism < 2 {
		t.Fatal("the workers' Job does not run its workers at once (parallelism = completions)")
	}
	if !strings.Contains(strings.Join(w.Template.Spec.Containers[0].Args, " "), "implloop work") {
		t.Fatal("the workers' pods do not run implloop work")
	}
	if !strings.Contains(strings.Join(jobs[1].Spec.Template.Spec.Containers[0].Args, " "), "implloop run") {
		t.Fatal("the fan-in does not run implloop run")
	}
}
