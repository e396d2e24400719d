package gittest

import (
	"strings"
	"testing"
)

func TestRepo(t *testing.T) {
	r := New(t)
	if b := strings.TrimSpace(r.Git("branch", "--show-current")); b != "main" {
		t.Errorf("branch %q, want main", b)
	}
	r.Write("d/a.txt", "a\n")
	head := r.Commit("first")
	if got := strings.TrimSpace(r.Git("log", "-1", "--format=%H %an <%ae> %cn <%ce> %s")); got != head+" "+Name+" <"+Email+"> "+Name+" <"+Email+"> first" {
		t.Errorf("commit %q", got)
	}
	if got := r.Git("show", "HEAD:d/a.txt"); got != "a\n" {
		t.Errorf("d/a.txt committed as %q", got)
	}
	r.Remove("d/a.txt")
	if st := r.Git("status", "--porcelain"); st != " D d/a.txt\n" {
		t.Errorf("status %q", st)
	}
	if _, err := r.GitErr("rev-parse", "no-such-rev"); err == nil || !strings.Contains(err.Error(), "git rev-parse no-such-rev") {
		t.Errorf("GitErr: %v", err)
	}
}

func TestEnvDropsLeaky(t *testing.T) {
	t.Setenv("GIT_DIR", "/elsewhere")
	r := At(t, t.TempDir())
	for _, kv := range r.Env() {
		if strings.HasPrefix(kv, "GIT_DIR=") {
			t.Errorf("Env keeps %s", kv)
		}
	}
}
