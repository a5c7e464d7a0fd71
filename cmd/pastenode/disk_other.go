//go:build !unix

package main

import "errors"

// diskSpace is not implemented here: the disk metrics are left out.
func diskSpace(string) (free, size uint64, err error) {
	return 0, 0, errors.New("disk space: not supported on this system")
}
