package main

import (
	"os"
	"path/filepath"
)

// outFile is a file written as FILE.tmp next to its final name and renamed
// over it only once complete, so the final name always holds either the
// old file or a whole new one.
type outFile struct {
	*os.File
	final string

	written, flushed int64 // bytes written in order, and handed to writeback
	// writeback starts the disk writes of n bytes from off: startWriteback,
	// or what a test records.
	writeback func(fd uintptr, off, n int64)
}

// writebackEvery is how many bytes written in order go to disk at once
// while the file is written, rather than all at the end, in commit's sync:
// a page cache of gigabytes holds a whole export, whose sync then waits
// for all of it.
const writebackEvery = 8 << 20

// Write writes p and starts the disk writes of every writebackEvery bytes
// written. The callers write in order from the start (an export's tail
// goes in with WriteAt, at the end); the ranges are only a hint, and
// commit's sync makes the whole file durable whatever they were.
func (f *outFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.written += int64(n)
	if f.written-f.flushed >= writebackEvery {
		f.writeback(f.Fd(), f.flushed, f.written-f.flushed)
		f.flushed = f.written
	}
	return n, err
}

// createOut starts writing final's replacement.
func createOut(final string, perm os.FileMode) (*outFile, error) {
	// A leftover FILE.tmp (or a link planted there) is removed, and the
	// new one created exclusively, so perm always holds: a backup carries
	// every paste.
	tmp := final + ".tmp"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	return &outFile{File: f, final: final, writeback: startWriteback}, nil
}

// abort drops the replacement; final is left as it was.
func (f *outFile) abort() {
	f.Close()
	os.Remove(f.Name())
}

// commit makes the replacement durable and puts it in place of final.
func (f *outFile) commit() error {
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), f.final); err != nil {
		return err
	}
	// Make the rename itself durable; where directories cannot be synced
	// the file is still complete, so this is best effort.
	if d, err := os.Open(filepath.Dir(f.final)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
