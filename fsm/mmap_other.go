//go:build !unix

package fsm

import "os"

// mapSegment maps nothing where mmap is not available: reads pread.
func mapSegment(*os.File, int64) []byte { return nil }

func unmapSegment([]byte) {}
