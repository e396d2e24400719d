package loop

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/implloop/implloop/cache"
)

// --sandbox-allow paths: "~/" from home, relative ones from the
// repository root, resolved; a missing path, or one inside implloop's
// state, is refused as a setting.
func TestSandboxAllow(t *testing.T) {
	t.Parallel()
	root, home := resolvedDir(t), resolvedDir(t)
	for _, d := range []string{filepath.Join(root, "fixtures"), filepath.Join(home, ".gradle"), filepath.Join(root, ".git", "implloop", "runs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dirs := cache.Dirs{Root: root, State: filepath.Join(root, ".git", "implloop"), Lock: filepath.Join(root, ".git", "implloop")}
	got, err := sandboxAllow([]string{"fixtures", "~/.gradle", home}, root, home, dirs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(root, "fixtures"), filepath.Join(home, ".gradle"), home}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"missing", ".git/implloop/runs", ".git/implloop"} {
		var se *SettingError
		if _, err := sandboxAllow([]string{bad}, root, home, dirs); !errors.As(err, &se) || se.Flag != "sandbox-allow" || se.Hint == "" {
			t.Errorf("%s: %v, want a --sandbox-allow SettingError", bad, err)
		}
	}
}

func resolvedDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
