package travel

import (
	"context"
	"io"
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

// TestCatSessionCancelledMidRound: a pull cancelled while a round
// through a session is under way ends, with the context's error. The
// session's git reads its stdin from a pipe the round wrote every id to
// already; when the context kills git, exec's Wait waits for its stdin
// copier, blocked reading that pipe (gitcmd sets no WaitDelay), so
// gitcmd.Run never returns, git's stdout is never closed, and the round
// waits for the next answer for ever: an interrupted pull (Ctrl-C, a
// worker's cancelled context, its behind pull then joined) hangs.
func TestCatSessionCancelledMidRound(t *testing.T) {
	r := gittest.New(t)
	// Answers larger than a pipe holds: git is still writing them when
	// it is killed, after it read every id.
	r.Write("b.txt", strings.Repeat("bee\n", 1<<18))
	r.Git("add", "b.txt")
	r.Git("commit", "-q", "-m", "one")
	b := strings.TrimSpace(r.Git("rev-parse", "HEAD:b.txt"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sctx, end := withCatSessions(ctx, r.Dir)
	done := make(chan error, 1)
	go func() {
		done <- catBatch(sctx, r.Dir, []string{b, b, b}, func(i int, _ string, _ int64, _ io.Reader) error {
			if i == 0 {
				cancel()                           // Ctrl-C while the pull reads
				time.Sleep(200 * time.Millisecond) // git is killed meanwhile
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled round read every object")
		}
		end()
	case <-time.After(10 * time.Second):
		t.Fatal("a round whose context was cancelled did not end in 10 s")
	}
}
