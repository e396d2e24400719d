package gitcmd

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOutputAndError(t *testing.T) {
	dir := t.TempDir()
	if _, err := Output(context.Background(), dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	top, err := Output(context.Background(), dir, "rev-parse", "--show-toplevel")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(dir); top != want {
		t.Errorf("toplevel %q, want %q", top, want)
	}
	_, err = Output(context.Background(), dir, "rev-parse", "--verify", "no-such-ref")
	var ge *Error
	if !errors.As(err, &ge) || ge.ExitCode != 128 || ExitCode(err) != 128 || ge.Stderr == "" || ge.Dir != dir {
		t.Fatalf("a failing git: %#v", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "git rev-parse in "+dir+": exit status 128: ") {
		t.Errorf("message %q", msg)
	}
	// Named by its command, not the configuration given before it.
	_, err = Output(context.Background(), dir, "-c", "a.b=c", "rev-parse", "--verify", "no-such-ref")
	if msg := err.Error(); !strings.HasPrefix(msg, "git rev-parse in "+dir+": exit status 128: ") {
		t.Errorf("message %q", msg)
	}
	if ExitCode(errors.New("other")) != -1 {
		t.Error("ExitCode of a non-git error")
	}
}

func TestOptions(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	_, _, err := Run(context.Background(), Options{Dir: dir, Env: []string{"GIT_DIR=" + filepath.Join(dir, "x.git")}, Stdin: strings.NewReader("hello\n"), Stdout: &out},
		"hash-object", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("hash-object of hello: %q", got)
	}
}

func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Output(context.Background(), os.TempDir(), "version"); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("no git on PATH: %v", err)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Output(ctx, t.TempDir(), "version"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestIsObjectID(t *testing.T) {
	for s, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef01234567":                         true,
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": true,
		"0123456789ABCDEF0123456789abcdef01234567":                         false,
		"0123456789abcdef0123456789abcdef0123456":                          false,
		"0123456789abcdef0123456789abcdef0123456g":                         false,
		"": false,
	} {
		if got := IsObjectID(s); got != want {
			t.Errorf("IsObjectID(%q) = %v, want %v", s, got, want)
		}
	}
}

// git reads back every path QuotePath writes (hash-object --stdin-paths).
func TestQuotePath(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := Output(ctx, dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	names := []string{"plain", "sp ace", "new\nline", `"lead`, `mid"dle`, `back\slash`, "tab\t", "del\x7f", "ünï"}
	var in strings.Builder
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x "+n), 0o644); err != nil {
			t.Fatal(err)
		}
		in.WriteString(QuotePath(n) + "\n")
	}
	out, _, err := Run(ctx, Options{Dir: dir, Stdin: strings.NewReader(in.String())}, "hash-object", "--stdin-paths")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(out))
	for i, n := range names {
		want, err := Output(ctx, dir, "hash-object", "--", n)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != want {
			t.Errorf("%q: %s, want %s", n, got[i], want)
		}
	}
}

// A git killed as its context ends returns, though a program it started
// (an alias, a signing program, a hook) still holds its output open:
// Run waited for that program's end before (a pull given up behind an
// agent held the journal for as long).
func TestRunKilledReturnsThoughItsChildHoldsTheOutput(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := Run(ctx, Options{Dir: dir}, "-c", "alias.hold=!sleep 60", "hold")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the context's", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run still waits for the program git started")
	}
}

// A git cut off by its context while it holds a ref's lock (here an
// update-ref transaction, prepared and waiting for more input) removes
// the lock as it ends: it is asked to end (SIGTERM), which git cleans up
// after, rather than killed. A lock left behind would refuse every later
// update of that ref in the repository ("cannot lock ref ... File
// exists"), as a pull cut off by its time limit did to a worker's next
// pull.
func TestCancelledGitLeavesNoLock(t *testing.T) {
	dir := t.TempDir()
	if _, err := Output(context.Background(), dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if _, err := Output(context.Background(), dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"); err != nil {
		t.Fatal(err)
	}
	head, err := Output(context.Background(), dir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	if _, err := pw.WriteString("start\nupdate refs/implloop-pull/r " + head + " \nprepare\n"); err != nil {
		t.Fatal(err)
	}
	// Cut off once git said the transaction is prepared: its locks are
	// taken then, and registered for removal (git creates a lock file
	// a moment before it registers it: a signal in between leaves it,
	// which no caller can help).
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := Run(ctx, Options{Dir: dir, Stdin: pr, Stdout: outW}, "update-ref", "--stdin")
		done <- err
	}()
	prepared := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			if sc.Text() == "prepare: ok" {
				prepared <- true
				return
			}
		}
		prepared <- false
	}()
	select {
	case ok := <-prepared:
		if !ok {
			t.Fatalf("git ended before the transaction was prepared: %v", <-done)
		}
	case err := <-done:
		t.Fatalf("git ended before the transaction was prepared: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the transaction was never prepared")
	}
	lock := filepath.Join(dir, ".git", "refs", "implloop-pull", "r.lock")
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the prepared transaction holds no lock: %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cut off: %v", err)
	}
	pr.Close()
	if _, err := os.Stat(lock); err == nil {
		t.Fatal("the lock of a git cut off by its context was left behind")
	}
}

// A user whose git speaks German (LANGUAGE=de, as many desktops set it):
// the messages implloop reads (a lock file that exists, not a
// repository) stay git's English ones. Where git's German catalogue is
// not installed this passes trivially.
func TestMessagesInEnglish(t *testing.T) {
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LANGUAGE", "de")
	t.Setenv("LC_ALL", "")
	_, err := Output(context.Background(), t.TempDir(), "rev-parse", "--git-dir")
	var ge *Error
	if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "not a git repository") {
		t.Fatalf("git outside a repository: %v", err)
	}
}
