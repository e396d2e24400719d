package sandbox

import "os/exec"

// findTool finds bubblewrap.
func findTool() (tool, error) { return lookBwrap(exec.LookPath) }
