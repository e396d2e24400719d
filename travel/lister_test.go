package travel

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// Over git:// a worker lists in protocol version 1 (the server speaks
// first: no delayed ACK to wait out), a remote's name read as its URL;
// elsewhere git's default stands.
func TestListerProtocol(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "remote", "add", "origin", "git://127.0.0.1:9418/shared.git"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	ctx := context.Background()
	for remote, v1 := range map[string]bool{
		"origin":                          true,
		"git://127.0.0.1:9418/shared.git": true,
		"https://example.com/shared.git":  false,
		filepath.Join(dir, "other.git"):   false,
	} {
		l := NewLister(ctx, dir, remote)
		if got := slices.Contains(l.pre, "protocol.version=1"); got != v1 {
			t.Errorf("%s: version 1 %v, want %v", remote, got, v1)
		}
	}
}
