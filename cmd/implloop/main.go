//go:build !gendocs

// Command implloop drives a headless coding agent through a markdown
// implementation plan, one task at a time, and makes stopping and resuming
// such a run trustworthy. The program lives in packages; this file only
// hands the arguments over and exits with the code they decide.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], newIOStreams())) }
