//go:build unix

package fsm

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// mapSegment maps n bytes of f read-only and shared, so that it shows
// what later writes to f add; nil where the mapping fails, and reads then
// pread. n may pass the end of f: only the bytes f holds may be read. A
// 32-bit process maps nothing: the mappings would take the address space
// its heap needs.
func mapSegment(f *os.File, n int64) []byte {
	if n <= 0 || strconv.IntSize < 64 {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

func unmapSegment(b []byte) {
	if b != nil {
		unix.Munmap(b)
	}
}
