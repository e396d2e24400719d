package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/implloop/implloop/cmd/implloop/internal/clidocs"
)

// docs/cli/ is generated from the command tree; a stale page, a missing
// one or the page of a command that is gone fails.
func TestCLIDocsCurrent(t *testing.T) {
	t.Parallel()
	const regen = "run go generate ./cmd/implloop and commit the result"
	pages, err := clidocs.Markdown(newDocsRoot())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "docs", "cli")
	for _, name := range clidocs.Names(pages) {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%v: %s", err, regen)
			continue
		}
		if !bytes.Equal(got, pages[name]) {
			t.Errorf("docs/cli/%s is stale: %s", name, regen)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, f := range files {
		if _, ok := pages[filepath.Base(f)]; !ok {
			t.Errorf("docs/cli/%s documents no command: %s", filepath.Base(f), regen)
		}
	}
	for _, want := range []string{"implloop.md", "implloop_run.md", "implloop_completion_zsh.md", "implloop_version.md"} {
		if _, ok := pages[want]; !ok {
			t.Errorf("no page %s", want)
		}
	}
	for name, p := range pages {
		// The same bytes on every machine, every day, from every build.
		for _, bad := range []string{"Auto generated", "spf13/cobra on", buildVersion().Go + " " + buildVersion().Platform} {
			if strings.Contains(string(p), bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
	if !strings.Contains(string(pages["implloop_show.md"]), "implloop show --task 3 --diff") {
		t.Errorf("implloop_show.md has no examples")
	}
}

// The man pages render (md2man takes the help texts as markdown).
func TestManPages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := clidocs.WriteMan(newDocsRoot(), dir, "implloop "+version); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "implloop-restore.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`.TH "IMPLLOOP" "1"`, "refs/implloop/runs/<run>", "implloop restore --task 3", "EXIT STATUS"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("implloop-restore.1 does not say %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "Auto generated") {
		t.Errorf("implloop-restore.1 has cobra's dated footer")
	}
}
