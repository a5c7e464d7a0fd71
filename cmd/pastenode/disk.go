package main

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// defaultMaxStoreBytes is --max-store-bytes when none is given: the size
// of the file system that holds dataDir, less the reserve, or no limit
// when that is unknown. Pastes live on disk, so the disk bounds the store;
// the storage guard refuses creates at the reserve whatever else the disk
// holds, and this limit says the same of the store alone in its metrics.
func defaultMaxStoreBytes(dataDir string, reserve int64) int64 {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return 0
	}
	// The data dir may not exist yet: ask the nearest directory that does.
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return 0
		}
		dir = parent
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0
	}
	return max(int64(st.Blocks)*int64(st.Bsize)-max(reserve, 0), 0)
}
