//go:build !linux

package cache

import "os"

// syncFiles makes files durable, one fsync each (no syncfs here).
func syncFiles(_ string, files []string) error {
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// syncDirs makes the directory entries changed in dirs durable.
func syncDirs(_ string, dirs map[string]bool) error {
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}
