package main

import "golang.org/x/sys/unix"

// startWriteback asks the kernel to start writing n bytes of f from off to
// disk, without waiting for them.
func startWriteback(fd uintptr, off, n int64) {
	unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
