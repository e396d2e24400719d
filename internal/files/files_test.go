package files

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p              string
		exists, isFile bool
	}{
		{f, true, true}, {dir, true, false}, {dangling, true, false}, {filepath.Join(dir, "none"), false, false},
	} {
		if Exists(c.p) != c.exists || IsFile(c.p) != c.isFile {
			t.Errorf("%s: Exists %v IsFile %v", c.p, Exists(c.p), IsFile(c.p))
		}
	}
}
