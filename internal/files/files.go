// Package files answers the two questions implloop asks of a path before
// it reads or cleans up: is something there, and is it a regular file.
package files

import "os"

// Exists reports whether something is at p: a file, a directory, or a
// link (even one that leads nowhere).
func Exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// IsFile reports whether p is a regular file (a link to one counts).
func IsFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
