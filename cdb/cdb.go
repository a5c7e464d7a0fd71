// Package cdb reads and writes djb's constant database (CDB) format and,
// on top of it, the kawipiko-2022a archive schema that pastenode uses for
// its static mirror export.
//
// A CDB file is a 2048-byte header of 256 (table offset, slot count) pairs,
// then the records (key length, data length, key, data), then 256 open
// addressing hash tables. All integers are little-endian uint32, so a file
// is always smaller than 4 GiB. Writer streams records to disk and keeps
// only 8 bytes per key in memory; Reader looks keys up in a read-only
// memory mapping and never trusts an offset it has not checked.
//
// ArchiveWriter and Archive implement the kawipiko-2022a archive schema of
// kawipiko-server (github.com/volution/kawipiko), so that it can serve an
// export unchanged. Its keys are:
//
//   - "schema", whose value is exactly "kawipiko-2022a";
//   - path references "f:/path" (files) and "r:/path" (redirects), whose
//     16-byte value is a metadata id "m" and a content id "d", each the
//     letter and 7 lowercase hex digits of one shared counter;
//   - the metadata blocks (key "m…"), which encode the status and headers
//     (see meta.go), and the content blocks (key "d…"), which hold the body
//     as sent, already compressed when the metadata says so; identical
//     blocks are stored once and shared;
//   - the path indexes "F0000001", "L0000001" and "R0000001": the sorted
//     file, folder-listing and redirect paths, each followed by a newline.
//
// A path ending in /* is a wildcard: kawipiko-server answers a path with no
// entry of its own from the nearest wildcard above it, up to /*.
package cdb

import (
	"encoding/binary"
	"errors"
)

// Errors returned by this package. Errors are wrapped with detail, so
// compare them with errors.Is.
var (
	// ErrCorrupt reports a file, record or metadata block that does not
	// follow the format: an offset or length out of bounds, an unknown
	// header id, a malformed reference.
	ErrCorrupt = errors.New("cdb: corrupt data")

	// ErrTooLarge reports that a write would make the file reach 4 GiB,
	// the limit of its 32-bit offsets, or that the archive ran out of
	// record ids.
	ErrTooLarge = errors.New("cdb: file too large")

	// ErrZeroHash reports a key whose CDB hash is 0. kawipiko treats a
	// slot with hash 0 as empty, so such a key could never be found.
	ErrZeroHash = errors.New("cdb: key hashes to zero")

	// ErrClosed reports use of a Reader, Writer or archive after Close.
	ErrClosed = errors.New("cdb: closed")

	// ErrSchema reports a CDB file that is not a kawipiko-2022a archive.
	ErrSchema = errors.New("cdb: not a kawipiko-2022a archive")

	// ErrInvalidHeader reports a status or header that the 2022a
	// metadata encoding cannot represent.
	ErrInvalidHeader = errors.New("cdb: invalid header")

	// ErrInvalidPath reports an archive path that the server could never
	// match or that would break the path index.
	ErrInvalidPath = errors.New("cdb: invalid path")

	// ErrDuplicatePath reports a path added twice to an archive.
	ErrDuplicatePath = errors.New("cdb: duplicate path")
)

const (
	// headerSize is the size of the table directory at the start of
	// every CDB file.
	headerSize = 256 * 8

	// MaxSize is the largest file this package writes. Offsets are
	// uint32, and kawipiko-server refuses files of 4 GiB or more.
	MaxSize = 1<<32 - 1
)

// Hash returns the classic djb CDB hash of key: starting at 5381, each
// byte multiplies the hash by 33 and is XORed in. The low 8 bits choose
// one of the 256 tables and the rest the starting slot within it.
func Hash(key []byte) uint32 {
	h := uint32(5381)
	for _, b := range key {
		h = h*33 ^ uint32(b)
	}
	return h
}

// hashString is Hash for a string key, without converting it.
func hashString(key string) uint32 {
	h := uint32(5381)
	for i := 0; i < len(key); i++ {
		h = h*33 ^ uint32(key[i])
	}
	return h
}

func u32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
