package travel

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/gittest"
)

// childGits are the pids of this process's children named git.
func childGits(t *testing.T) map[int]bool {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := os.Getpid()
	got := map[int]bool{}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 || s[open+1:end] != "git" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			got[pid] = true
		}
	}
	return got
}

// TestCatSessionsEndedStartNoGit: once a pull's sessions are ended
// (withCatSessions' end), a round through its context gets a process of
// its own, which ends with the round. A session that never started is
// not marked ended (close returns early when s.in is nil), so such a
// round starts that session's `git cat-file --batch`, which nothing ends:
// a git left running for the life of the process. No caller reads
// through a pull's context after Pull returns today (importRuns waits for
// its goroutines), so this is latent.
func TestCatSessionsEndedStartNoGit(t *testing.T) {
	t.Skip("bug (latent): catSession.close leaves a never-started session usable, so a round after the end starts a git nothing ends")
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	r := gittest.New(t)
	r.Write("b.txt", "bee\n")
	r.Git("add", "b.txt")
	r.Git("commit", "-q", "-m", "one")
	b := strings.TrimSpace(r.Git("rev-parse", "HEAD:b.txt"))
	before := childGits(t)
	sctx, end := withCatSessions(context.Background(), r.Dir)
	end() // no round ran: no session started
	if got := catLog(sctx, r.Dir, []string{b}, -1); !strings.Contains(got, "blob 4") {
		t.Fatalf("round after the end: %s", got)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		var left []int
		for pid := range childGits(t) {
			if !before[pid] {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("git left running after the sessions ended: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
