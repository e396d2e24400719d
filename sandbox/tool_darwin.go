package sandbox

import "os"

// seatbeltPath is where macOS keeps sandbox-exec.
const seatbeltPath = "/usr/bin/sandbox-exec"

// findTool finds sandbox-exec.
func findTool() (tool, error) {
	if _, err := os.Stat(seatbeltPath); err != nil {
		return tool{}, &UnavailableError{Msg: "sandbox-exec is not at " + seatbeltPath,
			Hint: "sandbox-exec is part of macOS; run without --sandbox where it is missing"}
	}
	return seatbeltTool(seatbeltPath), nil
}
