//go:build darwin || freebsd || netbsd

package boundary

import (
	"os"
	"syscall"
)

// fileStat is fi's FileStat, with the inode and ctime that make a rewrite
// with its mtime set back visible (cp -p, rsync -t, tar).
func fileStat(fi os.FileInfo) FileStat {
	st := FileStat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Ctime = syscall.TimespecToNsec(sys.Ctimespec)
		st.Ino = uint64(sys.Ino)
	}
	return st
}
