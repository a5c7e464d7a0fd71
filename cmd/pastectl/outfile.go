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
	return &outFile{File: f, final: final}, nil
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
