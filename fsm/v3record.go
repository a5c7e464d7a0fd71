package fsm

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// A snapshot of version 3 holds each paste as the record the store kept
// in memory before segments: a header of created, expires, flags and
// padding, the id's length, and the lengths of nine fields, then the
// fields: the ETag (the id in quotes with a tail), three HTTP header
// values, the request id, title, language, token hash and content. Only
// migration reads them.
const (
	v3Fields      = 9
	v3HeaderBytes = 24 + 4*v3Fields
)

// The fields of a version 3 record that a Paste keeps.
const (
	v3ETag      = 0
	v3RequestID = 4
	v3Title     = 5
	v3Lang      = 6
	v3TokenHash = 7
	v3Content   = 8
)

// readV3Record returns the paste of a version 3 record, in a Paste whose
// fields are copies.
func readV3Record(rec []byte) (*Paste, error) {
	le := binary.LittleEndian
	var f [v3Fields][]byte
	at := v3HeaderBytes
	for i := range f {
		n := int(le.Uint32(rec[24+4*i:]))
		if n > len(rec)-at {
			return nil, fmt.Errorf("field %d of %d bytes overruns the record of %d", i, n, len(rec))
		}
		f[i] = rec[at : at+n]
		at += n
	}
	if at != len(rec) {
		return nil, fmt.Errorf("fields of %d bytes in a record of %d", at, len(rec))
	}
	etag, idLen := f[v3ETag], int(le.Uint32(rec[20:]))
	if idLen == 0 || len(etag) < idLen+3 || etag[0] != '"' || etag[1+idLen] != '-' {
		return nil, fmt.Errorf("ETag %.80q does not hold an id of %d bytes", etag, idLen)
	}
	flags := rec[16]
	p := &Paste{
		ID:        string(etag[1 : 1+idLen]),
		RequestID: string(f[v3RequestID]),
		Title:     string(f[v3Title]),
		Lang:      string(f[v3Lang]),
		TokenHash: append([]byte(nil), f[v3TokenHash]...),
		Content:   append([]byte(nil), f[v3Content]...),
		CreatedAt: int64(le.Uint64(rec[0:])),
		ExpiresAt: int64(le.Uint64(rec[8:])),
		Burn:      flags&1 != 0,
		Encrypted: flags&2 != 0,
	}
	p.Text = utf8.Valid(p.Content)
	return p, nil
}
