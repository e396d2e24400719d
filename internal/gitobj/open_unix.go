//go:build unix

package gitobj

import (
	"os"
	"syscall"
)

// openFile opens a file to store as a blob without blocking: a FIFO (a
// regular file swapped for one after the caller looked, say by an
// agent's leftover process) would block an open for reading until a
// writer came, in process, where no context reaches it; opened so, it
// is found not regular and left to git, whose process the context ends.
func openFile(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
