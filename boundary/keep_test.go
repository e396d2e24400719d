package boundary

import (
	"context"
	"strings"
	"testing"
)

// TestKeep: a run's boundaries keep the plan and the user's ignored files
// beside their trees, on the run's kept ref, a commit only when what they
// keep changed; wholly ignored directories and files over the limits are
// listed, not stored; implloop.keep names a path inside an ignored
// directory to keep; KeptPlans reads the plan at the run's first and last
// boundaries; nothing kept reaches the boundary commits.
func TestKeep(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write(".gitignore", ".env\nnode_modules/\n*.bin\n")
	r.write("plan.md", "- [ ] Task 1\n")
	r.write("a.txt", "a\n")
	r.commitAll("init")
	r.write(".env", "SECRET=1\n")
	r.write("node_modules/pkg/index.js", "module\n")
	r.write("node_modules/pkg/keep.json", "{}\n")
	r.write("big.bin", strings.Repeat("x", 2000))
	r.git("config", "implloop.keepIgnoredFileSize", "1k")
	r.git("config", "--add", "implloop.keep", "node_modules/pkg/keep.json")
	ctx := context.Background()
	k, err := KeepSettings(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if k.Limits.FileSize != 1024 || k.Limits.RunSize != DefaultKeepRunSize || !k.Ignored || len(k.Paths) != 1 {
		t.Fatalf("settings %+v", k)
	}
	k.Plan = "plan.md"
	s0 := r.take(WithRun("keep"), WithExclude("plan.md"), WithKeep(k))
	ig := s0.Ignored
	var files []string
	for _, f := range ig.Files {
		files = append(files, f.Path)
	}
	if got := strings.Join(files, " "); got != ".env node_modules/pkg/keep.json" {
		t.Errorf("kept %q", got)
	}
	if got := strings.Join(ig.Dirs, " "); got != "node_modules" {
		t.Errorf("listed directories %q", got)
	}
	if got := strings.Join(ig.Skipped, " "); got != "big.bin" {
		t.Errorf("skipped %q", got)
	}
	if s0.Kept == "" || s0.Plan == nil || !s0.Plan.Blob.Present() {
		t.Fatalf("kept %q, plan %+v", s0.Kept, s0.Plan)
	}
	if got := r.git("cat-file", "blob", s0.Kept+":ignored/.env"); got != "SECRET=1\n" {
		t.Errorf(".env kept as %q", got)
	}
	if got := strings.TrimSpace(r.git("rev-parse", KeptRef("keep"))); got != s0.Kept {
		t.Errorf("kept ref at %s, want %s", got, s0.Kept)
	}
	// Nothing kept reaches the boundaries: push sends those.
	if _, err := r.gitErr(nil, "merge-base", "--is-ancestor", s0.Kept, s0.Commit); err == nil {
		t.Error("the boundary commit reaches the kept commit")
	}

	// Unchanged: the same kept commit. Changed: a new one on top.
	r.write("a.txt", "a edited\n")
	s1 := r.take(WithRun("keep"), WithExclude("plan.md"), WithKeep(k), WithPrev(s0))
	if s1.Kept != s0.Kept {
		t.Errorf("nothing kept changed, but a new kept commit %s", s1.Kept)
	}
	r.write("plan.md", "- [x] Task 1\n")
	r.remove(".env")
	s2 := r.take(WithRun("keep"), WithExclude("plan.md"), WithKeep(k), WithPrev(s1))
	if s2.Kept == s1.Kept || strings.TrimSpace(r.git("rev-parse", s2.Kept+"^1")) != s1.Kept {
		t.Errorf("kept %s after the plan changed, its first parent should be %s", s2.Kept, s1.Kept)
	}
	if _, ok := s2.Ignored.File(".env"); ok {
		t.Error(".env is kept although it is gone")
	}
	first, last, ok, err := KeptPlans(ctx, r.dir, "keep")
	if err != nil || !ok || string(first) != "- [ ] Task 1\n" || string(last) != "- [x] Task 1\n" {
		t.Errorf("kept plans %q, %q, %v, %v", first, last, ok, err)
	}
	if _, _, ok, err := KeptPlans(ctx, r.dir, "none"); ok || err != nil {
		t.Errorf("a run that kept nothing: %v %v", ok, err)
	}
}
