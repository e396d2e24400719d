package boundary

import (
	"os"
	"syscall"
)

// fileStat is fi's FileStat.
func fileStat(fi os.FileInfo) FileStat {
	st := FileStat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Ctime = sys.Ctim.Nano()
		st.Ino = sys.Ino
	}
	return st
}
