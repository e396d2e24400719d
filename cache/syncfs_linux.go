package cache

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFiles makes files (in dir's file system) durable: one syncfs(2)
// flushes the whole file system, which costs about what one fsync does.
func syncFiles(dir string, _ []string) error { return syncfs(dir) }

// syncDirs makes the directory entries changed in dirs durable.
func syncDirs(dir string, _ map[string]bool) error { return syncfs(dir) }

func syncfs(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
