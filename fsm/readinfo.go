package fsm

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// ReadInfo is what every read of a paste sends besides its bytes, derived
// from the paste once, when it enters the store (a create applied, a
// snapshot restored), and shared by all its reads: a paste never changes.
// The slices are ready to be used as HTTP header values and must not be
// modified.
type ReadInfo struct {
	// Text reports whether the content is valid UTF-8.
	Text bool
	// ETag is the strong entity tag, `"ID-created"`: the id and the
	// creation time name one version of the bytes without hashing them.
	ETag []string
	// LastModified is the creation time as an HTTP date.
	LastModified []string
	// Size is the length of the content in decimal.
	Size []string
	// Expires is the expiry as an HTTP date; nil if the paste never
	// expires.
	Expires []string
}

// httpTime is net/http's TimeFormat.
const httpTime = "Mon, 02 Jan 2006 15:04:05 GMT"

// ReadInfo returns the paste's ReadInfo: the one Seal computed, or, for a
// paste never sealed (one built by hand), a fresh one.
func (p *Paste) ReadInfo() *ReadInfo {
	if p.info != nil {
		return p.info
	}
	return p.newReadInfo()
}

func (p *Paste) newReadInfo() *ReadInfo {
	ri := &ReadInfo{
		Text:         utf8.Valid(p.Content),
		ETag:         []string{`"` + p.ID + "-" + strconv.FormatInt(p.CreatedAt, 36) + `"`},
		LastModified: []string{time.Unix(0, p.CreatedAt).UTC().Format(httpTime)},
		Size:         []string{strconv.Itoa(len(p.Content))},
	}
	if p.ExpiresAt != 0 {
		ri.Expires = []string{time.Unix(0, p.ExpiresAt).UTC().Format(httpTime)}
	}
	return ri
}

// Seal computes p's ReadInfo once, before p is published to readers; the
// store seals every paste it takes in. p must not change afterwards.
func (p *Paste) Seal() { p.info = p.newReadInfo() }
