//go:build !linux

package procgroup

// Subreaper does nothing here: there is no child subreaper outside Linux
// (the sandbox's process namespace stands in for it).
func Subreaper() (release func(), err error) { return func() {}, nil }

// Sweep finds nothing here: a process's environment cannot be read.
func Sweep(env []string) []int { return nil }

// Carrying finds nothing here: a process's environment cannot be read.
func Carrying(key string) map[int]string { return nil }

// Reap does nothing here: without a child subreaper, what a group leaves
// goes to init.
func Reap(pgid int) {}
