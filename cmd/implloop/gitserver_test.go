package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
//
// Each connection is served by its own `git-daemon --inetd`, accepted
// here, as inetd or systemd's socket activation would: git daemon's own
// listener has a backlog of 5, and a fleet's workers, which look, claim
// and push at the same moments, overflowed it on a loaded machine; each
// connection the kernel dropped cost its client a second (TCP's first
// retransmission), which no hosting service's server makes it pay.
func serveGitDaemon(dir, home string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	// git-daemon itself, from git's exec path: `git daemon` would start
	// it through git, a process more per connection.
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	daemon := filepath.Join(strings.TrimSpace(string(out)), "git-daemon")
	if _, err := os.Stat(daemon); err != nil {
		ln.Close()
		return "", nil, fmt.Errorf("git daemon is not installed (some systems package it apart from git): %w", err)
	}
	env := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	var (
		mu      sync.Mutex
		stopped bool
		running = map[*exec.Cmd]bool{}
		wg      sync.WaitGroup
	)
	serve := func(c net.Conn) {
		defer c.Close()
		f, err := c.(*net.TCPConn).File()
		if err != nil {
			return
		}
		defer f.Close() // the child has its own copy once started
		cmd := exec.Command(daemon, "--inetd", "--log-destination=none", "--export-all", "--enable=receive-pack", "--base-path="+dir, dir)
		cmd.Env, cmd.Stdin, cmd.Stdout = env, f, f
		// In a process group of its own, with the connection's
		// processes (upload-pack, receive-pack and theirs): stop kills
		// them all.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		if err := cmd.Start(); err != nil {
			mu.Unlock()
			fmt.Fprintf(os.Stderr, "serveGitDaemon: a connection not served: %v\n", err)
			return
		}
		running[cmd] = true
		wg.Add(1)
		mu.Unlock()
		go func() {
			defer wg.Done()
			_ = cmd.Wait()
			mu.Lock()
			delete(running, cmd)
			mu.Unlock()
		}()
	}
	wg.Add(1) // the accept loop: each connection's Add is made while it runs
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return // by stop
			}
			if err != nil {
				// Out of file descriptors, say: the client's connection
				// waits in the queue, and is taken a moment later.
				time.Sleep(10 * time.Millisecond)
				continue
			}
			serve(c)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ln.Close()
			// The connections still served end once their clients are
			// gone; those that do not within a while are killed.
			ended := make(chan struct{})
			go func() { wg.Wait(); close(ended) }()
			select {
			case <-ended:
				return
			case <-time.After(2 * time.Second):
			}
			mu.Lock()
			stopped = true
			for cmd := range running {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			mu.Unlock()
			<-ended
		})
	}
	return "git://" + ln.Addr().String(), stop, nil
}
