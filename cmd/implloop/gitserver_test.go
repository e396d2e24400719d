package main

import (
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"

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
