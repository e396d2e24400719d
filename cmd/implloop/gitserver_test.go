package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// gitserver VAR DIR: serves the bare repositories under DIR over smart
// HTTP on loopback (git http-backend behind net/http/cgi, pushes allowed)
// until the script ends, and sets VAR to its URL: $VAR/NAME.git is
// DIR/NAME.git.
func cmdGitServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: gitserver VAR DIR")
	}
	url, stop, err := serveGit(ts.MkAbs(args[1]), ts.Getenv("HOME"))
	ts.Check(err)
	ts.Defer(stop)
	ts.Setenv(args[0], url)
}

// serveGit serves the bare repositories under dir over smart HTTP on
// loopback (pushes allowed), with git's HOME at home, until stop: url/NAME.git
// is dir/NAME.git.
func serveGit(dir, home string) (url string, stop func(), err error) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return "", nil, err
	}
	h := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Root: "/git",
		Env: []string{
			"GIT_PROJECT_ROOT=" + dir,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + home,
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=true",
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/git", func() { srv.Close() }, nil
}

// serveGitDaemon serves the bare repositories under dir with git daemon
// on loopback (pushes allowed) until stop: url/NAME.git is dir/NAME.git.
// One process per connection, no CGI: the cheaper of the two servers.
func serveGitDaemon(dir, home string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--base-path="+dir,
		"--listen=127.0.0.1", fmt.Sprintf("--port=%d", addr.Port), dir)
	cmd.Env = []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	// In a process group of its own: git runs git-daemon as its child,
	// which killing git alone left running (a daemon per test, for
	// good), with each connection's processes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr.String())
		if err == nil {
			c.Close()
			break
		}
		if i > 200 {
			stop()
			return "", nil, fmt.Errorf("git daemon did not listen on %s: %w", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Sprintf("git://%s", addr), stop, nil
}
