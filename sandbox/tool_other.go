//go:build !linux && !darwin

package sandbox

import "runtime"

// findTool: there is no sandbox tool implloop knows on this system.
func findTool() (tool, error) {
	return tool{}, &UnavailableError{Msg: "not available on " + runtime.GOOS + " (it uses bubblewrap on Linux and sandbox-exec on macOS)",
		Hint: "run without --sandbox, or in a Linux container or VM"}
}
