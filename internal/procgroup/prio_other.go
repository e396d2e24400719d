//go:build !linux

package procgroup

// Background lowers the priority of the calling goroutine's work on
// Linux (prio_linux.go); elsewhere it does nothing.
func Background() {}
