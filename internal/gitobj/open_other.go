//go:build !unix

package gitobj

import "os"

// openFile opens a file to store as a blob (open_unix.go says why it
// does not block there).
func openFile(p string) (*os.File, error) { return os.Open(p) }
