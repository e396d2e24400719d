//go:build !linux && !darwin && !freebsd && !netbsd

package boundary

import "os"

// fileStat is fi's FileStat: size and mtime only.
func fileStat(fi os.FileInfo) FileStat {
	return FileStat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}
