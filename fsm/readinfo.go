package fsm

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ReadInfo is what every read of a paste sends besides its bytes, derived
// from the paste once, when it enters the store (a create applied, a
// snapshot restored), and shared by all its reads: a paste never changes.
// The methods return slices ready to be used as HTTP header values, which
// must not be modified; they point into the ReadInfo, so they allocate
// nothing.
type ReadInfo struct {
	// Text reports whether the content is valid UTF-8.
	Text bool
	// hv holds the header values: the ETag, Last-Modified, Content-Length
	// and Expires ("" if the paste never expires), each a slice of one
	// string that Seal allocated for all of them.
	hv [4]string
}

// The indexes of ReadInfo.hv.
const (
	hvETag = iota
	hvLastModified
	hvSize
	hvExpires
)

// ETag is the strong entity tag, `"ID-created"`: the id and the creation
// time name one version of the bytes without hashing them.
func (ri *ReadInfo) ETag() []string { return ri.hv[hvETag : hvETag+1 : hvETag+1] }

// LastModified is the creation time as an HTTP date.
func (ri *ReadInfo) LastModified() []string {
	return ri.hv[hvLastModified : hvLastModified+1 : hvLastModified+1]
}

// Size is the length of the content in decimal.
func (ri *ReadInfo) Size() []string { return ri.hv[hvSize : hvSize+1 : hvSize+1] }

// Expires is the expiry as an HTTP date; nil if the paste never expires.
func (ri *ReadInfo) Expires() []string {
	if ri.hv[hvExpires] == "" {
		return nil
	}
	return ri.hv[hvExpires : hvExpires+1 : hvExpires+1]
}

// httpTime is net/http's TimeFormat.
const httpTime = "Mon, 02 Jan 2006 15:04:05 GMT"

// ReadInfo returns the paste's ReadInfo: the one Seal computed, or, for a
// paste never sealed (one built by hand), a fresh one.
func (p *Paste) ReadInfo() *ReadInfo {
	if p.info.hv[hvETag] != "" {
		return &p.info
	}
	c := *p
	c.Seal()
	return &c.info
}

// Seal computes p's ReadInfo once, before p is published to readers; the
// store seals every paste it takes in. p must not change afterwards.
//
// The store holds every paste in memory, so Seal also packs the paste's
// short strings (id, request id, title, language) and the header values
// into one allocation: one string that they all slice, rather than a
// dozen small objects per paste.
func (p *Paste) Seal() {
	var created, modified, size, expires [40]byte
	etagTail := strconv.AppendInt(created[:0], p.CreatedAt, 36)
	lastMod := httpDate(modified[:0], p.CreatedAt)
	length := strconv.AppendInt(size[:0], int64(len(p.Content)), 10)
	var exp []byte
	if p.ExpiresAt != 0 {
		exp = httpDate(expires[:0], p.ExpiresAt)
	}
	var b strings.Builder
	b.Grow(len(p.ID) + len(etagTail) + 3 + len(lastMod) + len(length) + len(exp) +
		len(p.RequestID) + len(p.Title) + len(p.Lang))
	// Every field is a slice of the builder's one buffer, which Grow made
	// large enough: later writes append to it and never move it.
	start := 0
	cut := func() string {
		s := b.String()[start:]
		start = b.Len()
		return s
	}
	b.WriteByte('"')
	b.WriteString(p.ID)
	b.WriteByte('-')
	b.Write(etagTail)
	b.WriteByte('"')
	p.info = ReadInfo{Text: utf8.Valid(p.Content)}
	p.info.hv[hvETag] = cut()
	p.ID = p.info.hv[hvETag][1 : 1+len(p.ID)]
	b.Write(lastMod)
	p.info.hv[hvLastModified] = cut()
	b.Write(length)
	p.info.hv[hvSize] = cut()
	b.Write(exp)
	p.info.hv[hvExpires] = cut()
	b.WriteString(p.RequestID)
	p.RequestID = cut()
	b.WriteString(p.Title)
	p.Title = cut()
	b.WriteString(p.Lang)
	p.Lang = cut()
}

// httpDate appends the Unix nanoseconds t as an HTTP date to b.
func httpDate(b []byte, t int64) []byte {
	return time.Unix(0, t).UTC().AppendFormat(b, httpTime)
}
